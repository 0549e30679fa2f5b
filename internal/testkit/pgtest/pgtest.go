// Package pgtest gives tests a real PostgreSQL server. Start picks, in
// order:
//
//  1. the server named by NODEID_TEST_DSN (it must allow CREATE DATABASE;
//     it cannot be stopped or restarted);
//  2. a Docker engine (image postgres:15), through the pgdocker program,
//     which uses dockertest from a module of its own
//     (internal/testkit/pgdocker, built on first use), so that this module
//     requires no Docker client;
//  3. local PostgreSQL binaries, through the pgserver module (the package of
//     the throwaway servers `nodeid demo` and `nodeid bench` start).
//
// Docker and local servers can be stopped, started and restarted, their
// backends terminated, and local ones paused. Main, Shared, NewDB,
// NewServer and NewPair tie servers and databases to tests; PgBouncer runs
// in front of a server.
//
// For failover tests, from local programs only: Pair, a primary and an
// asynchronous streaming standby whose replication runs through a Proxy;
// Cluster, PostgreSQL nodes managed by Patroni on etcd.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"

	"github.com/nodeid/nodeid/pgserver"
)

// EnvDSN names an existing server to use instead of starting one.
const EnvDSN = "NODEID_TEST_DSN"

// ErrNotControllable is returned by Stop, Start and Restart on a server that
// pgtest did not start.
var ErrNotControllable = pgserver.ErrNotControllable

// StopMode is PostgreSQL's shutdown mode.
type StopMode = pgserver.StopMode

// The shutdown modes of PostgreSQL.
const (
	Smart     = pgserver.Smart     // wait for clients to disconnect
	Fast      = pgserver.Fast      // roll back and disconnect clients
	Immediate = pgserver.Immediate // abort without a checkpoint, as a crash would
)

// Server is a PostgreSQL server for tests: a pgserver.Server with the
// test helpers of this package (NewDB, NewPgBouncer, Pause).
type Server struct {
	*pgserver.Server
}

// Proxy is a TCP proxy for fault injection between clients and a server.
// Normally it forwards; Blackhole holds every byte in both directions (the
// connections stay open and silent, as in a network partition, and the held
// bytes flow on after Restore); Cut closes every connection and refuses new
// ones until Restore. It is a pgserver.Proxy with a gate that holds the
// traffic.
type Proxy struct {
	*pgserver.Proxy
	gate *holdGate
}

// NewProxy listens on a free port of 127.0.0.1 and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	g := newHoldGate()
	p, err := pgserver.NewGatedProxy(target, g)
	if err != nil {
		return nil, err
	}
	return &Proxy{Proxy: p, gate: g}, nil
}

// Blackhole holds all traffic until Restore.
func (p *Proxy) Blackhole() { p.gate.set(holding) }

// Cut closes every connection and refuses new ones until Restore; held
// traffic is dropped.
func (p *Proxy) Cut() {
	p.gate.set(dropping)
	p.Proxy.Cut()
}

// Restore forwards traffic again, the held bytes first.
func (p *Proxy) Restore() {
	p.Proxy.Restore()
	p.gate.set(passing)
}

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.gate.set(dropping)
	return p.Proxy.Close()
}

// gateMode is what a holdGate does with the chunks it is asked about.
type gateMode int

const (
	passing gateMode = iota
	holding
	dropping
)

// holdGate is the pgserver.Gate of a Proxy: it passes, holds or drops.
type holdGate struct {
	mu   sync.Mutex
	cond *sync.Cond
	mode gateMode
}

func newHoldGate() *holdGate {
	g := &holdGate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *holdGate) set(m gateMode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = m
	g.cond.Broadcast()
}

// Wait blocks while the gate holds, and reports whether the chunk passes.
func (g *holdGate) Wait() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.mode == holding {
		g.cond.Wait()
	}
	return g.mode == passing
}

// Start returns a running server, picked as the package doc says. settings
// ("name=value") are passed to a server that pgtest starts.
func Start(ctx context.Context, settings ...string) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s, err := external(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("pgtest: %s: %w", EnvDSN, err)
		}
		return &Server{s}, nil
	}
	return StartOwn(ctx, settings...)
}

// StartOwn starts a server that pgtest controls: in Docker if an engine
// answers, else from local binaries.
func StartOwn(ctx context.Context, settings ...string) (*Server, error) {
	s, dockerErr := startDocker(ctx, settings)
	if s != nil {
		return &Server{s}, nil
	}
	s, localErr := pgserver.StartLocal(ctx, settings...)
	if s != nil {
		return &Server{s}, nil
	}
	return nil, fmt.Errorf("pgtest: no PostgreSQL available: set %s, or run a Docker engine (%v), or install the server binaries, e.g. apt-get install postgresql (%v)",
		EnvDSN, dockerErr, localErr)
}

// external returns the existing server that dsn (a superuser DSN that may
// CREATE DATABASE) connects to, once it answers. It cannot be stopped or
// restarted.
func external(ctx context.Context, dsn string) (*pgserver.Server, error) {
	s, err := pgserver.NewServer("dsn", dsn, nil)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", s.AdminDSN())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// WithDatabase returns dsn (URL or key=value form) with its database set to db.
func WithDatabase(dsn, db string) string { return pgserver.WithDatabase(dsn, db) }

// WithParam returns dsn (URL or key=value form) with the connection
// parameter key set to value.
func WithParam(dsn, key, value string) string {
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

// Controllable reports whether Stop, Start and Restart work: not on a
// server given by NODEID_TEST_DSN.
func (s *Server) Controllable() bool { return s.Controller() != nil }

// Start starts a stopped server and waits until it accepts connections.
func (s *Server) Start(ctx context.Context) error {
	ctl := s.Controller()
	if ctl == nil {
		return ErrNotControllable
	}
	if err := ctl.Start(ctx); err != nil {
		return err
	}
	return s.WaitReady(ctx, ctl.Exited())
}

// Restart stops the server in the given mode and starts it again.
func (s *Server) Restart(ctx context.Context, mode StopMode) error {
	if err := s.Stop(ctx, mode); err != nil {
		return err
	}
	return s.Start(ctx)
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

// TerminateBackends terminates every backend connected to database db
// (all databases if db is empty) but the caller's, and returns how many.
func (s *Server) TerminateBackends(ctx context.Context, db string) (int, error) {
	admin, err := sql.Open("pgx", s.AdminDSN())
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	var n int
	err = admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND ($1 = '' OR datname = $1)`, db).Scan(&n)
	return n, err
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: see
// pgserver.FreePort.
func FreePort() (int, error) { return pgserver.FreePort() }

// Timeline returns the timeline of the server that dsn connects to: see
// pgserver.Timeline.
func Timeline(ctx context.Context, dsn string) (int, error) { return pgserver.Timeline(ctx, dsn) }
