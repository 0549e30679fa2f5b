package plancheck

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestTableAccesses judges plans written by hand: the primary key's index
// scans and bitmap scans pass, any other scan of the table fails, other
// tables and other schemas do not count.
func TestTableAccesses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, plan string
		want       []TableAccess
	}{
		{"index scan of the primary key", `[{"Plan": {"Node Type": "Index Scan", "Relation Name": "h", "Schema": "public", "Index Name": "h_pkey"}}]`,
			[]TableAccess{{Node: "Index Scan", Indexes: []string{"h_pkey"}, PrimaryKey: true}}},
		{"another index", `[{"Plan": {"Node Type": "Index Only Scan", "Relation Name": "h", "Schema": "public", "Index Name": "h_ended_idx"}}]`,
			[]TableAccess{{Node: "Index Only Scan", Indexes: []string{"h_ended_idx"}}}},
		{"sequential scan under a write", `[{"Plan": {"Node Type": "ModifyTable", "Relation Name": "h", "Schema": "public", "Plans": [
			{"Node Type": "Nested Loop", "Plans": [{"Node Type": "Seq Scan", "Relation Name": "h", "Schema": "public"}, {"Node Type": "CTE Scan"}]}]}}]`,
			[]TableAccess{{Node: "ModifyTable", Write: true, PrimaryKey: true}, {Node: "Seq Scan"}}},
		{"bitmap of the primary key alone", `[{"Plan": {"Node Type": "Bitmap Heap Scan", "Relation Name": "h", "Schema": "public", "Plans": [
			{"Node Type": "BitmapOr", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "h_pkey"}, {"Node Type": "Bitmap Index Scan", "Index Name": "h_pkey"}]}]}}]`,
			[]TableAccess{{Node: "Bitmap Heap Scan", Indexes: []string{"h_pkey", "h_pkey"}, PrimaryKey: true}}},
		{"bitmap with another index", `[{"Plan": {"Node Type": "Bitmap Heap Scan", "Relation Name": "h", "Schema": "public", "Plans": [
			{"Node Type": "BitmapAnd", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "h_pkey"}, {"Node Type": "Bitmap Index Scan", "Index Name": "h_ended_idx"}]}]}}]`,
			[]TableAccess{{Node: "Bitmap Heap Scan", Indexes: []string{"h_pkey", "h_ended_idx"}}}},
		{"other tables and schemas", `[{"Plan": {"Node Type": "Append", "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t", "Schema": "public"},
			{"Node Type": "Seq Scan", "Relation Name": "h", "Schema": "other"}, {"Node Type": "Tid Scan", "Relation Name": "h", "Schema": "public"}]}}]`,
			[]TableAccess{{Node: "Tid Scan"}}},
	} {
		got, err := tableAccesses(c.plan, "public", "h", "h_pkey")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.EqualFunc(got, c.want, func(a, b TableAccess) bool {
			return a.Node == b.Node && a.Write == b.Write && a.PrimaryKey == b.PrimaryKey && slices.Equal(a.Indexes, b.Indexes)
		}) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	if _, err := tableAccesses("not json", "public", "h", "h_pkey"); err == nil {
		t.Error("a plan that is not JSON")
	}
	// A table without a primary key is never reached through it.
	got, _ := tableAccesses(`[{"Plan": {"Node Type": "Index Scan", "Relation Name": "h", "Schema": "public", "Index Name": ""}}]`, "public", "h", "")
	if len(got) != 1 || got[0].PrimaryKey {
		t.Errorf("no primary key: %+v", got)
	}
}

func TestLiteral(t *testing.T) {
	t.Parallel()
	for in, want := range map[any]string{nil: "NULL", "o'k": "'o''k'", int64(-3): "-3", 7: "7", true: "true", 1.5: "1.5"} {
		if got, err := literal(in); err != nil || got != want {
			t.Errorf("literal(%#v) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := literal(struct{}{}); err == nil {
		t.Error("a struct became a literal")
	}
}

// toyDB makes a toy table, toy, with a primary key, a second index and
// rows enough that the planner uses the indexes, and a small table other.
func toyDB(t *testing.T) *sql.DB {
	t.Helper()
	db, _ := pgtest.NewDB(t)
	for _, q := range []string{
		`CREATE TABLE toy (id integer PRIMARY KEY, k integer NOT NULL, v text NOT NULL, ended_at timestamptz)`,
		`CREATE INDEX toy_k_idx ON toy (k)`,
		`INSERT INTO toy SELECT g, g % 5000, 'v' || g FROM generate_series(1, 20000) AS g`,
		`CREATE TABLE other (n integer)`,
		`ANALYZE toy, other`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db
}

// TestInspectGenericPlan: on a toy table, a statement that reaches the
// table by its primary key (by an index scan or a bitmap scan) passes, one
// that scans it sequentially or through another index fails, and the
// connection keeps no prepared statement or setting of the inspection.
func TestInspectGenericPlan(t *testing.T) {
	t.Parallel()
	db := toyDB(t)
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range []struct {
		name, stmt string
		types      []string
		args       []any
		setup      string // run on the connection first, reset after
		ok         bool
		node       string // of the first access, "" for none
		index      string // that access's first index, if given
	}{
		{"by primary key", `SELECT v FROM toy WHERE id = $1::integer`, nil, []any{int64(7)}, "", true, "Index Scan", "toy_pkey"},
		{"by primary key, types given", `SELECT v FROM toy WHERE id = $1`, []string{"integer"}, []any{7}, "", true, "Index Scan", "toy_pkey"},
		{"by primary key, as a bitmap", `SELECT v FROM toy WHERE id = $1::integer`, nil, []any{7}, "enable_indexscan", true, "Bitmap Heap Scan", "toy_pkey"},
		{"by another index", `SELECT v FROM toy WHERE k = $1::integer`, nil, []any{7}, "enable_bitmapscan", false, "Index Scan", "toy_k_idx"},
		{"by another index, as a bitmap", `SELECT v FROM toy WHERE k = $1::integer`, nil, []any{7}, "enable_indexscan", false, "Bitmap Heap Scan", "toy_k_idx"},
		{"sequentially", `SELECT v FROM toy WHERE v = $1::text`, nil, []any{"v7"}, "", false, "Seq Scan", ""},
		{"a write by primary key beside a scan of another table",
			`WITH o AS (SELECT count(*) AS n FROM other) UPDATE toy SET v = $2::text FROM o WHERE toy.id = $1::integer AND o.n >= 0`,
			nil, []any{7, "w"}, "", true, "ModifyTable", ""},
		{"a write that finds its rows by another index",
			`UPDATE toy SET ended_at = now() WHERE k = $1::integer AND ended_at IS NULL`, nil, []any{7}, "", false, "ModifyTable", ""},
		{"not read at all", `SELECT 1`, nil, nil, "", true, "", ""},
	} {
		if c.setup != "" {
			if _, err := conn.ExecContext(ctx, "SET "+c.setup+" = off"); err != nil {
				t.Fatal(err)
			}
		}
		p, err := InspectGenericPlan(ctx, conn, c.stmt, c.types, c.args, "toy")
		if c.setup != "" {
			if _, err := conn.ExecContext(ctx, "RESET "+c.setup); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if p.OnlyPrimaryKey != c.ok || p.PrimaryKey != "toy_pkey" || !strings.Contains(p.Plan, `"Node Type"`) {
			t.Errorf("%s: %s (primary key %q)\n%s", c.name, p, p.PrimaryKey, p.Plan)
		}
		switch {
		case c.node == "" && c.ok && len(p.Accesses) != 0:
			t.Errorf("%s: accesses %v", c.name, p.Accesses)
		case c.node != "" && (len(p.Accesses) == 0 || p.Accesses[0].Node != c.node):
			t.Errorf("%s: accesses %v, want a %s first", c.name, p.Accesses, c.node)
		case c.index != "" && (len(p.Accesses) == 0 || len(p.Accesses[0].Indexes) == 0 || p.Accesses[0].Indexes[0] != c.index):
			t.Errorf("%s: accesses %v, want %s first", c.name, p.Accesses, c.index)
		}
		if strings.HasPrefix(p.String(), map[bool]string{true: "no", false: "yes"}[c.ok]) {
			t.Errorf("%s: String() = %q", c.name, p)
		}
	}
	if _, err := InspectGenericPlan(ctx, conn, `SELECT 1`, nil, nil, "no_such_table"); err == nil || !strings.Contains(err.Error(), "no table no_such_table") {
		t.Errorf("a missing table: %v", err)
	}
	if _, err := InspectGenericPlan(ctx, conn, `SELECT $1::int`, nil, []any{struct{}{}}, "toy"); err == nil || !strings.Contains(err.Error(), "$1") {
		t.Errorf("an argument without a literal: %v", err)
	}
	if _, err := InspectGenericPlan(ctx, conn, `SELECT nonsense FROM toy`, nil, nil, "toy"); err == nil || !strings.Contains(err.Error(), "PREPARE") {
		t.Errorf("a statement that does not prepare: %v", err)
	}
	var mode string
	var prepared int
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('plan_cache_mode'),
		(SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'nodeid\_plan\_%')`).Scan(&mode, &prepared); err != nil {
		t.Fatal(err)
	}
	if mode != "auto" || prepared != 0 {
		t.Errorf("the connection kept plan_cache_mode %s and %d prepared statements", mode, prepared)
	}
}

// TestPlanGuard runs the guard on a toy history: a close of an open row by
// its primary key passes in every state, one that looks open rows up by
// ended_at fails; the fill runs once, with autovacuum off, which is reset
// after.
func TestPlanGuard(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := t.Context()
	for _, q := range []string{
		`CREATE TABLE h (node_id integer, epoch bigint, owner text NOT NULL, ended_at timestamptz, PRIMARY KEY (node_id, epoch))`,
		`CREATE INDEX h_ended_idx ON h (ended_at)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fills := 0
	fill := func(ctx context.Context) error {
		fills++
		var off bool
		if err := db.QueryRowContext(ctx, `SELECT 'autovacuum_enabled=false' = ANY(reloptions) FROM pg_class WHERE relname = 'h'`).Scan(&off); err != nil || !off {
			t.Errorf("autovacuum during the fill: off %v (%v)", off, err)
		}
		_, err := db.ExecContext(ctx, `INSERT INTO h SELECT g % 1000, g, 'o', NULL FROM generate_series(1, 30000) AS g`)
		return err
	}
	for _, c := range []struct {
		name, stmt string
		args       []any
		ok         bool
	}{
		{"by primary key", `UPDATE h SET ended_at = now() WHERE node_id = $1::integer AND epoch = $2::bigint AND ended_at IS NULL`, []any{3, int64(3)}, true},
		{"by ended_at", `UPDATE h SET ended_at = now() WHERE owner = $1::text AND ended_at IS NULL`, []any{"o"}, false},
	} {
		if _, err := db.ExecContext(ctx, `TRUNCATE h`); err != nil {
			t.Fatal(err)
		}
		fills = 0
		g := PlanGuard{Statement: c.stmt, Args: c.args, Table: "h", Fill: fill}
		states, ok, err := g.Check(ctx, db)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ok != c.ok || fills != 1 || len(states) != 3 || states[0].State != PlanInitial || states[1].State != PlanStale || states[2].State != PlanFresh {
			t.Errorf("%s: ok %v, %d fills, states %+v", c.name, ok, fills, states)
		}
		for _, s := range states {
			if s.Inspection.OnlyPrimaryKey != c.ok {
				t.Errorf("%s, %s: %s", c.name, s.State, s.Inspection)
			}
		}
	}
	var opts sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'h'`).Scan(&opts); err != nil || opts.String != "" {
		t.Errorf("reloptions left: %q (%v)", opts.String, err)
	}
}
