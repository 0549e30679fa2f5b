//go:build !unix

package main

import "syscall"

// sysProcAttr adds nothing where there are no process groups: the
// benchmark needs POSIX processes anyway (pgserver.StartLocal).
func sysProcAttr() *syscall.SysProcAttr { return nil }
