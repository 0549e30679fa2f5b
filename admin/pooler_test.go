package admin_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// Through PgBouncer in transaction mode, pgx's default exec mode caches
// named prepared statements per connection; once a statement lands on
// another server connection it fails. The error must say what to change.
func TestPoolerWithoutExecModeNamesTheFix(t *testing.T) {
	t.Parallel()
	st, srv, _ := newStore(t, withNodes(0, 9))
	ctx := ctxT(t)
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var dbName string
	if err := st.DB().QueryRowContext(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	b := srv.NewPgBouncer(t)

	cached, err := sql.Open("pgx", b.DSN(dbName)) // pgx's default: cache_statement
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	cached.SetMaxOpenConns(1)
	cs, err := admin.New(cached, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 9})
	if err != nil {
		t.Fatal(err)
	}
	// The first claim prepares its statement on the server connection S1,
	// which returns to the pool.
	if res, err := cs.Claim(ctx, cs.Config().MinNode, cs.Config().MaxNode, "a", time.Minute, 0); err != nil || !res.OK {
		t.Fatalf("first claim through the pooler: %+v %v", res, err)
	}
	// Another client's open transaction now holds S1 (PgBouncer reuses the
	// most recently released server connection).
	other, err := sql.Open("pgx", b.DSN(dbName, "default_query_exec_mode=exec"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	// The second claim reuses the cached statement name on S2.
	_, err = cs.Claim(ctx, cs.Config().MinNode, cs.Config().MaxNode, "a", time.Minute, 0)
	if err == nil {
		t.Fatal("a cached prepared statement worked on another server connection: the pooler is not in transaction mode")
	}
	if !postgres.Fatal(err) || !strings.Contains(err.Error(), "default_query_exec_mode=exec") {
		t.Fatalf("error = %v, want a Fatal error naming default_query_exec_mode=exec", err)
	}
}
