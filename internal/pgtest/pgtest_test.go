package pgtest

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, db, want string }{
		{"postgres://u:p@h:5/a?sslmode=disable", "b", "postgres://u:p@h:5/b?sslmode=disable"},
		{"postgresql://h/", "x", "postgresql://h/x"},
		{"host=h user=u", "b", "host=h user=u dbname=b"},
	} {
		if got := WithDatabase(c.in, c.db); got != c.want {
			t.Errorf("WithDatabase(%q, %q) = %q, want %q", c.in, c.db, got, c.want)
		}
	}
}

// TestServerLifecycle drives a server of its own through every control:
// fresh databases, terminated backends, restarts in both modes, and a stop
// during which connections fail.
func TestServerLifecycle(t *testing.T) {
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
