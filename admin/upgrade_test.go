package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// A table made and leased from by the version before the SQL functions
// (testdata/before-functions) is brought up to date by WithCreateTable's
// Create (the functions, and the quarantine's columns renamed) and by this
// version's DDL, as nodeid init applies it: every row, epoch, horizon,
// history row and quarantine is kept, and the functions claim and renew
// on it. The previous version's renewal keeps working (a rolling upgrade:
// until the operator revokes their role's table privileges), while its
// claim, which reads the renamed column, fails, and so does its DDL run
// again after this one's.
func TestUpgradeToFunctionsKeepsEveryRow(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	old := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "before-functions", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if _, err := db.ExecContext(ctx, old("schema.sql")); err != nil {
		t.Fatal(err)
	}
	// That version's confirmation of the creation, on a server without
	// standbys.
	if _, err := db.ExecContext(ctx, `UPDATE snowflake_nodes_config SET creation_pending = NULL`); err != nil {
		t.Fatal(err)
	}
	horizon := time.Now().Add(time.Minute).UnixMilli()
	var node, epoch int64
	for _, owner := range []string{"old-1", "old-2"} {
		if err := db.QueryRowContext(ctx, old("claim.sql"), 0, 3, owner, int64(6000), horizon).Scan(&node, &epoch,
			new(time.Time), new(int64), new(int64), new(int64), new(time.Time)); err != nil {
			t.Fatalf("the previous version's claim: %v", err)
		}
	}
	// The values of every row, the configuration's quarantine read from the
	// columns of those names (the previous version's, then this one's).
	snapshot := func(quarantine, moved string) string {
		t.Helper()
		var s string
		if err := db.QueryRowContext(ctx, `SELECT
			(SELECT string_agg(concat_ws('|', node_id, owner, epoch, acquired_at, expires_at, horizon_ms, claim_generation), ';' ORDER BY node_id) FROM snowflake_nodes)
			|| ' / ' || (SELECT string_agg(concat_ws('|', node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation), ';' ORDER BY node_id, epoch) FROM snowflake_nodes_history)
			|| ' / ' || (SELECT concat_ws('|', min_node, max_node, max_ttl_ms, raise_ttl_ms, replication, generation, `+quarantine+`, `+moved+` IS NULL, server_id, wal_timeline) FROM snowflake_nodes_config)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot("fence_ms", "moved_fence_ms")
	upgraded := func() string { return snapshot("quarantine_until_ms", "moved_quarantine_until_ms") }
	// The previous version's claim reads the quarantine's column by its old
	// name: on the upgraded table it fails, naming it, and claims nothing.
	oldClaimFails := func(when string) {
		t.Helper()
		err := db.QueryRowContext(ctx, old("claim.sql"), 0, 3, "old-late", int64(6000), horizon).Scan(new(int64), new(int64),
			new(time.Time), new(int64), new(int64), new(int64), new(time.Time))
		if SQLState(err) != pgerrcode.UndefinedColumn || !strings.Contains(err.Error(), "fence_ms") {
			t.Fatalf("the previous version's claim %s: %v; want it to fail on the renamed column fence_ms (SQLSTATE 42703)", when, err)
		}
		t.Logf("the previous version's claim %s: %v", when, err)
	}
	st, err := New(db, Config{Table: "snowflake_nodes", MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	// WithCreateTable's Create makes the missing functions alone; nodeid
	// init's Apply runs the whole DDL.
	if created, err := st.Create(ctx, time.Minute); err != nil || created {
		t.Fatalf("Create on the previous version's table: %v, %v; want the functions made and the table kept", created, err)
	}
	if after := upgraded(); after != before {
		t.Fatalf("Create changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatalf("after Create: %v", err)
	}
	oldClaimFails("after Create")
	if err := st.Apply(ctx, 6*time.Second); err != nil {
		t.Fatalf("this version's DDL on the previous version's table: %v", err)
	}
	if after := upgraded(); after != before {
		t.Fatalf("the upgrade changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	oldClaimFails("after this version's DDL")
	// The previous version's DDL, as an old process or an old nodeid init
	// would run it again, fails as a whole: it would add fence_ms back.
	if _, err := db.ExecContext(ctx, old("schema.sql")); err == nil {
		t.Fatal("the previous version's DDL after this version's succeeded; want it to fail on the table")
	} else {
		t.Logf("the previous version's DDL after this version's: %v", err)
	}
	if after := upgraded(); after != before {
		t.Fatalf("the previous version's DDL changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	oldClaimFails("after the previous version's DDL")
	// The previous version's renewal of its lease still works.
	var expires time.Time
	if err := db.QueryRowContext(ctx, old("renew.sql"), node, "old-2", epoch, int64(6000), horizon).Scan(&expires, new(int64), new(time.Time)); err != nil {
		t.Fatalf("the previous version's renewal after the upgrade: %v", err)
	}
	// The functions lease on, after the previous version's leases.
	c, err := st.Claim(ctx, 0, 3, "new-1", 6*time.Second, horizon)
	if err != nil || !c.OK || c.NodeID != 2 || c.Epoch != 1 {
		t.Fatalf("the first claim through the functions: %+v, %v; want node 2 at epoch 1", c, err)
	}
	o, err := st.Renew(ctx, Key{NodeID: node, Owner: "old-2", Epoch: epoch}, 6*time.Second, horizon)
	if err != nil || !o.OK {
		t.Fatalf("the functions' renewal of the previous version's lease: %+v, %v", o, err)
	}
}
