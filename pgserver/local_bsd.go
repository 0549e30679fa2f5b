//go:build unix && !linux

package pgserver

import "syscall"

// setDeathSignal does nothing where the kernel has no parent-death signal
// (macOS, the BSDs): the server is stopped by Server.Close, and a parent
// killed with SIGKILL leaves it running until it is stopped by hand.
func setDeathSignal(*syscall.SysProcAttr) {}
