//go:build !unix

package demo

import (
	"errors"
	"syscall"
)

// demoSupported refuses the demo: its workers are POSIX processes that it
// kills and stops with signals, and its throwaway servers too.
func demoSupported() error {
	return errors.New("nodeid demo needs POSIX processes and signals (Linux or macOS); on Windows, run it in WSL")
}

// workerProcAttr is not used: see demoSupported.
func workerProcAttr() *syscall.SysProcAttr { return nil }

// unixLike says whether this system has POSIX processes and signals.
const unixLike = false
