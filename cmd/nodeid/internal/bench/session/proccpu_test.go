//go:build linux

package session

import (
	"os"
	"testing"
	"time"
)

// TestPidCPU reads this process's CPU time after it spent some.
func TestPidCPU(t *testing.T) {
	t.Parallel()
	end := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(end) {
	}
	d, err := PidCPU(os.Getpid())
	if err != nil || d <= 0 {
		t.Fatalf("pidCPU = %v, %v", d, err)
	}
	if _, err := PidCPU(-1); err == nil {
		t.Error("pidCPU(-1) read something")
	}
}
