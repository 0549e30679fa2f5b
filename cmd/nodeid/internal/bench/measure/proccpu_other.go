//go:build !linux

package measure

import (
	"errors"
	"time"
)

// pidCPU is not implemented outside Linux: another process's CPU time is
// read from /proc.
func pidCPU(int) (time.Duration, error) {
	return 0, errors.New("another process's CPU time is read only on Linux")
}
