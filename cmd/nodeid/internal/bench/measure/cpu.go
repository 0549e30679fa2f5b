package measure

import (
	"os"
	"time"
)

// childCPU returns the CPU time a finished child process used.
func childCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}
