//go:build unix

package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrNoPgBouncer is returned by FindPgBouncer and StartPgBouncer when no
// pgbouncer program is installed.
var ErrNoPgBouncer = errors.New("no pgbouncer on PATH or in /usr/sbin (apt-get install pgbouncer)")

// Bouncer is a throwaway PgBouncer in transaction pooling mode in front of
// one server, trusting every client on 127.0.0.1.
type Bouncer struct {
	port   int
	root   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// FindPgBouncer returns the pgbouncer program from PATH, or Debian's
// /usr/sbin/pgbouncer (not on an ordinary user's PATH), or ErrNoPgBouncer.
func FindPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNoPgBouncer
}

// StartPgBouncer starts a PgBouncer in transaction pooling mode on a free
// port of 127.0.0.1 that forwards every database to the server at addr
// (host:port) as the user postgres, with at most poolSize server
// connections per database and user (at least 1), and waits until it
// listens. Clients authenticate with nothing (trust): it is for a
// throwaway server of this package, whose postgres user needs no
// password. Run as the root user, it runs as the postgres user, as the
// server does.
// On Linux it dies with the process that started it.
func StartPgBouncer(ctx context.Context, addr string, poolSize int) (*Bouncer, error) {
	bin, err := FindPgBouncer()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: server address %q: %w", addr, err)
	}
	cred, err := RunAs()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "nodeid-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &Bouncer{root: root}
	if b.port, err = FreePort(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 2000
default_pool_size = %d
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, host, port, b.port, b.path("users.txt"), max(1, poolSize), b.path("pgbouncer.log"), b.path("pgbouncer.pid"))
	for name, content := range map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(b.path(name), []byte(content), 0o644); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	if cred != nil {
		if err := os.Chown(root, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	cmd := exec.Command(bin, b.path("pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	cmd.Dir = root
	if err := cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(b.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-b.exited:
			log, _ := os.ReadFile(b.path("pgbouncer.log"))
			os.RemoveAll(root)
			return nil, fmt.Errorf("pgbouncer exited during start-up:\n%s", log)
		case <-ctx.Done():
			b.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Close()
			return nil, errors.New("pgbouncer did not listen within 30s")
		}
	}
}

func (b *Bouncer) path(name string) string { return filepath.Join(b.root, name) }

// Addr returns host:port of the pooler.
func (b *Bouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// Port returns the pooler's port.
func (b *Bouncer) Port() int { return b.port }

// PID returns the pooler's process ID, for reading its CPU time.
func (b *Bouncer) PID() int { return b.cmd.Process.Pid }

// DSN returns a DSN for database db through the pooler. params are added to
// the URL's query, e.g. "default_query_exec_mode=exec".
func (b *Bouncer) DSN(db string, params ...string) string {
	dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", b.Addr(), db)
	for _, p := range params {
		dsn += "&" + p
	}
	return dsn
}

// Close stops the pooler (SIGINT, then SIGKILL after 10s) and removes its
// files.
func (b *Bouncer) Close() error {
	select {
	case <-b.exited:
	default:
		_ = b.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	return os.RemoveAll(b.root)
}
