package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times:
// 100 on every architecture Go runs on.
const clockTick = 10 * time.Millisecond

// PidCPU returns the user and system CPU time process pid has used, from
// /proc/<pid>/stat, in steps of clockTick.
func PidCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// counted start after its closing one, at the state (field 3).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err := strconv.ParseInt(f[11], 10, 64) // field 14
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(f[12], 10, 64) // field 15
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}
