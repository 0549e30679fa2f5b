package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/plancheck"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// scratchTable creates table, of node IDs 0 to nodes-1, in the replication
// mode given, through the DDL alone, and returns its Store and statements.
func scratchTable(t *testing.T, db *sql.DB, table string, nodes int64, mode Replication) (*Store, *statements) {
	t.Helper()
	ctx := ctxOf(t)
	ddl, err := Schema{Table: table, MinNode: 0, MaxNode: nodes - 1, MaxTTL: time.Hour, Replication: mode}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	st, err := New(db, Config{Table: table, MinNode: 0, MaxNode: nodes - 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SettleCreation(ctx, nil); err != nil { // no standby: confirmed at once
		t.Fatal(err)
	}
	q, err := st.sqlFor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, q
}

// The lease statements reach the history only through its primary key,
// whatever the planner's statistics say: their generic plans (the ones a
// connection's statement cache uses after five executions) are inspected
// on the tables as the DDL left them, after claims filled the history
// without ANALYZE (autovacuum off), and after ANALYZE. A history row that
// a statement found by another way (an index on ended_at, a scan) costs
// time in proportion to the history, and a plan made while it was small
// stays in a connection's cache as it grows.
func TestLeaseStatementsReachHistoryByPrimaryKey(t *testing.T) {
	t.Parallel()
	const nodes = 2048
	for _, mode := range []Replication{Async, Sync} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			db, _ := pgtest.NewDB(t)
			ctx := ctxOf(t)
			table := "plans_" + string(mode)
			st, q := scratchTable(t, db, table, nodes, mode)
			now := time.Now().UnixMilli()
			// The history as a fleet leaves it: every node ID claimed,
			// most of them released and claimed again, the last claims
			// open, and some of those lapsed.
			fill := func(ctx context.Context) error {
				for round := range 3 {
					ttl := time.Hour
					if round == 2 {
						ttl = time.Minute
					}
					for i := range nodes {
						c, err := st.Claim(ctx, 0, nodes-1, fmt.Sprintf("h%d", i), ttl, time.Now().UnixMilli())
						if err != nil {
							return err
						}
						if !c.OK {
							return fmt.Errorf("claim %d of round %d refused: %+v", i, round, c.Refusal)
						}
						if round < 2 {
							if _, err := st.Release(ctx, c.Key, time.Now().UnixMilli()-1); err != nil {
								return err
							}
						}
					}
				}
				return nil
			}
			history := HistoryTable(table)
			for i, g := range []plancheck.PlanGuard{
				{Statement: q.claim, Args: []any{0, nodes - 1, "o", int64(60000), now}, Table: history, Fill: fill},
				{Statement: q.renew, Args: []any{1, "h1", int64(3), int64(60000), now}, Table: table},
				{Statement: q.release, Args: []any{1, "h1", int64(3), now}, Table: history},
				{Statement: q.release, Args: []any{1, "h1", int64(3), now}, Table: table},
				{Statement: st.endedSQL, Args: []any{1, int64(3)}, Table: history},
				{Statement: st.endedSQL, Args: []any{1, int64(3)}, Table: table},
			} {
				g.Analyze = []string{table, history}
				states, ok, err := g.Check(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					for _, s := range states {
						t.Errorf("statement %d, %s: %s", i, s.State, s.Inspection)
					}
				}
				if i == 0 && len(states) != 3 {
					t.Errorf("the claim was inspected in %d states, want 3", len(states))
				}
			}
		})
	}
}

// A claim reads a handful of rows of the lease table, whatever the
// planner's statistics say: its generic plan, on a table whose statistics
// date from before a fill that left every node ID held but four spread
// over the range (a rollout before autovacuum runs), removes almost no
// row by a filter. A plan that walked the primary key for the lowest free
// or lapsed row removed every held row before it (65,536 at 65,536 node
// IDs, 19 ms).
func TestClaimReadsFewRowsWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	const nodes = 65536
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	ddl, err := Schema{Table: "stale", MinNode: 0, MaxNode: nodes - 1, MaxTTL: 24 * time.Hour}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{ddl, "ANALYZE stale", "ALTER TABLE stale SET (autovacuum_enabled = false)",
		"ALTER TABLE stale_history SET (autovacuum_enabled = false)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := New(db, Config{Table: "stale", MinNode: 0, MaxNode: nodes - 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SettleCreation(ctx, nil); err != nil { // no standby: confirmed at once
		t.Fatal(err)
	}
	// Held as claims leave them (a statement for speed): every node ID but
	// four, with open history rows.
	for _, q := range []string{
		fmt.Sprintf(`UPDATE stale SET owner = 'fill', epoch = 1, acquired_at = now(), expires_at = now() + interval '20 hours',
			horizon_ms = (extract(epoch FROM now() + interval '20 hours') * 1000)::bigint, claim_generation = 1
		WHERE node_id %% %d <> %d`, nodes/4, nodes/8),
		`INSERT INTO stale_history (node_id, epoch, owner, acquired_at, from_ms, generation)
		SELECT node_id, 1, owner, acquired_at, 0, 1 FROM stale WHERE owner <> ''`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	q, err := st.sqlFor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var plan string
	for _, q := range []string{"SET LOCAL plan_cache_mode = force_generic_plan",
		"PREPARE claim(integer, integer, text, bigint, bigint) AS " + q.claim} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim(0, %d, 'x', 60000, %d)`,
		nodes-1, time.Now().UnixMilli())).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var root []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &root); err != nil || len(root) != 1 {
		t.Fatalf("EXPLAIN: %v", err)
	}
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == "stale" && n.RemovedByFilter > 64 {
			t.Errorf("%s on %s using %q removed %d rows by a filter: %s", n.Type, n.Relation, n.Index, n.RemovedByFilter, n.Filter)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root[0].Plan)
}

// planNode is what TestClaimReadsFewRowsWhateverTheStatistics reads of a
// node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type            string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	Index           string     `json:"Index Name"`
	Filter          string     `json:"Filter"`
	RemovedByFilter int64      `json:"Rows Removed by Filter"`
	Plans           []planNode `json:"Plans"`
}
