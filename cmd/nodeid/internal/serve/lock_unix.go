//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package serve

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// lockSocketPath takes the lock of the Unix socket path addr: an exclusive
// flock on addr + ".lock", created if missing and kept (removing it would
// let a second serve lock a new file while the first holds the old). The
// kernel releases it when the process ends, however it ends. It fails at
// once if another serve holds it.
//
// The file is opened read-only (flock needs no write access) and created
// readable by every user (0644, whatever the umask), so that a lock file
// left by a serve run as another user (the root user, by hand) does not
// keep the service's own user from serving on the path. Built where
// syscall.Flock is; lock_other.go takes no lock elsewhere.
func lockSocketPath(addr string) (io.Closer, error) {
	name := addr + ".lock"
	f, err := openLockFile(name)
	if err != nil {
		return nil, err
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

// openLockFile opens the lock file name read-only, creating it 0644 if it
// is missing; an error names the file and, if it exists, its owner and
// mode.
func openLockFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_ = f.Chmod(0o644) // the umask may have taken the others' read access
		return f, nil
	}
	if errors.Is(err, fs.ErrExist) {
		if f, err = os.Open(name); err == nil {
			return f, nil
		}
	}
	fi, serr := os.Stat(name)
	if serr != nil {
		return nil, fmt.Errorf("cannot create the socket's lock file %s: %w", name, err)
	}
	return nil, fmt.Errorf("cannot open the socket's lock file %s, owned by %s with mode %s: %w; remove it, or make it readable by this user (serve only reads it)",
		name, fileOwner(fi), fi.Mode().Perm(), err)
}

// fileOwner names the owner of the file fi: "user (uid N)", or "uid N".
func fileOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "an unknown user"
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return u.Username + " (uid " + uid + ")"
	}
	return "uid " + uid
}
