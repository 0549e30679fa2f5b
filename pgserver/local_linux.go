package pgserver

import "syscall"

// setDeathSignal has the kernel kill a server's process when the process
// that started it dies, so that a killed parent leaves no server behind.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
