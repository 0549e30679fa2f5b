//go:build unix

package serve

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockSocketPath takes the lock of the Unix socket path addr: an exclusive
// flock on addr + ".lock", created if missing and kept (removing it would
// let a second serve lock a new file while the first holds the old). The
// kernel releases it when the process ends, however it ends. It fails at
// once if another serve holds it.
func lockSocketPath(addr string) (io.Closer, error) {
	name := addr + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot lock the socket's path: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another serve holds %s: it serves on the socket, or is starting to", name)
		}
		return nil, fmt.Errorf("cannot lock %s: %w", name, err)
	}
	return f, nil
}
