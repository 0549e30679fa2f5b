// Package pgtest runs a real PostgreSQL server for tests and for the
// `nodeid demo` command. Start picks, in order:
//
//  1. the server named by NODEID_TEST_DSN (it must allow CREATE DATABASE;
//     it cannot be stopped or restarted);
//  2. a Docker engine, through github.com/ory/dockertest/v3 (image
//     postgres:15);
//  3. local PostgreSQL binaries (initdb and postgres on PATH, or under
//     /usr/lib/postgresql/*/bin), in a temporary directory, run as the
//     postgres user when the caller is root.
//
// Docker and local servers can be stopped, started and restarted, and their
// backends terminated.
//
// For failover tests, from local programs only: Pair, a primary and an
// asynchronous streaming standby whose replication runs through a Proxy;
// Cluster, PostgreSQL nodes managed by Patroni on etcd.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// EnvDSN names an existing server to use instead of starting one.
const EnvDSN = "NODEID_TEST_DSN"

// ErrNotControllable is returned by Stop, Start and Restart on a server that
// pgtest did not start.
var ErrNotControllable = errors.New("pgtest: the server was not started by pgtest and cannot be stopped or restarted")

// StopMode is PostgreSQL's shutdown mode.
type StopMode string

// The shutdown modes of PostgreSQL.
const (
	Smart     StopMode = "smart"     // wait for clients to disconnect
	Fast      StopMode = "fast"      // roll back and disconnect clients
	Immediate StopMode = "immediate" // abort without a checkpoint, as a crash would
)

// Server is a PostgreSQL server.
type Server struct {
	kind    string // "dsn", "docker" or "local"
	baseDSN string // superuser DSN; its database is replaced per use
	host    string
	port    int
	ctl     controller // nil for "dsn"

	mu    sync.Mutex
	admin *sql.DB
	seq   int
}

// controller stops and starts a server pgtest runs.
type controller interface {
	stop(ctx context.Context, mode StopMode) error
	start(ctx context.Context) error
	close() error
	// exitedCh is closed when a started server exits (nil if unknown).
	exitedCh() <-chan struct{}
}

// Start returns a running server, picked as the package doc says. settings
// ("name=value") are passed to a server that pgtest starts.
func Start(ctx context.Context, settings ...string) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return external(ctx, dsn)
	}
	return StartOwn(ctx, settings...)
}

// StartOwn starts a server that pgtest controls: in Docker if an engine
// answers, else from local binaries.
func StartOwn(ctx context.Context, settings ...string) (*Server, error) {
	s, dockerErr := startDocker(ctx, settings)
	if s != nil {
		return s, nil
	}
	s, localErr := startLocal(ctx, settings)
	if s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("pgtest: no PostgreSQL available: set %s, or run a Docker engine (%v), or install the server binaries, e.g. apt-get install postgresql (%v)",
		EnvDSN, dockerErr, localErr)
}

func external(ctx context.Context, dsn string) (*Server, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %s: %w", EnvDSN, err)
	}
	s := &Server{kind: "dsn", baseDSN: dsn, host: cfg.Host, port: int(cfg.Port)}
	if err := s.ping(ctx); err != nil {
		return nil, fmt.Errorf("pgtest: %s: %w", EnvDSN, err)
	}
	return s, nil
}

func newServer(kind string, port int, ctl controller) *Server {
	return &Server{
		kind:    kind,
		baseDSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		host:    "127.0.0.1",
		port:    port,
		ctl:     ctl,
	}
}

// Kind says where the server came from: "dsn", "docker" or "local".
func (s *Server) Kind() string { return s.kind }

// Controllable reports whether Stop, Start and Restart work.
func (s *Server) Controllable() bool { return s.ctl != nil }

// Addr returns host:port of a server pgtest started, for a TCP proxy.
func (s *Server) Addr() string { return net.JoinHostPort(s.host, fmt.Sprint(s.port)) }

// DSN returns a superuser DSN for database db.
func (s *Server) DSN(db string) string { return WithDatabase(s.baseDSN, db) }

// WithDatabase returns dsn (URL or key=value form) with its database set to db.
func WithDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return dsn + " dbname=" + db
}

// withParam returns dsn (URL or key=value form) with the connection
// parameter key set to value.
func withParam(dsn, key, value string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

// WithAddr returns dsn (URL or key=value form) with its host and port
// replaced by addr, to go through a proxy.
func WithAddr(dsn, addr string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = addr
		return u.String()
	}
	host, port, _ := net.SplitHostPort(addr)
	return dsn + " host=" + host + " port=" + port
}

func (s *Server) adminDB() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		db, err := sql.Open("pgx", s.DSN(s.adminDatabase()))
		if err != nil {
			return nil, err
		}
		db.SetMaxIdleConns(1)
		s.admin = db
	}
	return s.admin, nil
}

func (s *Server) adminDatabase() string {
	if s.kind == "dsn" {
		if u, err := url.Parse(s.baseDSN); err == nil && len(u.Path) > 1 {
			return strings.TrimPrefix(u.Path, "/")
		}
	}
	return "postgres"
}

func (s *Server) ping(ctx context.Context) error {
	db, err := s.adminDB()
	if err != nil {
		return err
	}
	return db.PingContext(ctx)
}

// Exec runs a statement as the superuser on database db.
func (s *Server) Exec(ctx context.Context, db, query string, args ...any) error {
	conn, err := sql.Open("pgx", s.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, query, args...)
	return err
}

// CreateDatabase creates a new, empty database and returns its name.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.seq++
	name := fmt.Sprintf("nodeid_%d_%d", os.Getpid(), s.seq)
	s.mu.Unlock()
	db, err := s.adminDB()
	if err != nil {
		return "", err
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return name, nil
}

// DropDatabase drops database name, disconnecting its clients.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	db, err := s.adminDB()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// TerminateBackends terminates every backend connected to database db
// (all databases if db is empty) but the caller's, and returns how many.
func (s *Server) TerminateBackends(ctx context.Context, db string) (int, error) {
	admin, err := s.adminDB()
	if err != nil {
		return 0, err
	}
	var n int
	err = admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND ($1 = '' OR datname = $1)`, db).Scan(&n)
	return n, err
}

// Version returns the server's version string.
func (s *Server) Version(ctx context.Context) (string, error) {
	admin, err := s.adminDB()
	if err != nil {
		return "", err
	}
	var v string
	err = admin.QueryRowContext(ctx, `SELECT version()`).Scan(&v)
	return v, err
}

// Stop shuts the server down in the given mode.
func (s *Server) Stop(ctx context.Context, mode StopMode) error {
	if s.ctl == nil {
		return ErrNotControllable
	}
	s.dropAdmin()
	return s.ctl.stop(ctx, mode)
}

// Start starts a stopped server and waits until it accepts connections.
func (s *Server) Start(ctx context.Context) error {
	if s.ctl == nil {
		return ErrNotControllable
	}
	if err := s.ctl.start(ctx); err != nil {
		return err
	}
	return s.waitReady(ctx, s.ctl.exitedCh())
}

// Restart stops the server in the given mode and starts it again.
func (s *Server) Restart(ctx context.Context, mode StopMode) error {
	if err := s.Stop(ctx, mode); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Close stops a server pgtest started and removes its files.
func (s *Server) Close() error {
	s.dropAdmin()
	if s.ctl == nil {
		return nil
	}
	return s.ctl.close()
}

func (s *Server) dropAdmin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
}

// waitReady polls until the server accepts connections, ctx ends, or exited
// (if not nil) is closed.
func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		s.dropAdmin()
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: server did not accept connections: %w", err)
		case <-exited:
			return errors.New("pgtest: server exited during start-up")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// is drawn at random from below the kernel's ephemeral range: a port of
// that range can be given to a client's outgoing connection between this
// call and the server's bind (a loaded test run saw PostgreSQL fail with
// "Address already in use" that way).
func FreePort() (int, error) {
	lo, hi := listenPorts()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use: draw again
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("pgtest: no free port on 127.0.0.1 in %d-%d after 200 draws", lo, hi-1)
}

// listenPorts is the range [lo, hi) FreePort draws from: from 10000 up to
// the start of Linux's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), or up to 32768 (Linux's
// default, below IANA's 49152) where that cannot be read or starts too low
// to leave a thousand ports.
func listenPorts() (lo, hi int) {
	lo, hi = 10000, 32768 // below both Linux's default (32768) and IANA's ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 {
				hi = n
			}
		}
	}
	return lo, hi
}
