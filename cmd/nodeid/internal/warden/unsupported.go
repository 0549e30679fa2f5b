//go:build !linux

package warden

import (
	"io"
	"syscall"
	"time"
)

// Supported returns ErrUnsupported: the warden needs Linux.
func Supported() error { return ErrUnsupported }

// Supervisor is the supervisor's side of a command under a warden; there
// is none without Linux.
type Supervisor struct{}

// Start returns ErrUnsupported.
func Start(Config) (*Supervisor, error) { return nil, ErrUnsupported }

// Extend does nothing.
func (*Supervisor) Extend(time.Time, int64) {}

// Signal does nothing.
func (*Supervisor) Signal(syscall.Signal) {}

// Terminate does nothing.
func (*Supervisor) Terminate(string) {}

// Done returns a closed channel.
func (*Supervisor) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Wait returns an Exit whose StartErr is ErrUnsupported.
func (*Supervisor) Wait() Exit { return Exit{StartErr: ErrUnsupported} }

// Serve returns ErrUnsupported.
func Serve(io.Writer, *WallClock) error { return ErrUnsupported }

// StepWatch watches the wall clock for steps; there is none without Linux.
type StepWatch struct{}

// NewStepWatch returns ErrUnsupported.
func NewStepWatch(*WallClock) (*StepWatch, error) { return nil, ErrUnsupported }

// Stepped reports false.
func (*StepWatch) Stepped() bool { return false }

// Close does nothing.
func (*StepWatch) Close() {}

// BootTime returns 0: there is no CLOCK_BOOTTIME.
func BootTime(time.Time) int64 { return 0 }
