//go:build unix && !linux

package demo

import "syscall"

// workerProcAttr puts a demo worker in a process group of its own (Ctrl-C
// in the terminal is for the demo, which stops the workers itself). There
// is no parent-death signal here: a worker whose demo was killed dies at
// its next report, on the broken pipe of its stdout (SIGPIPE).
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
