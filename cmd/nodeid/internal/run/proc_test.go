package run

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStat is what /proc/PID/stat says of a process, as the tests need it.
type procStat struct {
	ppid    int
	state   byte
	threads int
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
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat %q: no command name", pid, b)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 18 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat %q: too few fields", pid, b)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, err
	}
	threads, err := strconv.Atoi(string(f[17]))
	if err != nil {
		return procStat{}, err
	}
	return procStat{ppid: ppid, state: f[0][0], threads: threads}, nil
}

// readProcessTable reads every process of /proc that can be read.
func readProcessTable() (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	t := map[int]procStat{}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, err := readProc(pid); err == nil {
				t[pid] = p
			}
		}
	}
	return t, nil
}
