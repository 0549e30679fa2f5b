//go:build linux

package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/proc"
)

// child is a long-running program of a Cluster (etcd, or a Patroni node),
// its output appended to a log file.
type child = proc.Child

// startChild starts bin with args in dir, its output going to log, with
// the given process attributes and environment.
func startChild(bin string, args []string, dir, log string, attr *syscall.SysProcAttr, env []string) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = attr
	cmd.Dir = dir
	cmd.Env = env
	return proc.Start(cmd, log)
}

// tail returns the end of the file at path, for an error message.
func tail(path string) string { return proc.Tail(path, 3000) }

// waitFor calls check until it succeeds, ctx ends or c exits, and returns
// check's last error otherwise.
func waitFor(ctx context.Context, c *child, what string, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v: %w", what, err, ctx.Err())
		case <-c.Exited:
			return fmt.Errorf("%s: it exited", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// procStatus returns the fields of /proc/pid/status named in names.
func procStatus(pid int, names ...string) (map[string]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				got[n] = strings.TrimSpace(value)
			}
		}
	}
	return got, sc.Err()
}

// pids returns the process IDs this process sees in /proc.
func pids() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var ps []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			ps = append(ps, pid)
		}
	}
	return ps, nil
}

// childOf returns the pid of a child of process parent.
func childOf(parent int) (int, error) {
	ps, err := pids()
	if err != nil {
		return 0, err
	}
	want := strconv.Itoa(parent)
	for _, pid := range ps {
		if st, err := procStatus(pid, "PPid"); err == nil && st["PPid"] == want {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("process %d has no child", parent)
}

// hostPID returns the pid, as this process sees it, of the process that
// is nsPID in the pid namespace of process member.
func hostPID(member, nsPID int) (int, error) {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", member))
	if err != nil {
		return 0, err
	}
	ps, err := pids()
	if err != nil {
		return 0, err
	}
	want := strconv.Itoa(nsPID)
	for _, pid := range ps {
		if other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || other != ns {
			continue
		}
		st, err := procStatus(pid, "NSpid")
		if err != nil {
			continue
		}
		// NSpid lists the pid in each namespace, this one's first, the
		// innermost last.
		if f := strings.Fields(st["NSpid"]); len(f) > 0 && f[len(f)-1] == want {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process %d in the pid namespace of process %d", nsPID, member)
}
