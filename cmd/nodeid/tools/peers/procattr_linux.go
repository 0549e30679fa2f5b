package main

import "syscall"

// sysProcAttr puts a server in a process group of its own, and has the
// kernel kill it when this program dies, so that not even a killed
// benchmark leaves a server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
