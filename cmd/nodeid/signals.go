package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// interruptContext returns a context cancelled on SIGINT or SIGTERM. Until
// its cancel function is called, those signals no longer end the process.
func interruptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// selfCommand returns a command running this program's executable with
// args.
func selfCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, exe, args...), nil
}
