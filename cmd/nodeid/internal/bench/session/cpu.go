package session

import (
	"os"
	"time"
)

// ChildCPU returns the CPU time a finished child process used.
func ChildCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}
