package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/proc"
)

// child is a server program run as a child process in a temporary
// directory of its own, which holds its data and its log.
type child struct {
	*proc.Child
	name string
	dir  string
}

// startChild starts bin with args in a new temporary directory, its output
// going to a log file there. The process is in a process group of its own
// (a Ctrl-C in the terminal is for this program to handle) and, on Linux,
// is killed if this program dies. Stop it with stop.
func startChild(name, bin string, args func(dir string) []string) (*child, error) {
	dir, err := os.MkdirTemp("", "nodeid-peers-"+name+"-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args(dir)...)
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr()
	p, err := proc.Start(cmd, filepath.Join(dir, name+".log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &child{Child: p, name: name, dir: dir}, nil
}

// waitReady polls ready until it returns nil, the process exits or a
// minute passes, and returns why it gave up, with the end of the log.
func (c *child) waitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := testkit.Wait(ctx, func() error {
		select {
		case <-c.Exited:
			return testkit.Stop(fmt.Errorf("%s exited during start-up (%v)", c.name, c.Cmd.ProcessState))
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		return ready(pctx)
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w; its log ends:\n%s", c.name, err, c.logTail())
	}
	return nil
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s), waits for it
// and removes its directory.
func (c *child) stop() error {
	c.Stop(syscall.SIGTERM, 10*time.Second)
	return os.RemoveAll(c.dir)
}

// logTail returns the last 2,000 bytes of the log.
func (c *child) logTail() string { return proc.Tail(c.Log, 2000) }
