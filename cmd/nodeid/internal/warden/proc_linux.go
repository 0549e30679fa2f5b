package warden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes the calling process a child subreaper: orphaned
// descendants are reparented to it rather than to PID 1, so that they stay
// in its tree of processes and it can find and kill them.
func becomeSubreaper() error {
	return os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	ppid    int
	pgrp    int // its process group
	state   byte
	threads int
	start   uint64 // clock ticks after boot
}

// alive reports whether the process can still run code: not a zombie, or
// a zombie thread-group leader whose other threads still run.
func (p procStat) alive() bool {
	return (p.state != 'Z' && p.state != 'X' && p.state != 'x') || p.threads > 1
}

// readProc reads /proc/PID/stat.
func readProc(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses the fields of /proc/PID/stat after the command name,
// which is in parentheses and may itself contain spaces and parentheses.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc stat %q: no command name", b)
	}
	f := bytes.Fields(b[i+1:])
	// state(3) ppid(4) pgrp(5) ... num_threads(20) itrealvalue(21) starttime(22)
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc stat %q: too few fields", b)
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err4 := strconv.Atoi(string(f[2]))
	threads, err2 := strconv.Atoi(string(f[17]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return procStat{}, fmt.Errorf("/proc stat %q: %w", b, err)
	}
	return procStat{ppid: ppid, pgrp: pgrp, state: f[0][0], threads: threads, start: start}, nil
}

// processTable is a snapshot of /proc. It is read one file at a time, so it
// is not atomic: see descendants.
type processTable map[int]procStat

func readProcessTable() (processTable, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	t := make(processTable, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, err := readProc(pid); err == nil {
			t[pid] = p
		} // else it exited meanwhile
	}
	return t, nil
}

// get returns the process pid, reading it if the snapshot lacks it.
func (t processTable) get(pid int) (procStat, bool) {
	if p, ok := t[pid]; ok {
		return p, true
	}
	p, err := readProc(pid)
	if err != nil {
		return procStat{}, false
	}
	t[pid] = p
	return p, true
}

// descendants returns the descendants of parent (parent excluded) that
// descend from a child of parent started at or after since (clock ticks
// after boot; 0 for all). The snapshot is not atomic: when a process's parent
// has gone, the kernel has already given it a new parent, which is read
// afresh. sure is false if a line of parents still could not be followed;
// the caller then reads the table again.
func (t processTable) descendants(parent int, since uint64) (pids []int, sure bool) {
	const (
		inside = iota + 1
		outside
		unsure
	)
	memo := make(map[int]int, len(t))
	var under func(pid, depth int) int
	under = func(pid, depth int) int {
		if r, ok := memo[pid]; ok {
			return r
		}
		r := unsure
		p, ok := t[pid]
		for try := 0; ok && try < 3 && depth < 4096; try++ {
			if p.ppid == parent {
				r = outside
				if p.start >= since {
					r = inside
				}
				break
			}
			if p.ppid <= 1 {
				r = outside
				break
			}
			if _, ok := t.get(p.ppid); ok {
				r = under(p.ppid, depth+1)
				break
			}
			// The parent is gone (reaped): read the new one.
			fresh, err := readProc(pid)
			if err != nil {
				r = outside // gone too
				break
			}
			p = fresh
			t[pid] = fresh
		}
		memo[pid] = r
		return r
	}
	pids0 := make([]int, 0, len(t))
	for pid := range t {
		pids0 = append(pids0, pid)
	}
	sure = true
	for _, pid := range pids0 {
		if pid == parent {
			continue
		}
		switch under(pid, 0) {
		case inside:
			pids = append(pids, pid)
		case unsure:
			sure = false
		}
	}
	return pids, sure
}

// treeKiller kills the descendants of parent, round after round, until it
// finds none alive.
type treeKiller struct {
	parent int
	since  uint64
	group  int // if not 0, only the processes of this process group
	// failed reports a process that could not be killed, once per PID.
	failed   func(pid int, err error)
	reported map[int]bool
}

// round stops every live descendant of parent, then sends each SIGKILL:
// stopped first, none of them runs on to see the others die (a shell
// reporting its child killed) or to fork. It reports whether none was
// alive (and the table could be read with certainty), and the PIDs seen
// (alive or zombie), for the caller to reap its own.
func (k *treeKiller) round() (none bool, seen []int, err error) {
	t, err := readProcessTable()
	if err != nil {
		return false, nil, err
	}
	pids, sure := t.descendants(k.parent, k.since)
	if k.group != 0 {
		pids = slices.DeleteFunc(pids, func(pid int) bool { return t[pid].pgrp != k.group })
	}
	none = sure
	var alive []int
	for _, pid := range pids {
		if t[pid].alive() {
			alive = append(alive, pid)
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
	}
	for _, pid := range alive {
		none = false
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) && k.failed != nil {
			if k.reported == nil {
				k.reported = make(map[int]bool)
			}
			if !k.reported[pid] {
				k.reported[pid] = true
				k.failed(pid, err)
			}
		}
	}
	return none, pids, nil
}
