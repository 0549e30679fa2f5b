//go:build unix

package run

import (
	"os"
	"os/signal"
	"syscall"
)

// signalsForCommand returns the signals that, while the command of "nodeid
// run" runs, are for the supervisor to pass on, and what stops their
// delivery.
func signalsForCommand() (<-chan os.Signal, func()) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	return sigs, func() { signal.Stop(sigs) }
}
