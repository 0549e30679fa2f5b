//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts a server in a process group of its own: a Ctrl-C in
// the terminal is for this program, which stops the server itself.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
