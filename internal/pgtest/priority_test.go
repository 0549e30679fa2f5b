package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// niceOf reads the nice value of a process or thread from its stat file
// under /proc (the 19th field).
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // from the 3rd field on
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("%s: nice %q: %v", stat, f[16], err)
	}
	return n
}

// threadNices returns the nice value of every thread of this process.
func threadNices(t *testing.T) map[string]int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil || len(stats) == 0 {
		t.Fatalf("no threads under /proc/self/task: %v", err)
	}
	m := map[string]int{}
	for _, s := range stats {
		if _, err := os.Stat(s); err == nil { // a thread may exit meanwhile
			m[s] = niceOf(t, s)
		}
	}
	return m
}

// TestStartFavoured: a server and what it forks start at serverNice when
// this process may raise a priority (as root), else at the process's own;
// no thread of this process keeps the raised priority.
func TestStartFavoured(t *testing.T) {
	own := niceOf(t, "/proc/self/stat")
	want := own
	if os.Geteuid() == 0 && own > serverNice {
		want = serverNice
	}
	before := threadNices(t)

	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	// The shell forks a sleep, writes its pid, and waits for it.
	cmd := exec.Command("/bin/sh", "-c", `sleep 60 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`, "sh", ready)
	if err := startFavoured(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var grandchild string
	for deadline := time.Now().Add(time.Minute); ; {
		b, err := os.ReadFile(ready)
		if err == nil {
			grandchild = strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell did not start its child within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(grandchild); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})

	if got := niceOf(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/stat"); got != want {
		t.Errorf("the started process runs at nice %d; want %d (this process: %d, euid %d)", got, want, own, os.Geteuid())
	}
	if got := niceOf(t, "/proc/"+grandchild+"/stat"); got != want {
		t.Errorf("the process it forked runs at nice %d; want %d", got, want)
	}
	for stat, n := range threadNices(t) {
		if was, ok := before[stat]; ok && n != was {
			t.Errorf("thread %s of this process is at nice %d after the start; it was at %d", stat, n, was)
		}
		if _, ok := before[stat]; !ok && n != own {
			t.Errorf("new thread %s of this process is at nice %d; the process is at %d", stat, n, own)
		}
	}
}
