package demo

import "syscall"

// workerProcAttr puts a demo worker in a process group of its own (Ctrl-C
// in the terminal is for the demo, which stops the workers itself), and
// has the kernel kill it if the demo dies.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
