package admin

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The lease statements run inside the table's functions ({t}_claim and the
// others), where EXPLAIN of the call shows a Function Scan and nothing of
// them. Their plans are read instead from auto_explain, which logs the plan
// of every statement a function runs (log_nested_statements) as a notice,
// on a connection of its own; plan_cache_mode = force_generic_plan makes
// PL/pgSQL plan them as a server connection's cache does after five calls,
// without the parameters' values: the worst plan a cached statement can
// run. The call runs in a transaction that is rolled back.

// loggedPlan is a plan auto_explain logged in JSON.
type loggedPlan struct {
	Query string   `json:"Query Text"`
	Plan  planNode `json:"Plan"`
}

// planNode is what the tests read of a node of a JSON plan.
type planNode struct {
	Type            string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	Index           string     `json:"Index Name"`
	Filter          string     `json:"Filter"`
	RemovedByFilter int64      `json:"Rows Removed by Filter"`
	Plans           []planNode `json:"Plans"`
}

// nestedPlans runs call with args on a new connection to dsn, after the
// settings given (SET statements), and returns the generic plans of the
// statements the function ran, nested ones included, in the order they
// ended; not the call's own. With analyze the plans carry the actual rows.
func nestedPlans(ctx context.Context, t *testing.T, dsn string, analyze bool, settings []string, call string, args ...any) []loggedPlan {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	setup := []string{
		"LOAD 'auto_explain'", // the test server's user is a superuser
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice",
		"SET client_min_messages = notice",
		"SET plan_cache_mode = force_generic_plan",
	}
	if analyze {
		setup = append(setup, "SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off")
	}
	for _, q := range append(setup, settings...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the call leaves nothing behind
	notices = nil
	rows, err := tx.Query(ctx, call, args...)
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	var out []loggedPlan
	for _, n := range notices {
		i := strings.Index(n, "plan:\n")
		if !strings.HasPrefix(n, "duration:") || i < 0 {
			continue // not auto_explain's
		}
		var p loggedPlan
		if err := json.Unmarshal([]byte(n[i+len("plan:\n"):]), &p); err != nil {
			t.Fatalf("auto_explain's plan: %v: %s", err, n)
		}
		if strings.TrimSpace(p.Query) != strings.TrimSpace(call) {
			out = append(out, p)
		}
	}
	return out
}

// primaryKeys returns the name of the primary key's index of each table.
func primaryKeys(ctx context.Context, t *testing.T, db *sql.DB, tables ...string) map[string]string {
	t.Helper()
	pks := make(map[string]string, len(tables))
	for _, table := range tables {
		var pk string
		if err := db.QueryRowContext(ctx, `SELECT ic.relname FROM pg_index AS i JOIN pg_class AS ic ON ic.oid = i.indexrelid
			WHERE i.indrelid = to_regclass($1) AND i.indisprimary`, table).Scan(&pk); err != nil {
			t.Fatalf("the primary key of %s: %v", table, err)
		}
		pks[table] = pk
	}
	return pks
}

// reaches returns the accesses of n's plan to the table rel (writes
// included), and those of them that do not go through its primary key pk
// alone: any scan but an Index Scan, an Index Only Scan or a Bitmap Heap
// Scan of pk. The rows a write changes are found by another node, which is
// judged too.
func reaches(n planNode, rel, pk string) (accesses int, bad []string) {
	if n.Relation == rel {
		accesses++
		switch n.Type {
		case "ModifyTable":
		case "Index Scan", "Index Only Scan":
			if n.Index != pk {
				bad = append(bad, n.Type+" of "+rel+" using "+n.Index)
			}
		case "Bitmap Heap Scan":
			ixs := bitmapIndexes(n)
			for _, ix := range ixs {
				if ix != pk {
					bad = append(bad, n.Type+" of "+rel+" using "+strings.Join(ixs, ", "))
					break
				}
			}
			if len(ixs) == 0 {
				bad = append(bad, n.Type+" of "+rel+" without an index")
			}
		default:
			bad = append(bad, n.Type+" of "+rel)
		}
	}
	for _, c := range n.Plans {
		a, b := reaches(c, rel, pk)
		accesses, bad = accesses+a, append(bad, b...)
	}
	return accesses, bad
}

// bitmapIndexes returns the indexes of the Bitmap Index Scans under a
// Bitmap Heap Scan (through BitmapAnd and BitmapOr).
func bitmapIndexes(n planNode) []string {
	var out []string
	for _, c := range n.Plans {
		switch c.Type {
		case "Bitmap Index Scan":
			out = append(out, c.Index)
		case "BitmapAnd", "BitmapOr":
			out = append(out, bitmapIndexes(c)...)
		}
	}
	return out
}

// leaseCall is a call of a lease function whose statements must reach
// tables only through their primary keys. marker is a fragment of the text
// of the function's own lease statement, which must be among the plans
// logged and reach every one of tables: a check that found nothing to
// judge passes nothing.
type leaseCall struct {
	name   string
	call   string
	args   []any
	marker string
	tables []string
}

// judge runs c on dsn with the settings given and returns the accesses of
// the statements it ran to c.tables other than through their primary keys
// (pks), and an error when c's own statement was not logged, or does not
// reach one of c.tables.
func (c leaseCall) judge(ctx context.Context, t *testing.T, dsn string, pks map[string]string, settings ...string) (bad []string, err error) {
	t.Helper()
	plans := nestedPlans(ctx, t, dsn, false, settings, c.call, c.args...)
	marked := false
	for _, p := range plans {
		own := strings.Contains(p.Query, c.marker)
		marked = marked || own
		for _, table := range c.tables {
			n, b := reaches(p.Plan, table, pks[table])
			if own && n == 0 {
				return nil, fmt.Errorf("the plan of its statement does not reach %s: %s", table, p.Query)
			}
			bad = append(bad, b...)
		}
	}
	if !marked {
		var got []string
		for _, p := range plans {
			got = append(got, p.Query)
		}
		return nil, fmt.Errorf("no plan of its statement (%q) was logged, of %d: %q", c.marker, len(plans), got)
	}
	return bad, nil
}

// scratchTable creates table, of node IDs 0 to nodes-1, in the replication
// mode given, through the DDL alone, and returns its Store.
func scratchTable(t *testing.T, db *sql.DB, table string, nodes int64, mode Replication) *Store {
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
	return st
}

// The lease statements reach the history only through its primary key,
// whatever the planner's statistics say: the generic plans of the
// statements the claim, renewal, release and ended functions run are
// inspected on the tables as the DDL left them, after claims filled the
// history without ANALYZE (autovacuum off), and after ANALYZE. A history
// row that a statement found by another way (an index on ended_at, a scan)
// costs time in proportion to the history, and a plan made while it was
// small stays in a server connection's cache as it grows. The renewal, the
// release and the ended statement reach the lease table only through its
// primary key too.
func TestLeaseStatementsReachHistoryByPrimaryKey(t *testing.T) {
	t.Parallel()
	const nodes = 2048
	for _, mode := range []Replication{Async, Sync} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			db, dsn := pgtest.NewDB(t)
			ctx := ctxOf(t)
			table := "plans_" + string(mode)
			st := scratchTable(t, db, table, nodes, mode)
			history := HistoryTable(table)
			pks := primaryKeys(ctx, t, db, table, history)
			now := time.Now().UnixMilli()
			calls := []leaseCall{
				{"claim", "SELECT * FROM " + table + "_claim(owner => $1, ttl_ms => $2, horizon_ms => $3, lo => $4, hi => $5)",
					[]any{"o", int64(60000), now, 0, nodes - 1}, "claimed AS (", []string{history}},
				{"renewal", "SELECT * FROM " + table + "_renew(node_id => $1, owner => $2, epoch => $3, ttl_ms => $4, horizon_ms => $5)",
					[]any{1, "h1", int64(3), int64(60000), now}, "renewed AS (", []string{table}},
				{"release", "SELECT * FROM " + table + "_release(node_id => $1, owner => $2, epoch => $3, last_ms => $4)",
					[]any{1, "h1", int64(3), now}, "released AS (", []string{history, table}},
				{"ended", "SELECT * FROM " + table + "_ended(node_id => $1, owner => $2, epoch => $3)",
					[]any{1, "h1", int64(3)}, "h.end_reason AS reason", []string{history, table}},
			}
			inspect := func(state string) {
				for _, c := range calls {
					bad, err := c.judge(ctx, t, dsn, pks)
					if err != nil {
						t.Errorf("%s, %s: %v", state, c.name, err)
					}
					for _, b := range bad {
						t.Errorf("%s, %s: %s", state, c.name, b)
					}
				}
			}
			inspect("as made")

			// The history as a fleet leaves it: every node ID claimed,
			// most of them released and claimed again, the last claims
			// open, and some of those lapsed; the statistics those of
			// before.
			for _, q := range []string{"ALTER TABLE " + table + " SET (autovacuum_enabled = false)",
				"ALTER TABLE " + history + " SET (autovacuum_enabled = false)"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 3 {
				ttl := time.Hour
				if round == 2 {
					ttl = time.Minute
				}
				for i := range nodes {
					c, err := st.Claim(ctx, 0, nodes-1, fmt.Sprintf("h%d", i), ttl, time.Now().UnixMilli())
					if err != nil {
						t.Fatal(err)
					}
					if !c.OK {
						t.Fatalf("claim %d of round %d refused: %+v", i, round, c.Refusal)
					}
					if round < 2 {
						if _, err := st.Release(ctx, c.Key, time.Now().UnixMilli()-1); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			inspect("filled, not analysed")

			if _, err := db.ExecContext(ctx, "ANALYZE "+table+", "+history); err != nil {
				t.Fatal(err)
			}
			inspect("analysed")

			// The check can fail: without index scans, the ended statement
			// reads the history by a sequential scan, and that is reported.
			ended := calls[3]
			bad, err := ended.judge(ctx, t, dsn, pks,
				"SET enable_indexscan = off", "SET enable_indexonlyscan = off", "SET enable_bitmapscan = off")
			if err != nil {
				t.Errorf("without index scans, ended: %v", err)
			}
			if !strings.Contains(strings.Join(bad, "; "), "Seq Scan of "+history) {
				t.Errorf("without index scans, the ended statement's sequential scan of %s went unreported: %q", history, bad)
			}
		})
	}
}

// A claim reads a handful of rows of the lease table, whatever the
// planner's statistics say: the generic plans of the statements its
// function runs, on a table whose statistics date from before a fill that
// left every node ID held but four spread over the range (a rollout before
// autovacuum runs), remove almost no row by a filter. A plan that walked
// the primary key for the lowest free or lapsed row removed every held row
// before it (65,536 at 65,536 node IDs, 19 ms).
func TestClaimReadsFewRowsWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	const nodes = 65536
	db, dsn := pgtest.NewDB(t)
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
	call := "SELECT * FROM stale_claim(owner => $1, ttl_ms => $2, horizon_ms => $3, lo => $4, hi => $5)"
	args := []any{"x", int64(60000), time.Now().UnixMilli(), 0, nodes - 1}
	// filtered returns the nodes of the claim's statements that removed
	// more than 64 rows of stale by a filter, failing the test when the
	// claim's own statement was not logged or does not read stale.
	filtered := func(settings ...string) (bad []string) {
		t.Helper()
		claimed := false
		for _, p := range nestedPlans(ctx, t, dsn, true, settings, call, args...) {
			own := strings.Contains(p.Query, "claimed AS (")
			claimed = claimed || own
			reads := 0
			var walk func(n planNode)
			walk = func(n planNode) {
				if n.Relation == "stale" {
					reads++
					if n.RemovedByFilter > 64 {
						bad = append(bad, fmt.Sprintf("%s on %s using %q removed %d rows by a filter: %s",
							n.Type, n.Relation, n.Index, n.RemovedByFilter, n.Filter))
					}
				}
				for _, c := range n.Plans {
					walk(c)
				}
			}
			walk(p.Plan)
			if own && reads == 0 {
				t.Fatalf("the plan of the claim's statement does not read stale: %s", p.Query)
			}
		}
		if !claimed {
			t.Fatal("no plan of the claim's statement was logged")
		}
		return bad
	}
	for _, b := range filtered() {
		t.Error(b)
	}
	// The check can fail: a claim that may not use an index filters every
	// held row out, and that is reported.
	if bad := filtered("SET enable_indexscan = off", "SET enable_indexonlyscan = off", "SET enable_bitmapscan = off"); len(bad) == 0 {
		t.Error("without index scans, the claim's sequential scans of stale went unreported")
	}
}
