//go:build unix

package pgserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A new server's data directory is a copy of a template that initdb made
// once, kept in the user's cache directory, given a system identifier of its
// own: initdb costs about a second of CPU, a copy a twentieth of that. Two
// servers from one template are as distinct as two initdb runs, since the
// system identifier is what tells clusters apart (and what nodeid's
// protocol reads); pg_resetwal then writes the WAL under the new identifier.

// initArgs are initdb's arguments after -D.
var initArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"}

// initdb runs initdb on dir, which the server's user owns.
func (l *local) initdb(ctx context.Context, dir string) error {
	out, err := l.command(ctx, "initdb", append([]string{"-D", dir}, initArgs...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// init makes the data directory: a copy of the template when there is
// one; else initdb's, which then becomes the template if it can.
func (l *local) init(ctx context.Context) error {
	tmpl := l.templateDir()
	if tmpl != "" {
		if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err == nil {
			if err := copyTree(tmpl, l.data(), l.cred); err != nil {
				return fmt.Errorf("pgserver: copy the template %s: %w", tmpl, err)
			}
			return l.newIdentity(ctx)
		}
	}
	if err := l.initdb(ctx, l.data()); err != nil {
		return err
	}
	if tmpl != "" {
		_ = saveTemplate(l.data(), tmpl) // without one, the next server runs initdb too
	}
	return nil
}

// templateDir is where the template for l's binaries and user is kept,
// or "" when there can be none: the binaries lack pg_resetwal, or the user
// has no cache directory.
func (l *local) templateDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	key, err := l.templateKey()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "nodeid-pgserver", key)
}

// saveTemplate copies the data directory that initdb made, before its
// server first starts, to dir, as the caller's: a rename makes it the
// template whole or not at all, whichever process is first.
func saveTemplate(data, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(data, filepath.Join(tmp, "data"), nil); err != nil {
		return err
	}
	return os.Rename(filepath.Join(tmp, "data"), dir)
}

// templateKey names a template by what makes one: the initdb, postgres and
// pg_resetwal binaries (path, size and time), initdb's arguments and the
// user the server runs as.
func (l *local) templateKey() (string, error) {
	h := sha256.New()
	for _, name := range []string{"initdb", "postgres", "pg_resetwal"} {
		p := filepath.Join(l.bin, name)
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintln(h, initArgs)
	if l.cred != nil {
		fmt.Fprintln(h, l.cred.Uid, l.cred.Gid)
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// newIdentity gives the data directory a new random system identifier in
// global/pg_control, and has pg_resetwal write WAL that carries it.
func (l *local) newIdentity(ctx context.Context) error {
	path := filepath.Join(l.data(), "global", "pg_control")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	at, err := controlCRCOffset(b)
	if err != nil {
		return fmt.Errorf("pgserver: %s: %w", path, err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	// system_identifier is pg_control's first field, positive as a bigint
	// as initdb's are.
	binary.NativeEndian.PutUint64(b, binary.NativeEndian.Uint64(id[:])>>1)
	binary.NativeEndian.PutUint32(b[at:], crc32.Checksum(b[:at], castagnoli))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	if out, err := l.command(ctx, "pg_resetwal", "-D", l.data()).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_resetwal: %w\n%s", err, out)
	}
	return nil
}

// castagnoli is CRC-32C, pg_control's checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// controlCRCOffset returns where pg_control's CRC is: the first 4-byte
// aligned offset whose CRC-32C of the bytes before it is the word there,
// in the machine's byte order, as PostgreSQL writes it. The field is the
// control data's last, within its first 512 bytes in every version.
func controlCRCOffset(b []byte) (int, error) {
	for at := 8; at+4 <= min(len(b), 512); at += 4 {
		if crc32.Checksum(b[:at], castagnoli) == binary.NativeEndian.Uint32(b[at:]) {
			return at, nil
		}
	}
	return 0, errors.New("no valid CRC in the first 512 bytes")
}

// copyTree copies the directory src to dst, which must not exist, keeping
// modes, and gives every copy to cred's user when cred is not nil.
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(to, fi.Mode().Perm())
		case d.Type().IsRegular():
			err = copyFile(p, to, fi.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a file or a directory", p)
		}
		if err != nil || cred == nil {
			return err
		}
		return os.Lchown(to, int(cred.Uid), int(cred.Gid))
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
