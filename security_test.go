package nodeid

// Least privilege, bad deployments and secrets, against a real PostgreSQL.
// After every failure the lease rows are checked: a clear error, never a
// changed row.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
	"github.com/nodeid/nodeid/postgres"
)

var roleSeq atomic.Int64

// newRole creates a login role with the given grants on the test database
// and returns a handle connected as that role, and its name. The role is
// dropped when the test ends.
func newRole(t *testing.T, srv *pgtest.Server, admin *sql.DB, dsn, grants string) (*sql.DB, string) {
	t.Helper()
	ctx := testContext(t)
	role := fmt.Sprintf("app_%d_%d", time.Now().UnixNano()%1e9, roleSeq.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	if grants != "" {
		if _, err := admin.ExecContext(ctx, strings.ReplaceAll(grants, "ROLE", role)); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("pgx", strings.Replace(dsn, "postgres@", role+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		ctx := context.Background()
		_, _ = admin.ExecContext(ctx, "DROP OWNED BY "+role)
		_ = srv.Exec(ctx, "postgres", "DROP ROLE IF EXISTS "+role)
	})
	return db, role
}

// provision creates the tables as a migration tool would.
func provision(t *testing.T, db *sql.DB) {
	t.Helper()
	ddl, err := postgres.DefaultSchema().SQL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(testContext(t), ddl); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every lease row as text, to check that a failure changed
// nothing.
func snapshot(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	err := db.QueryRowContext(testContext(t), `SELECT coalesce(string_agg(format('%s|%s|%s|%s|%s', node_id, owner, epoch,
		expires_at, horizon_ms), ';' ORDER BY node_id), '') FROM snowflake_nodes`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appGrants are what nodeid init --grant gives a client role ("ROLE" is
// replaced by the role's name).
var appGrants = func() string {
	q, err := postgres.GrantSQL("snowflake_nodes", "ROLE")
	if err != nil {
		panic(err)
	}
	return q
}()

// A role with only what nodeid init --grant gives (EXECUTE on the client
// functions, SELECT on the tables) runs the whole life cycle, with table
// creation off and on, and cannot write the tables itself.
func TestLeastPrivilegeLifecycle(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	provision(t, admin)
	app, _ := newRole(t, srv, admin, dsn, appGrants)
	ctx := testContext(t)
	for _, create := range []bool{false, true} {
		// 12 s leases: on a loaded machine a 3 s lease's renewal may not
		// land before its deadline, and a 6 s lease's three attempts of
		// 1.2 s each did not once in a CI run.
		r := newTestRegistry(t, app, WithCreateTable(create), WithTTL(12*time.Second))
		if err := r.CheckSchema(ctx); err != nil {
			t.Fatalf("CheckSchema as the app role: %v", err)
		}
		l := acquire(t, r)
		d0 := l.Deadline()
		testkit.Until(t, 2*time.Minute, "a renewal as the app role", heldUntil(l, func() bool { return l.Deadline().After(d0) }))
		unused(t, l)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("create=%v: release: %v", create, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if row := readRow(t, admin, 0); row.epoch != 2 || !row.free {
		t.Fatalf("row 0 after two claims and releases: %+v", row)
	}
	for _, q := range []string{"UPDATE snowflake_nodes SET epoch = 0", "DELETE FROM snowflake_nodes_history",
		"INSERT INTO snowflake_nodes (node_id) VALUES (5000)", "UPDATE snowflake_nodes_config SET quarantine_until_ms = 0", "TRUNCATE snowflake_nodes_history"} {
		if _, err := app.ExecContext(ctx, q); postgres.SQLSTATE(err) != pgerrcode.InsufficientPrivilege {
			t.Errorf("%s as the client role: %v, want SQLSTATE 42501", q, err)
		}
	}
}

// Missing privileges are Fatal errors that name the table and privilege,
// from CheckSchema and from every statement.
func TestMissingPrivilegeIsFatalAndNamed(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	provision(t, admin)
	before := snapshot(t, admin)
	ctx := testContext(t)

	// Every privilege on the tables, and no grant of the functions.
	noExec, _ := newRole(t, srv, admin, dsn, "GRANT ALL ON snowflake_nodes, snowflake_nodes_history, snowflake_nodes_config TO ROLE")
	r := newTestRegistry(t, noExec, WithCreateTable(false))
	err := r.CheckSchema(ctx)
	if !postgres.Fatal(err) || !strings.Contains(err.Error(), "EXECUTE on function snowflake_nodes_claim()") {
		t.Errorf("CheckSchema without EXECUTE = %v", err)
	}
	_, err = r.Acquire(ctx)
	// The first claim fails, and the configuration's checks then name the
	// first function of the table they call.
	if !postgres.Fatal(err) || postgres.SQLSTATE(err) != pgerrcode.InsufficientPrivilege ||
		!strings.Contains(err.Error(), "EXECUTE on function snowflake_nodes_") || !strings.Contains(err.Error(), "--grant") {
		t.Errorf("Acquire without EXECUTE = %v, want a Fatal 42501 naming a function of the table, EXECUTE and the grant", err)
	}

	// Table creation on, no CREATE privilege, tables missing.
	other, otherDSN := srv.NewDB(t)
	noCreate, _ := newRole(t, srv, other, otherDSN, "")
	_, err = newTestRegistry(t, noCreate).Acquire(ctx)
	if !postgres.Fatal(err) || !strings.Contains(err.Error(), "permission denied for schema public") ||
		!strings.Contains(err.Error(), "table snowflake_nodes does not exist") {
		t.Errorf("Acquire creating tables without CREATE = %v, want a Fatal error saying the table is missing and why it was not created", err)
	}
	// Table creation off (the default), role without privileges, tables
	// missing: the table is reported missing, not a privilege.
	_, err = newTestRegistry(t, noCreate, WithCreateTable(false)).Acquire(ctx)
	if !postgres.Fatal(err) || postgres.SQLSTATE(err) != pgerrcode.UndefinedTable || !strings.Contains(err.Error(), "postgres.Schema.SQL") ||
		!strings.Contains(err.Error(), "nodeid init") {
		t.Errorf("Acquire on missing tables without privileges = %v, want a Fatal 42P01 naming both ways to create them, nodeid init and postgres.Schema.SQL", err)
	}

	if after := snapshot(t, admin); after != before {
		t.Errorf("a failed statement changed the rows")
	}
}

// A privilege revoked while a lease is held: every renewal fails with a
// Fatal error, logged, and Lost closes at the deadline. The TTL leaves each
// renewal seconds to fail with its cause, not with its attempt's bound,
// on a loaded server.
func TestPrivilegeRevokedDuringLease(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	provision(t, admin)
	app, role := newRole(t, srv, admin, dsn, appGrants)
	var logs syncbuf.Buffer
	const ttl = 12 * time.Second
	r := newTestRegistry(t, app, WithCreateTable(false), WithTTL(ttl),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	l := acquire(t, r)
	if _, err := admin.ExecContext(testContext(t), "REVOKE EXECUTE ON FUNCTION snowflake_nodes_renew(integer, text, bigint, bigint, bigint) FROM "+role); err != nil {
		t.Fatal(err)
	}
	waitLost(t, l, 2*ttl)
	if !errors.Is(l.Err(), ErrExpired) {
		t.Errorf("Err = %v, want ErrExpired", l.Err())
	}
	if out := logs.String(); !strings.Contains(out, "permission denied for function snowflake_nodes_renew") {
		t.Errorf("the renewal failures were not logged with their cause:\n%s", out)
	}
}

// Bad deployments give a clear error from Acquire and change no row.
func TestBadDeployments(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	for _, c := range []struct {
		name    string
		setup   string // run as superuser on the fresh database
		opts    []Option
		mention []string
		fatal   bool
		retry   bool
	}{
		{name: "missing table, creation off", opts: []Option{WithCreateTable(false)},
			mention: []string{"snowflake_nodes", "does not exist", "Schema.SQL", "WithCreateTable"}, fatal: true},
		{name: "wrong column type", setup: "PROVISION; ALTER TABLE snowflake_nodes ALTER horizon_ms TYPE text",
			mention: []string{"snowflake_nodes"}, fatal: true},
		{name: "missing column", setup: "PROVISION; ALTER TABLE snowflake_nodes DROP COLUMN acquired_at",
			mention: []string{"acquired_at", "does not exist", "Schema.SQL"}, fatal: true},
		{name: "table of an earlier version", setup: `CREATE TABLE snowflake_nodes (node_id integer PRIMARY KEY, owner text NOT NULL DEFAULT '',
			epoch bigint NOT NULL DEFAULT 0, acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity', horizon_ms bigint NOT NULL DEFAULT 0);
			CREATE TABLE snowflake_nodes_history (node_id integer, epoch bigint, owner text, acquired_at timestamptz,
			from_ms bigint, ended_at timestamptz, end_reason text, horizon_ms bigint);
			INSERT INTO snowflake_nodes (node_id) SELECT generate_series(0, 1023)`,
			mention: []string{"no recorded configuration", "Schema.SQL"}, fatal: true},
		{name: "read-only server", setup: "PROVISION; ALTER DATABASE CURRENT SET default_transaction_read_only = on",
			mention: []string{"read-only", "primary"}, retry: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin, dsn := srv.NewDB(t)
			ctx := testContext(t)
			if setup, ok := strings.CutPrefix(c.setup, "PROVISION; "); ok {
				provision(t, admin)
				c.setup = setup
			}
			if c.setup != "" {
				if _, err := admin.ExecContext(ctx, strings.ReplaceAll(c.setup, "CURRENT", currentDB(t, admin))); err != nil {
					t.Fatal(err)
				}
			}
			before := ""
			if c.setup != "" {
				before = snapshotOrEmpty(t, admin)
			}
			db, err := sql.Open("pgx", dsn) // new connections see database settings
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			r := newTestRegistry(t, db, c.opts...)
			_, err = r.Acquire(ctx)
			if err == nil {
				t.Fatal("Acquire succeeded")
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if postgres.Fatal(err) != c.fatal || postgres.Retryable(err) != c.retry {
				t.Errorf("Fatal=%v Retryable=%v, want %v %v: %v", postgres.Fatal(err), postgres.Retryable(err), c.fatal, c.retry, err)
			}
			if c.setup != "" {
				if after := snapshotOrEmpty(t, admin); after != before {
					t.Error("the failed Acquire changed the rows")
				}
			}
		})
	}
}

func currentDB(t *testing.T, db *sql.DB) string {
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func snapshotOrEmpty(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	_ = db.QueryRow(`SELECT coalesce(string_agg(t::text, ';' ORDER BY node_id), '') FROM snowflake_nodes t`).Scan(&s)
	return s
}

// A database that refuses connections (at its connection limit) gives a
// retryable error, and Acquire succeeds once a connection frees up.
func TestDatabaseAtConnectionLimit(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	provision(t, admin)
	ctx := testContext(t)
	dbName := currentDB(t, admin)
	if _, err := admin.ExecContext(ctx, "ALTER DATABASE "+dbName+" CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	app, role := newRole(t, srv, admin, dsn, appGrants) // the limit does not apply to superusers
	admin.SetMaxIdleConns(0)                            // but their connections count
	waitNoBackends(t, srv, dbName)
	hog, err := app.Conn(ctx)
	for atLimit(err) { // a backend of the set-up still exiting
		time.Sleep(10 * time.Millisecond)
		hog, err = app.Conn(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", strings.Replace(dsn, "postgres@", role+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r := newTestRegistry(t, other)
	_, err = r.Acquire(ctx)
	if !postgres.Retryable(err) || postgres.SQLSTATE(err) != pgerrcode.TooManyConnections {
		t.Fatalf("Acquire at the connection limit = %v, want a retryable 53300", err)
	}
	hog.Close()
	app.Close() // frees the one allowed connection, once its backend has exited
	waitNoBackends(t, srv, dbName)
	l, err := r.Acquire(ctx)
	for atLimit(err) { // the hog's backend still exiting
		time.Sleep(10 * time.Millisecond)
		l, err = r.Acquire(ctx)
	}
	if err != nil {
		t.Fatalf("Acquire after the limit cleared: %v", err)
	}
	if l.NodeID() != 0 || l.Epoch() != 1 {
		t.Fatalf("after the limit cleared: node %d epoch %d", l.NodeID(), l.Epoch())
	}
}

// waitNoBackends waits until database db has no client backend: a closed
// connection's backend exits after the client has gone, and counts against
// a connection limit until it has. It watches from the postgres database, so
// as not to count itself. The server's own count may lag pg_stat_activity
// by a moment still: callers retry what the limit refuses.
func waitNoBackends(t *testing.T, srv *pgtest.Server, db string) {
	t.Helper()
	watch, err := sql.Open("pgx", srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	ctx := testContext(t)
	for {
		var n int
		if err := watch.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND backend_type = 'client backend'`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("database %s still has %d backends", db, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// atLimit reports whether err is the refusal of a database at its
// connection limit.
func atLimit(err error) bool { return postgres.SQLSTATE(err) == pgerrcode.TooManyConnections }

// No password from a DSN reaches an error.
func TestNoPasswordInErrors(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3t-Pa55"
	port, err := pgtest.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{
		fmt.Sprintf("postgres://app:%s@127.0.0.1:%d/x?sslmode=disable&connect_timeout=2", pw, port),
		fmt.Sprintf("host=127.0.0.1 port=%d user=app password=%s dbname=x sslmode=disable connect_timeout=2", port, pw),
		fmt.Sprintf("postgres://app:%s@127.0.0.1:notaport/x", pw),
		fmt.Sprintf("host=127.0.0.1 port=%d password='%s' dbname=x connect_timeout=bad", port, pw),
	} {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			if strings.Contains(err.Error(), pw) {
				t.Errorf("sql.Open error shows the password: %v", err)
			}
			continue
		}
		r, _ := New(db)
		_, err = r.Acquire(testContext(t))
		if err == nil {
			t.Fatalf("Acquire through %q succeeded", dsn)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
		r.Close()
		db.Close()
	}
}

// Nothing panics on nil input.
func TestNilInputs(t *testing.T) {
	t.Parallel()
	r := newRegistry(defaultConfig(), newFakeStore(0, 0))
	var nilCtx context.Context
	if _, err := r.Acquire(nilCtx); err == nil {
		t.Error("Acquire(nil) succeeded")
	}
	if err := r.CheckSchema(nilCtx); err == nil {
		t.Error("CheckSchema(nil) succeeded")
	}
	l, err := r.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := NewFence(l).Bind(nil); err == nil {
		t.Error("Bind(nil) succeeded")
	}
	if err := l.Release(nilCtx); err != nil {
		t.Errorf("Release(nil) = %v", err)
	}
	_ = r.Close()
}
