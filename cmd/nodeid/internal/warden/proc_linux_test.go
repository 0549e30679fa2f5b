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

// TestDescendants: the descendants of a parent, those below a child of the
// parent started before since left out. PIDs are above the kernel's maximum,
// so that nothing is read from /proc for them.
func TestDescendants(t *testing.T) {
	const parent = 5_000_000
	table := processTable{
		parent:          {ppid: 1, state: 'S', threads: 1, start: 1},
		parent + 1:      {ppid: parent, state: 'S', threads: 1, start: 10}, // the warden
		parent + 2:      {ppid: parent + 1, state: 'R', threads: 1, start: 11},
		parent + 3:      {ppid: parent + 2, state: 'Z', threads: 1, start: 12},
		parent + 4:      {ppid: parent, state: 'S', threads: 1, start: 10}, // an adopted orphan
		parent + 5:      {ppid: parent, state: 'S', threads: 1, start: 2},  // started before: not the command's
		parent + 6:      {ppid: parent + 5, state: 'S', threads: 1, start: 20},
		parent + 7:      {ppid: 1, state: 'S', threads: 1, start: 20},
		parent + 8:      {ppid: parent + 9, state: 'S', threads: 1, start: 20}, // its parent is gone, and so is it
		parent + 10_000: {ppid: parent + 7, state: 'S', threads: 1, start: 20},
	}
	pids, sure := table.descendants(parent, 10)
	slices.Sort(pids)
	if want := []int{parent + 1, parent + 2, parent + 3, parent + 4}; !slices.Equal(pids, want) || !sure {
		t.Errorf("descendants since 10: %v (sure %v), want %v", pids, sure, want)
	}
	pids, _ = table.descendants(parent, 0)
	if len(pids) != 6 {
		t.Errorf("descendants since 0: %v, want 6", pids)
	}
}
