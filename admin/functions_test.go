package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The expander substitutes the table name and nothing else: SQL text
// with an unknown placeholder, or with one left over, is refused, and so
// is an invalid table name.
func TestExpandTableIsStrict(t *testing.T) {
	t.Parallel()
	got, err := expandTable("SELECT * FROM {t}_history, {t}", "ids.nodes")
	if err != nil || got != "SELECT * FROM ids.nodes_history, ids.nodes" {
		t.Fatalf("expandTable = %q, %v", got, err)
	}
	for _, text := range []string{"SELECT {x} FROM {t}", "SELECT * FROM {h}", "{t}_claim({mode})"} {
		if _, err := expandTable(text, "nodes"); err == nil || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("expandTable(%q) = %v, want an error naming the placeholder", text, err)
		}
	}
	if _, err := expandTable("SELECT 1 FROM {t}", "nodes; DROP TABLE x"); err == nil {
		t.Error("expandTable took an invalid table name")
	}
	// The embedded files expand whole.
	if q, err := FunctionsSQL("ids.nodes"); err != nil || placeholder.MatchString(q) {
		t.Fatalf("FunctionsSQL: %v", err)
	}
}

// Invalid input to the functions raises SQLSTATE 22023 naming the value
// and the rule; every function's name fits PostgreSQL's 63 bytes for the
// longest table name, which leases as any other.
func TestFunctionsRefuseBadInputAndFitLongNames(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	long := "s" + strings.Repeat("x", 61) + "." + strings.Repeat("n", maxTableLen)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+strings.Split(long, ".")[0]); err != nil {
		t.Fatal(err)
	}
	st, err := New(db, Config{Table: long, MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatalf("the DDL of a %d-byte table name: %v", maxTableLen, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_proc WHERE proname LIKE $1`, strings.Repeat("n", maxTableLen)+"\\_%").Scan(&n); err != nil || n != 13 {
		t.Fatalf("%d functions of the long table, want 13: %v", n, err)
	}
	if c, err := st.Claim(ctx, 0, 3, "a", time.Minute, time.Now().UnixMilli()); err != nil || !c.OK {
		t.Fatalf("a claim on the long table: %+v, %v", c, err)
	}
	f := long + "_"
	for _, c := range []struct{ call, says string }{
		{"SELECT * FROM " + f + "claim(owner => '', ttl_ms => 1000)", "owner '': it must be 1 to 255 bytes"},
		{"SELECT * FROM " + f + "claim(owner => NULL, ttl_ms => 1000)", "owner NULL"},
		{"SELECT * FROM " + f + "claim(owner => repeat('x', 256), ttl_ms => 1000)", "it must be 1 to 255 bytes"},
		{"SELECT * FROM " + f + "claim(owner => 'a', ttl_ms => 0)", "ttl_ms 0: it must be a positive number of milliseconds"},
		{"SELECT * FROM " + f + "claim(owner => 'a', ttl_ms => 1000, lo => 3, hi => 1)", "node range lo 3 to hi 1"},
		{"SELECT * FROM " + f + "claim(owner => 'a', ttl_ms => 1000, lo => 1)", "give both or neither"},
		{"SELECT * FROM " + f + "claim(owner => 'a', ttl_ms => 1000, lo => 0, hi => 9)", "node range 0 to 9 is outside the table's, 0 to 3"},
		{"SELECT * FROM " + f + "claim(owner => 'a', ttl_ms => 1000, node_limit => 2)", "goes past node ID 2"},
		{"SELECT * FROM " + f + "renew(node_id => 0, owner => 'a', epoch => 1, ttl_ms => -5)", "ttl_ms -5"},
		{"SELECT * FROM " + f + "restored(max_ttl_ms => 0)", "max_ttl_ms 0"},
		{"SELECT * FROM " + f + "prune(older_than_ms => -1)", "older_than_ms -1"},
	} {
		_, err := db.ExecContext(ctx, c.call)
		if SQLState(err) != pgerrcode.InvalidParameterValue || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want SQLSTATE 22023 saying %q", c.call, err, c.says)
		}
	}
}
