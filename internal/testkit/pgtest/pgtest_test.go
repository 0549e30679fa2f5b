package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The harness's own tests wait on servers, pairs and clusters they start,
// each its own: four at a time. Run with NODEID_PGTEST_FAKE_PGDOCKER set,
// the binary is a fake pgdocker instead (docker_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(fakePgdockerEnv) != "" {
		os.Exit(fakePgdocker())
	}
	MainWaiting(m)
}

// TestServerLifecycle drives a server of its own through every control:
// fresh databases, terminated backends, restarts in both modes, and a stop
// during which connections fail.
func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	s := NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, _ := s.NewDB(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v int); INSERT INTO t VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	read := func() (int, error) {
		var v int
		err := db.QueryRowContext(ctx, `SELECT v FROM t`).Scan(&v)
		return v, err
	}
	conn, err := db.Conn(ctx) // a backend to terminate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := s.TerminateBackends(ctx, "")
	if err != nil || n < 1 {
		t.Fatalf("TerminateBackends = %d, %v; want at least 1", n, err)
	}
	if err := conn.PingContext(ctx); err == nil {
		t.Error("a terminated connection still answers")
	}
	for _, mode := range []StopMode{Fast, Immediate} {
		if err := s.Restart(ctx, mode); err != nil {
			t.Fatalf("restart %s: %v", mode, err)
		}
		if v, err := read(); err != nil || v != 42 {
			t.Fatalf("after %s restart: %d, %v", mode, v, err)
		}
	}
	if err := s.Stop(ctx, Fast); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.PingContext(ctx); err == nil {
		t.Fatal("a stopped server accepted a connection")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := read(); err != nil || v != 42 {
		t.Fatalf("after start: %d, %v", v, err)
	}
}

// TestPgBouncerTransactionMode shows the pooler is real and in transaction
// mode: a client's statements run on whichever server connection is free,
// so a client sees another's backend once that one's transaction ends.
func TestPgBouncerTransactionMode(t *testing.T) {
	t.Parallel()
	s := Shared(t)
	b := s.NewPgBouncer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.DropDatabase(context.Background(), name)
	db, err := sql.Open("pgx", b.DSN(name, "default_query_exec_mode=exec"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pid := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		var p int
		if err := q.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pa := pid(tx) // a holds this backend until its transaction ends
	if pc := pid(c); pc == pa {
		t.Fatal("two clients shared a backend inside a transaction")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// PgBouncer hands out the most recently released backend: a's.
	if pc := pid(c); pc != pa {
		t.Fatalf("client kept its own backend (%d, not %d): the pooler is not in transaction mode", pc, pa)
	}
}

// TestNewDBConnectTimeout: the DSN of a fresh database gives a new
// connection testConnectTimeout, in the URL and the key=value form, and
// connects.
func TestNewDBConnectTimeout(t *testing.T) {
	for _, in := range []string{
		"postgres://u@h:5/db?sslmode=disable",
		"postgres://u@h:5/db?sslmode=disable&connect_timeout=10",
		"host=h port=5 user=u dbname=db",
		"host=h port=5 user=u dbname=db connect_timeout=10",
	} {
		cfg, err := pgconn.ParseConfig(WithParam(in, "connect_timeout", "60"))
		if err != nil {
			t.Fatalf("WithParam(%q): %v", in, err)
		}
		if cfg.ConnectTimeout != time.Minute || cfg.Host != "h" || cfg.Database != "db" {
			t.Errorf("WithParam(%q): connect timeout %s, host %q, database %q; want 1m0s, h, db", in, cfg.ConnectTimeout, cfg.Host, cfg.Database)
		}
	}
	db, dsn := NewDB(t)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnectTimeout != testConnectTimeout {
		t.Errorf("NewDB's DSN sets connect_timeout %s; want %s", cfg.ConnectTimeout, testConnectTimeout)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}
