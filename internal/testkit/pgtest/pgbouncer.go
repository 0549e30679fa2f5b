//go:build linux

package pgtest

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
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/proc"
	"github.com/nodeid/nodeid/pgserver"
)

// Bouncer is a PgBouncer in transaction pooling mode in front of a Server.
type Bouncer struct {
	port int
	root string
	proc *proc.Child
}

// findPgBouncer returns the pgbouncer binary from PATH or /usr/sbin.
func findPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("no pgbouncer on PATH or in /usr/sbin (apt-get install pgbouncer)")
}

// StartPgBouncer starts a PgBouncer in transaction pooling mode that
// forwards every database to s, authenticating nobody (trust).
func (s *Server) StartPgBouncer(ctx context.Context) (*Bouncer, error) {
	bin, err := findPgBouncer()
	if err != nil {
		return nil, err
	}
	cred, err := pgserver.RunAs()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "nodeid-pgbouncer-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	host, pgPort, _ := net.SplitHostPort(s.Addr())
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, host, pgPort, port, filepath.Join(root, "users.txt"), filepath.Join(root, "pgbouncer.log"), filepath.Join(root, "pgbouncer.pid"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
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
	cmd := exec.Command(bin, filepath.Join(root, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Dir = root
	p, err := proc.Start(cmd, "")
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	b := &Bouncer{port: port, root: root, proc: p}
	// Wait until it listens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-p.Exited:
			log, _ := os.ReadFile(filepath.Join(root, "pgbouncer.log"))
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

// Addr returns host:port of the pooler.
func (b *Bouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// DSN returns a DSN for database db through the pooler. params are added to
// the URL's query, e.g. "default_query_exec_mode=exec".
func (b *Bouncer) DSN(db string, params ...string) string {
	dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", b.Addr(), db)
	for _, p := range params {
		dsn += "&" + p
	}
	return dsn
}

// Close stops the pooler and removes its files.
func (b *Bouncer) Close() error {
	b.proc.Stop(syscall.SIGINT, 10*time.Second)
	return os.RemoveAll(b.root)
}

// NewPgBouncer starts a PgBouncer in front of s for the test, stopped when
// the test ends.
func (s *Server) NewPgBouncer(t testing.TB) *Bouncer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := s.StartPgBouncer(ctx)
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
