package main

import (
	"errors"
	"os"
	"syscall"
)

// demoSupported refuses the demo: its workers are POSIX processes that it
// kills and stops with signals, and its throwaway servers too.
func demoSupported() error {
	return errors.New("nodeid demo needs POSIX processes and signals (Linux or macOS); on Windows, run it in WSL")
}

// workerProcAttr is not used: see demoSupported.
func workerProcAttr() *syscall.SysProcAttr { return nil }

// signalsForCommand is not used: "nodeid run" refuses to start here (see
// internal/warden).
func signalsForCommand() (<-chan os.Signal, func()) { return nil, func() {} }
