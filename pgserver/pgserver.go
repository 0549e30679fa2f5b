// Package pgserver runs throwaway PostgreSQL servers: the server that
// `nodeid demo` and `nodeid bench` start when given no database, and the
// primary and asynchronous standby of `nodeid demo --failover` (Pair), whose
// replication runs through a Proxy that can cut it.
//
// StartLocal runs the local PostgreSQL programs (initdb and postgres on
// PATH, or under /usr/lib/postgresql/*/bin) in a temporary directory, as
// the postgres user when the caller is the root user. It needs a POSIX
// system (Linux, macOS, the BSDs); elsewhere it returns ErrUnsupported. On
// Linux a server dies with the process that started it; elsewhere Close
// stops it.
//
// A Server can be stopped and closed. The test harness
// (internal/testkit/pgtest) builds on this package: it adds the servers of
// Docker (New, with a Controller of its own) and of NODEID_TEST_DSN
// (NewServer), restarts, terminated backends, a proxy that blackholes
// traffic and more standbys of a primary. This package holds only what the
// nodeid command reaches, and what the harness needs of its internals.
package pgserver

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

// defaultSettings make a throwaway server fast and roomy. fsync=off loses
// nothing when only the server process dies; synchronous_commit stays on,
// since an immediate shutdown would otherwise lose committed claims.
var defaultSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=off",
	"full_page_writes=off",
	"max_connections=400",
}

// DefaultSettings returns the settings ("name=value") every throwaway
// server starts with, before the caller's, for a Controller that runs one
// elsewhere.
func DefaultSettings() []string { return append([]string{}, defaultSettings...) }

// ErrNotControllable is returned by Stop on a server given by its DSN
// alone (NewServer with no Controller).
var ErrNotControllable = errors.New("pgserver: the server was given by its DSN and cannot be stopped or restarted")

// ErrUnsupported is returned by StartLocal and StartPair where the local
// PostgreSQL programs cannot be run as children (no POSIX processes).
var ErrUnsupported = errors.New("pgserver: throwaway servers need a POSIX system (Linux, macOS or a BSD)")

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
	ctl     Controller // nil for "dsn"

	mu    sync.Mutex
	admin *sql.DB
	seq   int
}

// Controller stops and starts a server of a kind this package does not
// run itself (the test harness's Docker container), for New.
type Controller interface {
	// Stop shuts the server down in the given mode and waits until it is down.
	Stop(ctx context.Context, mode StopMode) error
	// Start starts the stopped server (Server.Start then waits until it
	// accepts connections).
	Start(ctx context.Context) error
	// Close stops the server for good and removes what it left.
	Close() error
	// Exited is closed when a started server exits (nil if unknown).
	Exited() <-chan struct{}
}

// New returns a server of the given kind listening on 127.0.0.1:port,
// controlled by ctl, whose superuser postgres connects without a password.
// It does not wait for the server: see WaitReady.
func New(kind string, port int, ctl Controller) *Server {
	return &Server{
		kind:    kind,
		baseDSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		host:    "127.0.0.1",
		port:    port,
		ctl:     ctl,
	}
}

// NewServer returns a server of the given kind that dsn, a superuser DSN
// that may CREATE DATABASE, connects to, controlled by ctl (nil: it cannot
// be stopped, and its own database is the one to administer it from). It
// does not wait for the server: see WaitReady.
func NewServer(kind, dsn string, ctl Controller) (*Server, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return &Server{kind: kind, baseDSN: dsn, host: cfg.Host, port: int(cfg.Port), ctl: ctl}, nil
}

// Kind says where the server came from: "local" for StartLocal's, or the
// kind given to New or NewServer.
func (s *Server) Kind() string { return s.kind }

// Controller returns what stops and starts the server: nil for a server
// given by its DSN alone (NewServer with no Controller).
func (s *Server) Controller() Controller { return s.ctl }

// Addr returns the server's host:port, for a TCP proxy.
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

// AdminDSN returns the superuser DSN of the database the server is
// administered from: postgres, or the DSN's own for a server without a
// Controller.
func (s *Server) AdminDSN() string { return s.DSN(s.adminDatabase()) }

func (s *Server) adminDatabase() string {
	if s.ctl == nil {
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
		return "", fmt.Errorf("pgserver: create database: %w", err)
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
	return s.ctl.Stop(ctx, mode)
}

// Close stops a server this package or a Controller runs and removes its
// files; it only closes the connections to one given by its DSN alone.
func (s *Server) Close() error {
	s.dropAdmin()
	if s.ctl == nil {
		return nil
	}
	return s.ctl.Close()
}

func (s *Server) dropAdmin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
}

// WaitReady polls until the server accepts connections, ctx ends, a minute
// passes, or exited (if not nil) is closed.
func (s *Server) WaitReady(ctx context.Context, exited <-chan struct{}) error {
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
			return fmt.Errorf("pgserver: server did not accept connections: %w", err)
		case <-exited:
			return errors.New("pgserver: server exited during start-up")
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
	return 0, fmt.Errorf("pgserver: no free port on 127.0.0.1 in %d-%d after 200 draws", lo, hi-1)
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
