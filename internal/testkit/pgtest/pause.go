//go:build linux

package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Pause stops every process of a local server, the postmaster first and
// then each of its children (SIGSTOP), as a hung host would: connections
// stay open, and nothing answers until Resume. The server's children are
// session leaders of their own, so that a process group would not reach
// them.
func (s *Server) Pause() error { return s.signalAll(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() error { return s.signalAll(syscall.SIGCONT) }

func (s *Server) signalAll(sig syscall.Signal) error {
	pm, err := s.PostmasterPID()
	if err != nil {
		return fmt.Errorf("pgtest: only a running local server can be paused: %w", err)
	}
	if err := syscall.Kill(pm, sig); err != nil {
		return err
	}
	for _, pid := range children(pm) {
		_ = syscall.Kill(pid, sig) // a child may have exited meanwhile
	}
	return nil
}

// children returns the processes whose parent is pid, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out = append(out, child)
		}
	}
	return out
}
