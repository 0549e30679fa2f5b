package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/postgres"
)

// Target is the database a measurement works on (measure.Run, floor.RunFloor).
type Target struct {
	// Conn is where to connect. Run copies it for every connection it
	// opens; it never prints the password.
	Conn *pgx.ConnConfig
	// Where describes the server for the report, without secrets.
	Where string
	// Throwaway says the server exists only for this run, so Run may create
	// the pg_stat_statements extension in its database. On any other
	// database Run uses the extension only if it is already installed.
	Throwaway bool
	// Pooler is a PgBouncer in transaction mode in front of the same
	// server and database, or nil; NoPooler then says why there is none.
	Pooler   *Pooler
	NoPooler string
}

// Pooler is a PgBouncer in transaction pooling mode in front of a Target's
// server: the lease is measured through it in pgx's exec mode, the mode
// docs/operations.md requires behind a pooler.
type Pooler struct {
	// Conn connects through the pooler to the Target's database.
	Conn *pgx.ConnConfig
	// Where describes the pooler for the report, without secrets.
	Where string
	// PID is the pooler's process, whose CPU time is read from
	// /proc/<pid>/stat on Linux; 0 when unknown (not read).
	PID int
}

// ExecModes maps the names of measure.Config.ExecModes to pgx's modes.
var ExecModes = map[string]pgx.QueryExecMode{
	report.ModeCache: pgx.QueryExecModeCacheStatement,
	report.ModeExec:  pgx.QueryExecModeExec,
}

// RoundTrips counts, on the client, the round trips of connections to
// PostgreSQL: the writes to their sockets, one per flush of protocol
// messages; and, apart, the liveness pings that pgx's database/sql driver
// sends before it reuses a connection idle for more than a second (a
// simple query "-- ping"), which are no operation's. A pool counts into it
// through Dial.
type RoundTrips struct {
	writes, pings atomic.Int64
}

// Writes returns the writes counted so far, pings included.
func (t *RoundTrips) Writes() int64 { return t.writes.Load() }

// Pings returns the liveness pings counted so far.
func (t *RoundTrips) Pings() int64 { return t.pings.Load() }

// Operations returns the writes counted so far but the liveness pings:
// those operations sent themselves. A ping comes when the connection idled
// over a second, which on a loaded machine a turn of a loop may take.
func (t *RoundTrips) Operations() int64 { return t.writes.Load() - t.pings.Load() }

// Dial returns dial (a default dialer if nil) with its connections
// counting into t, for a pgx.ConnConfig's DialFunc.
func (t *RoundTrips) Dial(dial pgconn.DialFunc) pgconn.DialFunc {
	if dial == nil {
		dial = (&net.Dialer{KeepAlive: 5 * time.Minute}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: conn, t: t}, nil
	}
}

type countingConn struct {
	net.Conn
	t *RoundTrips
}

// Write counts one write, and apart a liveness ping.
func (cc countingConn) Write(p []byte) (int, error) {
	cc.t.writes.Add(1)
	if len(p) > 5 && p[0] == 'Q' && bytes.HasPrefix(p[5:], []byte("-- ping\x00")) {
		cc.t.pings.Add(1)
	}
	return cc.Conn.Write(p)
}

// Counter counts, on the client, the statements a *sql.DB sends (through
// pgx's tracer) and its round trips.
type Counter struct {
	RoundTrips
	Stmts atomic.Int64

	mu           sync.Mutex
	captured     []string // statement texts, if capturing
	capturedArgs [][]any  // and their arguments
	// Capture records the statements sent, with their arguments.
	Capture bool
}

// TraceQueryStart counts a statement, and records its text and arguments
// if capturing.
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.Stmts.Add(1)
	if c.Capture {
		c.mu.Lock()
		c.captured = append(c.captured, data.SQL)
		c.capturedArgs = append(c.capturedArgs, data.Args)
		c.mu.Unlock()
	}
	return ctx
}

// TraceQueryEnd does nothing: statements are counted when sent.
func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Snapshot returns the statements and writes counted so far.
func (c *Counter) Snapshot() (stmts, writes int64) { return c.Stmts.Load(), c.Writes() }

// ResetCaptured forgets the statements captured so far.
func (c *Counter) ResetCaptured() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.captured, c.capturedArgs = nil, nil
}

// Captured returns the texts of the statements captured so far.
func (c *Counter) Captured() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.captured...)
}

// OpenDB returns a handle with at most conns connections in the given exec
// mode, counting into ctr if not nil. Connections are kept open.
func (r *Session) OpenDB(conns int, mode string, ctr *Counter) *sql.DB {
	return r.OpenDBWith(conns, mode, ctr, nil)
}

// OpenDBWith is OpenDB with run-time parameters (name: value) that every
// connection sets at its start, at no cost of a statement.
func (r *Session) OpenDBWith(conns int, mode string, ctr *Counter, params map[string]string) *sql.DB {
	return openOn(r.Target.Conn, conns, mode, ctr, params)
}

// OpenPooled is OpenDB through the target's pooler, in exec mode; the
// pooler passes on no run-time parameter but application_name.
func (r *Session) OpenPooled(conns int, ctr *Counter) *sql.DB {
	return openOn(r.Target.Pooler.Conn, conns, report.ModeExec, ctr, nil)
}

// openOn opens a handle on base's database: see OpenDBWith.
func openOn(base *pgx.ConnConfig, conns int, mode string, ctr *Counter, params map[string]string) *sql.DB {
	cfg := base.Copy()
	cfg.DefaultQueryExecMode = ExecModes[mode]
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	cfg.RuntimeParams["application_name"] = "nodeid-bench"
	if ctr != nil {
		cfg.Tracer = ctr
		cfg.DialFunc = ctr.Dial(cfg.DialFunc)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db
}

// Warm opens n connections of db at once and keeps them in its pool.
func Warm(ctx context.Context, db *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		if err := c.PingContext(ctx); err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// newPrefix returns a random scratch-table prefix, nodeid_bench_<8 hex>.
func newPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "nodeid_bench_" + hex.EncodeToString(b[:])
}

// Scratch creates the scratch tables named prefix_suffix for node IDs 0 to
// ids-1, with the schema and prefill of the library, and returns a Store
// on them through the admin handle. It refuses a name that exists.
func (r *Session) Scratch(ctx context.Context, suffix string, ids int) (*admin.Store, error) {
	name := r.prefix + "_" + suffix
	if err := postgres.ValidateTable(name); err != nil {
		return nil, err
	}
	var exists bool
	if err := r.Admin.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL OR to_regclass($2) IS NOT NULL`,
		name, name+"_history").Scan(&exists); err != nil {
		return nil, err
	}
	if exists {
		return nil, fmt.Errorf("scratch table %s exists already: the benchmark never works on a table it did not create", name)
	}
	r.mu.Lock()
	r.Res.Env.Tables = append(r.Res.Env.Tables, name)
	r.mu.Unlock()
	st, err := admin.New(r.Admin, admin.Config{Table: name, MinNode: 0, MaxNode: int64(ids) - 1})
	if err != nil {
		return nil, err
	}
	if err := st.Apply(ctx, nodeid.MaxTTL); err != nil {
		return nil, err
	}
	return st, nil
}

// DropTables drops every scratch table the session created. It runs with a context
// of its own, so that it also cleans up after an interrupted run.
func (r *Session) DropTables() error {
	r.mu.Lock()
	names := make([]string, 0, 3*len(r.Res.Env.Tables))
	for _, t := range r.Res.Env.Tables {
		names = append(names, t, postgres.HistoryTable(t), postgres.ConfigTable(t))
	}
	r.mu.Unlock()
	if len(names) == 0 {
		r.Res.Env.Dropped = true
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.Res.Env.Relations = map[string]string{}
	if rows, err := r.Admin.QueryContext(ctx, `SELECT oid::text, relname FROM pg_class WHERE starts_with(relname, $1)`, r.prefix+"_"); err == nil {
		for rows.Next() {
			var oid, name string
			if rows.Scan(&oid, &name) == nil {
				r.Res.Env.Relations[oid] = name
			}
		}
		rows.Close()
	}
	// The names were validated by postgres.ValidateTable: no quoting needed.
	if _, err := r.Admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
		return fmt.Errorf("drop the scratch tables %s: %w", strings.Join(names, ", "), err)
	}
	// The lease functions of the scratch tables (and the herd's copy of
	// the claim) depend on no table in the catalog: DROP TABLE leaves them.
	var funcs []string
	rows, err := r.Admin.QueryContext(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p WHERE starts_with(p.proname, $1)`, r.prefix+"_")
	if err != nil {
		return fmt.Errorf("the scratch tables' functions: %w", err)
	}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return err
		}
		funcs = append(funcs, f)
	}
	rows.Close()
	if len(funcs) > 0 {
		if _, err := r.Admin.ExecContext(ctx, "DROP FUNCTION IF EXISTS "+strings.Join(funcs, ", ")); err != nil {
			return fmt.Errorf("drop the scratch tables' functions: %w", err)
		}
	}
	r.Res.Env.Dropped = true
	return nil
}

// Statements are the texts of the library's statements on one table, as
// admin.Store sends them: captured from the wire, not copied; ClaimArgs
// are the claim's arguments.
type Statements struct {
	Claim, Renew, Release string
	ClaimArgs             []any
}

// CaptureSQL runs a claim, a renewal and a release through admin.Store
// on st's table and returns the statements it sent. It leaves the table as
// it found it, bar one epoch.
func (r *Session) CaptureSQL(ctx context.Context, st *admin.Store) (Statements, error) {
	ctr := &Counter{Capture: true}
	db := r.OpenDB(1, report.ModeExec, ctr)
	defer db.Close()
	s, err := admin.New(db, st.Config())
	if err != nil {
		return Statements{}, err
	}
	if _, err := s.ReadConfig(ctx); err != nil { // the statements of the table's replication mode
		return Statements{}, err
	}
	ctr.mu.Lock()
	ctr.captured, ctr.capturedArgs = nil, nil
	ctr.mu.Unlock()
	c, err := s.Claim(ctx, s.Config().MinNode, s.Config().MaxNode, "nodeid-bench-capture", BenchTTL, 0)
	ok := c.OK
	if err != nil {
		return Statements{}, err
	}
	if !ok {
		return Statements{}, errors.New("capture the claim statement: every node ID is held")
	}
	if _, err := s.Renew(ctx, c.Key, BenchTTL, 0); err != nil {
		return Statements{}, err
	}
	if _, err := s.Release(ctx, c.Key, admin.NoHorizon); err != nil {
		return Statements{}, err
	}
	ctr.mu.Lock()
	defer ctr.mu.Unlock()
	if len(ctr.captured) != 3 {
		return Statements{}, fmt.Errorf("capture: a claim, a renewal and a release sent %d statements, not 3", len(ctr.captured))
	}
	return Statements{Claim: ctr.captured[0], Renew: ctr.captured[1], Release: ctr.captured[2], ClaimArgs: ctr.capturedArgs[0]}, nil
}

// Reset frees every node ID of st's table, as if never claimed, empties
// its history unless keepHistory, and vacuums both, so that each
// measurement starts from the same state. Epochs keep growing.
//
// An emptied history table must grow a page at a time again, under
// PostgreSQL's relation-extension lock, which halves the rate of
// concurrent claims; a kept and vacuumed one reuses the space of the
// versions its releases left, as a long-running table does.
func (r *Session) Reset(ctx context.Context, st *admin.Store, keepHistory bool) error {
	t := st.Config().Table
	qs := []string{"UPDATE " + t + " SET owner = '', expires_at = '-infinity', horizon_ms = 0 WHERE expires_at <> '-infinity' OR horizon_ms <> 0"}
	if !keepHistory {
		qs = append(qs, "TRUNCATE "+t+"_history")
	}
	qs = append(qs, "VACUUM (ANALYZE) "+t+", "+t+"_history")
	for _, q := range qs {
		if _, err := r.Admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("reset %s: %w", t, err)
		}
	}
	return nil
}

// Release releases l as a generator that minted nothing would have it: with
// an exact horizon, so that the node ID is claimable again at once (without
// one, a node ID cools until the horizon of the lease's last renewal).
func Release(ctx context.Context, l *nodeid.Lease) error {
	return l.ReleaseStamped(ctx, l.PreviousHorizon())
}
