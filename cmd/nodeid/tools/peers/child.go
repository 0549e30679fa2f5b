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
)

// child is a server program run as a child process in a temporary
// directory of its own, which holds its data and its log.
type child struct {
	name   string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
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
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args(dir)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// waitReady polls ready until it returns nil, the process exits or a
// minute passes, and returns why it gave up, with the end of the log.
func (c *child) waitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := testkit.Wait(ctx, func() error {
		select {
		case <-c.exited:
			return testkit.Stop(fmt.Errorf("%s exited during start-up (%v)", c.name, c.cmd.ProcessState))
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
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	return os.RemoveAll(c.dir)
}

// logTail returns the last 2,000 bytes of the log.
func (c *child) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, c.name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
