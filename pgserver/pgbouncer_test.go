//go:build unix

package pgserver

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"
)

// TestStartPgBouncer runs a transaction-mode PgBouncer in front of a
// throwaway server and a statement through it in exec mode.
func TestStartPgBouncer(t *testing.T) {
	needServers(t)
	if _, err := FindPgBouncer(); errors.Is(err, ErrNoPgBouncer) {
		if os.Getenv("NODEID_TEST_REQUIRE_DB") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := StartLocal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	b, err := StartPgBouncer(ctx, srv.Addr(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.PID() <= 0 {
		t.Errorf("PID %d", b.PID())
	}
	db, err := sql.Open("pgx", b.DSN("postgres", "default_query_exec_mode=exec"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var port int
	if err := db.QueryRowContext(ctx, "SELECT inet_server_port() + $1::int", 0).Scan(&port); err != nil {
		t.Fatal(err)
	}
	if want := srv.Addr(); port == b.Port() || want == b.Addr() {
		t.Errorf("the statement reached port %d, the pooler's %s, not the server's %s", port, b.Addr(), want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.root); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", b.root, err)
	}
}
