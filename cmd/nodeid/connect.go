package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// EnvDatabaseURL names the environment variable read when --dsn is not set.
const EnvDatabaseURL = "DATABASE_URL"

// defaultConnectTimeout bounds connecting when the connection string sets
// no connect_timeout (PGCONNECT_TIMEOUT).
const defaultConnectTimeout = 10 * time.Second

// connection is where the command connects, and how it was told.
type connection struct {
	cfg    *pgx.ConnConfig
	source string // "--dsn", "DATABASE_URL" or "the libpq environment"
}

// dsnSource returns the connection string and where it came from: --dsn,
// else DATABASE_URL, else "" (the libpq environment variables PGHOST,
// PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ... and their defaults).
func (a *app) dsnSource() (dsn, source string) {
	switch {
	case a.dsn != "":
		return a.dsn, "--dsn"
	case a.getenv(EnvDatabaseURL) != "":
		return a.getenv(EnvDatabaseURL), EnvDatabaseURL
	}
	return "", "the libpq environment (PGHOST, PGUSER, ...)"
}

// connConfig parses the connection settings. Statements are sent in pgx's
// exec mode: unnamed prepared statements only, so that the command works
// through PgBouncer and other poolers in transaction mode.
func (a *app) connConfig() (*connection, error) {
	dsn, source := a.dsnSource()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, usagef("bad connection string in %s: %v; write it as a URL (postgres://USER@HOST:PORT/DATABASE) or as key=value pairs (host=HOST dbname=DATABASE)",
			source, err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		// Unique, so that a timed-out command finds its own statements.
		a.appName = fmt.Sprintf("%s (pid %d, %08x)", strings.TrimSpace("nodeid "+a.cmdName), os.Getpid(), rand.Uint32())
		cfg.RuntimeParams["application_name"] = a.appName
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			a.dialed.add(addr)
		}
		return c, err
	}
	a.redact.add(cfg.Password, true)
	return &connection{cfg: cfg, source: source}, nil
}

// dialLog records the addresses at which a TCP (or Unix) connection was
// accepted, to tell a server that is not there from one that does not
// answer.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) add(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.addrs, addr) {
		d.addrs = append(d.addrs, addr)
	}
}

// accepted returns the addresses that accepted a connection.
func (d *dialLog) accepted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// openDB opens the database handle the command's statements run on; it is
// closed when the command ends. It does not connect: the first statement
// does.
func (a *app) openDB() (*sql.DB, error) {
	if a.db != nil {
		return a.db, nil
	}
	c, err := a.connConfig()
	if err != nil {
		return nil, err
	}
	a.conn = c
	a.db = stdlib.OpenDB(*c.cfg, stdlib.OptionAfterConnect(func(context.Context, *pgx.Conn) error {
		a.connected.Store(true)
		return nil
	}))
	a.db.SetMaxOpenConns(4)
	return a.db, nil
}

// where describes the server and database of the connection for messages.
func (c *connection) where() string {
	if c == nil {
		return "the database"
	}
	return fmt.Sprintf("database %q on %s:%d as user %q", c.cfg.Database, c.cfg.Host, c.cfg.Port, c.cfg.User)
}
