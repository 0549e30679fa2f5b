//go:build !linux

package session

import (
	"errors"
	"time"
)

// PidCPU is not implemented outside Linux: another process's CPU time is
// read from /proc.
func PidCPU(int) (time.Duration, error) {
	return 0, errors.New("another process's CPU time is read only on Linux")
}
