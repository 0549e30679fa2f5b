// Package proc runs the long-lived programs that the tests and the
// benchmarks start beside PostgreSQL (etcd, Patroni, PgBouncer, Redis):
// one started with its output appended to a log file, watched until it
// exits, and stopped by a signal with a grace period before it is killed.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Child is a started program.
type Child struct {
	Cmd    *exec.Cmd
	Log    string        // the path of its log file ("" if its output is the caller's)
	Exited chan struct{} // closed once it has exited
}

// Start starts cmd, with its standard output and error appended to the
// file at log unless log is "", and waits for it in a goroutine of its
// own, which closes Exited.
func Start(cmd *exec.Cmd, log string) (*Child, error) {
	if log != "" {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child has its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	c := &Child{Cmd: cmd, Log: log, Exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.Exited)
	}()
	return c, nil
}

// Stop sends sig to the program, waits up to grace for it to exit, then
// kills it, and returns once it has exited.
func (c *Child) Stop(sig os.Signal, grace time.Duration) {
	_ = c.Cmd.Process.Signal(sig)
	select {
	case <-c.Exited:
	case <-time.After(grace):
		c.Kill()
	}
}

// Kill kills the program and returns once it has exited.
func (c *Child) Kill() {
	_ = c.Cmd.Process.Kill()
	<-c.Exited
}

// Running reports whether the program has not exited yet.
func (c *Child) Running() bool {
	select {
	case <-c.Exited:
		return false
	default:
		return true
	}
}

// Tail returns the last n bytes of the file at path, for an error
// message: the error reading it if it cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
