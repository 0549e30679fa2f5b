// Package pgtest gives tests a real PostgreSQL server. Start picks, in
// order:
//
//  1. the server named by NODEID_TEST_DSN (it must allow CREATE DATABASE;
//     it cannot be stopped or restarted);
//  2. a Docker engine, through github.com/ory/dockertest/v3 (image
//     postgres:15);
//  3. local PostgreSQL binaries, through internal/pgserver (the package of
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
	"fmt"
	"os"

	"github.com/nodeid/nodeid/internal/pgserver"
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

// Proxy is a TCP proxy for fault injection: see pgserver.Proxy.
type Proxy = pgserver.Proxy

// NewProxy listens on a free port of 127.0.0.1 and forwards to target.
func NewProxy(target string) (*Proxy, error) { return pgserver.NewProxy(target) }

// Start returns a running server, picked as the package doc says. settings
// ("name=value") are passed to a server that pgtest starts.
func Start(ctx context.Context, settings ...string) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s, err := pgserver.External(ctx, dsn)
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

// WithDatabase returns dsn (URL or key=value form) with its database set to db.
func WithDatabase(dsn, db string) string { return pgserver.WithDatabase(dsn, db) }

// WithAddr returns dsn (URL or key=value form) with its host and port
// replaced by addr, to go through a proxy.
func WithAddr(dsn, addr string) string { return pgserver.WithAddr(dsn, addr) }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: see
// pgserver.FreePort.
func FreePort() (int, error) { return pgserver.FreePort() }

// Timeline returns the timeline of the server that dsn connects to: see
// pgserver.Timeline.
func Timeline(ctx context.Context, dsn string) (int, error) { return pgserver.Timeline(ctx, dsn) }
