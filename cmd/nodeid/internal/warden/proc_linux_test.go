package warden

import (
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process may choose.
	p, err := parseStat([]byte("4242 (a) b (c)) Z 17 4200 4200 0 -1 4194560 95 0 0 0 1 0 0 0 20 0 3 0 123456 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (procStat{ppid: 17, pgrp: 4200, state: 'Z', threads: 3, start: 123456}); p != want {
		t.Errorf("parsed %+v, want %+v", p, want)
	}
	if !p.alive() {
		t.Error("a zombie leader with live threads is not alive")
	}
	if p.threads = 1; p.alive() {
		t.Error("a zombie is alive")
	}
	for _, bad := range []string{"", "1 (x", "1 (x) R 0", "1 (x) RR 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "1 (x) R p 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) did not fail", bad)
		}
	}
	self, err := readProc(os.Getpid())
	if err != nil || self.ppid != os.Getppid() || self.pgrp != syscall.Getpgrp() || !self.alive() || self.start == 0 {
		t.Errorf("this process: %+v, %v", self, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("9 ()) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseStat(b) // an error, never a panic
	})
}

// TestDescendants: the processes under a root, those below a child of the
// root started before since left out. PIDs are above the kernel's maximum,
// so that nothing is read from /proc for them.
func TestDescendants(t *testing.T) {
	const root = 5_000_000
	table := processTable{
		root:          {ppid: 1, state: 'S', threads: 1, start: 1},
		root + 1:      {ppid: root, state: 'S', threads: 1, start: 10}, // the warden
		root + 2:      {ppid: root + 1, state: 'R', threads: 1, start: 11},
		root + 3:      {ppid: root + 2, state: 'Z', threads: 1, start: 12},
		root + 4:      {ppid: root, state: 'S', threads: 1, start: 10}, // an adopted orphan
		root + 5:      {ppid: root, state: 'S', threads: 1, start: 2},  // started before: not the command's
		root + 6:      {ppid: root + 5, state: 'S', threads: 1, start: 20},
		root + 7:      {ppid: 1, state: 'S', threads: 1, start: 20},
		root + 8:      {ppid: root + 9, state: 'S', threads: 1, start: 20}, // its parent is gone, and so is it
		root + 10_000: {ppid: root + 7, state: 'S', threads: 1, start: 20},
	}
	pids, sure := table.descendants(root, 10)
	slices.Sort(pids)
	if want := []int{root + 1, root + 2, root + 3, root + 4}; !slices.Equal(pids, want) || !sure {
		t.Errorf("descendants since 10: %v (sure %v), want %v", pids, sure, want)
	}
	pids, _ = table.descendants(root, 0)
	if len(pids) != 6 {
		t.Errorf("descendants since 0: %v, want 6", pids)
	}
}
