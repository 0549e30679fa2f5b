// Package plancheck inspects a statement's generic plan: whether it
// reaches a table only through the table's primary key, whatever the
// planner's statistics say. The tests of the lease statements guard them
// with it, and nodeid bench reports it.
package plancheck

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TableAccess is one node of a plan that reads or writes the inspected
// table.
type TableAccess struct {
	// Node is the plan node's type as EXPLAIN names it: "Seq Scan",
	// "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "ModifyTable",
	// and so on.
	Node string `json:"node"`
	// Indexes are the indexes the node scans: one for an index scan, every
	// Bitmap Index Scan under a Bitmap Heap Scan, none otherwise.
	Indexes []string `json:"indexes,omitempty"`
	// Write is set for a ModifyTable node: the table is written there, and
	// the rows it writes are found by another node (which is inspected
	// too), or inserted.
	Write bool `json:"write,omitempty"`
	// PrimaryKey says the access goes through the table's primary key
	// alone, or is a write.
	PrimaryKey bool `json:"primary_key"`
}

// String describes the access as EXPLAIN would: "Index Scan using
// t_pkey", "Seq Scan", "ModifyTable (write)".
func (a TableAccess) String() string {
	switch {
	case a.Write:
		return a.Node + " (write)"
	case len(a.Indexes) > 0:
		return a.Node + " using " + strings.Join(a.Indexes, ", ")
	}
	return a.Node
}

// PlanInspection is what InspectGenericPlan found in one plan.
type PlanInspection struct {
	// Table is the inspected table as the caller named it, PrimaryKey the
	// name of its primary key's index ("" if it has none).
	Table      string `json:"table"`
	PrimaryKey string `json:"primary_key"`
	// Accesses are the plan's nodes that read or write Table, in the
	// plan's order.
	Accesses []TableAccess `json:"accesses"`
	// OnlyPrimaryKey says every read of Table goes through PrimaryKey (an
	// Index Scan, an Index Only Scan, or a Bitmap Heap Scan whose every
	// Bitmap Index Scan is of PrimaryKey). It is also true when the plan
	// does not read Table at all.
	OnlyPrimaryKey bool `json:"only_primary_key"`
	// Plan is the EXPLAIN (VERBOSE, FORMAT JSON) output.
	Plan string `json:"-"`
}

// String gives the verdict and the accesses that decided it, e.g. "no:
// Index Scan using h_ended_idx" or "yes: Index Scan using h_pkey,
// ModifyTable (write)".
func (p PlanInspection) String() string {
	verdict := "yes"
	if !p.OnlyPrimaryKey {
		verdict = "no"
	}
	var parts []string
	for _, a := range p.Accesses {
		if p.OnlyPrimaryKey || !a.PrimaryKey {
			parts = append(parts, a.String())
		}
	}
	if len(parts) == 0 {
		return verdict + ": " + p.Table + " is not read"
	}
	return verdict + ": " + strings.Join(parts, ", ")
}

// InspectGenericPlan reports whether the generic plan of stmt reaches
// table only through table's primary key. On conn it sets plan_cache_mode
// to force_generic_plan, prepares stmt (with the parameter types given, or
// those PostgreSQL infers when types is nil), and reads EXPLAIN (VERBOSE,
// FORMAT JSON) EXECUTE of it with args (written into the EXECUTE as SQL
// literals: integers, floats, strings, booleans, times, byte slices, nil);
// nothing is executed. It then deallocates the statement and restores
// plan_cache_mode, so that conn keeps no state of it. The generic plan is
// the one a prepared statement (pgx's default statement cache) may switch
// to after five executions, made without the parameters' values: the
// worst plan a cached statement can run.
func InspectGenericPlan(ctx context.Context, conn *sql.Conn, stmt string, types []string, args []any, table string) (PlanInspection, error) {
	p := PlanInspection{Table: table}
	var schema, rel string
	err := conn.QueryRowContext(ctx, `SELECT n.nspname, c.relname, COALESCE(ic.relname, '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
		LEFT JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE c.oid = to_regclass($1)`, table).Scan(&schema, &rel, &p.PrimaryKey)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("inspect plan: no table %s", table)
	}
	if err != nil {
		return p, fmt.Errorf("inspect plan: look up %s: %w", table, err)
	}
	lits := make([]string, len(args))
	for i, a := range args {
		if lits[i], err = literal(a); err != nil {
			return p, fmt.Errorf("inspect plan: argument $%d: %w", i+1, err)
		}
	}
	var old string
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&old); err != nil {
		return p, fmt.Errorf("inspect plan: %w", err)
	}
	// Cleaned up with a context of its own, so that the connection is left
	// as it was also when ctx ended.
	clean := func(q string, args ...any) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(cctx, q, args...) // best effort on a connection the caller owns
	}
	if _, err := conn.ExecContext(ctx, `SELECT set_config('plan_cache_mode', 'force_generic_plan', false)`); err != nil {
		return p, fmt.Errorf("inspect plan: %w", err)
	}
	defer clean(`SELECT set_config('plan_cache_mode', $1, false)`, old)
	name := planName()
	head := "PREPARE " + name
	if types != nil {
		head += "(" + strings.Join(types, ", ") + ")"
	}
	if _, err := conn.ExecContext(ctx, head+" AS "+stmt); err != nil {
		return p, fmt.Errorf("inspect plan: PREPARE: %w", err)
	}
	defer clean("DEALLOCATE " + name)
	exec := "EXECUTE " + name
	if len(lits) > 0 {
		exec += "(" + strings.Join(lits, ", ") + ")"
	}
	if err := conn.QueryRowContext(ctx, "EXPLAIN (VERBOSE, FORMAT JSON) "+exec).Scan(&p.Plan); err != nil {
		return p, fmt.Errorf("inspect plan: EXPLAIN %s: %w", exec, err)
	}
	p.Accesses, err = tableAccesses(p.Plan, schema, rel, p.PrimaryKey)
	if err != nil {
		return p, fmt.Errorf("inspect plan: %w", err)
	}
	p.OnlyPrimaryKey = true
	for _, a := range p.Accesses {
		p.OnlyPrimaryKey = p.OnlyPrimaryKey && a.PrimaryKey
	}
	return p, nil
}

// planNode is a node of EXPLAIN (FORMAT JSON), with the fields the
// inspection reads.
type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Schema   string     `json:"Schema"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

// tableAccesses returns the nodes of the JSON plan that read or write
// schema.rel, judged against its primary key pk.
func tableAccesses(plan, schema, rel, pk string) ([]TableAccess, error) {
	var top []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &top); err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	var out []TableAccess
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == rel && (n.Schema == "" || n.Schema == schema) {
			a := TableAccess{Node: n.NodeType}
			switch n.NodeType {
			case "ModifyTable":
				a.Write, a.PrimaryKey = true, true
			case "Index Scan", "Index Only Scan":
				a.Indexes = []string{n.Index}
				a.PrimaryKey = pk != "" && n.Index == pk
			case "Bitmap Heap Scan":
				a.Indexes = bitmapIndexes(n)
				a.PrimaryKey = pk != "" && len(a.Indexes) > 0
				for _, ix := range a.Indexes {
					a.PrimaryKey = a.PrimaryKey && ix == pk
				}
			}
			out = append(out, a)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, t := range top {
		walk(t.Plan)
	}
	return out, nil
}

// bitmapIndexes returns the indexes of the Bitmap Index Scans under a
// Bitmap Heap Scan (through BitmapAnd and BitmapOr).
func bitmapIndexes(n planNode) []string {
	var out []string
	for _, c := range n.Plans {
		switch c.NodeType {
		case "Bitmap Index Scan":
			out = append(out, c.Index)
		case "BitmapAnd", "BitmapOr":
			out = append(out, bitmapIndexes(c)...)
		}
	}
	return out
}

// literal writes a as an SQL literal for EXECUTE's parameters.
func literal(a any) (string, error) {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case nil:
		return "NULL", nil
	case string:
		return quote(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case time.Time:
		return quote(v.Format(time.RFC3339Nano)), nil
	case time.Duration:
		return quote(fmt.Sprintf("%d microseconds", v.Microseconds())), nil
	case []byte:
		return `'\x` + hex.EncodeToString(v) + `'`, nil
	}
	return "", fmt.Errorf("cannot write a %T as an SQL literal", a)
}

// planName returns a fresh name for a prepared statement.
func planName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "nodeid_plan_" + hex.EncodeToString(b[:])
}

// The states of a table in which PlanGuard.Check inspects a plan.
const (
	// PlanInitial: the tables as the caller left them, typically just made
	// by the DDL (a history never analysed, or analysed while empty).
	PlanInitial = "initial"
	// PlanStale: after PlanGuard.Fill, with autovacuum off on the table and
	// no ANALYZE: the statistics are those of before the fill, as a fleet
	// meets them during a rollout before autovacuum runs.
	PlanStale = "stale"
	// PlanFresh: after ANALYZE of the tables.
	PlanFresh = "fresh"
)

// PlanGuard inspects a statement's generic plan in the three states a
// table goes through (PlanInitial, PlanStale, PlanFresh): the guard that a
// claim statement reaches the history only through its primary key,
// whatever the planner's statistics say.
type PlanGuard struct {
	// Statement is the SQL, with $n parameters; Types their types for
	// PREPARE (nil: inferred); Args values for EXECUTE (see
	// InspectGenericPlan).
	Statement string
	Types     []string
	Args      []any
	// Table must be reached only through its primary key.
	Table string
	// Fill fills Table without ANALYZE, as claims do (through the store,
	// or the library), between the first and the second inspection. Nil
	// skips the stale state.
	Fill func(ctx context.Context) error
	// Analyze lists the tables that ANALYZE refreshes for the last state;
	// empty means Table alone.
	Analyze []string
}

// PlanState is the inspection in one state.
type PlanState struct {
	State      string         `json:"state"`
	Inspection PlanInspection `json:"inspection"`
}

// Check inspects the generic plan of g.Statement on a connection of db in
// each state, in order, and returns the inspections; ok is true when
// every one found Table reached only through its primary key. Before the
// fill it turns autovacuum off on Table (autovacuum_enabled = false), and
// resets that storage parameter when it returns: the caller's scratch
// tables must be its own.
func (g PlanGuard) Check(ctx context.Context, db *sql.DB) (states []PlanState, ok bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	ok = true
	inspect := func(state string) error {
		p, err := InspectGenericPlan(ctx, conn, g.Statement, g.Types, g.Args, g.Table)
		if err != nil {
			return fmt.Errorf("%s: %w", state, err)
		}
		states = append(states, PlanState{State: state, Inspection: p})
		ok = ok && p.OnlyPrimaryKey
		return nil
	}
	if err := inspect(PlanInitial); err != nil {
		return states, false, err
	}
	if g.Fill != nil {
		// The table's name went through to_regclass in the inspection.
		if _, err := conn.ExecContext(ctx, "ALTER TABLE "+g.Table+" SET (autovacuum_enabled = false)"); err != nil {
			return states, false, err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "ALTER TABLE "+g.Table+" RESET (autovacuum_enabled)") //nolint:errcheck // best effort
		if err := g.Fill(ctx); err != nil {
			return states, false, fmt.Errorf("fill %s: %w", g.Table, err)
		}
		if err := inspect(PlanStale); err != nil {
			return states, false, err
		}
	}
	analyze := g.Analyze
	if len(analyze) == 0 {
		analyze = []string{g.Table}
	}
	if _, err := conn.ExecContext(ctx, "ANALYZE "+strings.Join(analyze, ", ")); err != nil {
		return states, false, err
	}
	if err := inspect(PlanFresh); err != nil {
		return states, false, err
	}
	return states, ok, nil
}

// InspectNestedPlans reports whether the generic plans of the statements
// that a function call runs reach table only through table's primary key:
// EXPLAIN of a call shows a Function Scan only. On a connection of its own
// to cfg (a copy; the role must be allowed to LOAD auto_explain, as a
// superuser is) it logs the plans of the nested statements with
// auto_explain, at level notice, under plan_cache_mode force_generic_plan,
// runs call with args in a transaction it rolls back, and judges every
// nested plan. At least one of them must read or write table: a call
// whose statements never reach it is an error, not a pass. Plan holds the
// nested plans, one JSON document a line.
func InspectNestedPlans(ctx context.Context, cfg *pgx.ConnConfig, call string, args []any, table string) (PlanInspection, error) {
	p := PlanInspection{Table: table}
	cfg = cfg.Copy()
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return p, fmt.Errorf("inspect plans: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var schema, rel string
	err = conn.QueryRow(ctx, `SELECT n.nspname, c.relname, COALESCE(ic.relname, '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
		LEFT JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE c.oid = to_regclass($1)`, table).Scan(&schema, &rel, &p.PrimaryKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("inspect plans: no table %s", table)
	}
	if err != nil {
		return p, fmt.Errorf("inspect plans: look up %s: %w", table, err)
	}
	for _, q := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice", "SET client_min_messages = notice", "SET plan_cache_mode = force_generic_plan"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return p, fmt.Errorf("inspect plans: %s: %w", q, err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return p, fmt.Errorf("inspect plans: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the call leaves nothing behind
	notices = nil
	rows, err := tx.Query(ctx, call, args...)
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
	}
	if err != nil {
		return p, fmt.Errorf("inspect plans: %s: %w", call, err)
	}
	p.OnlyPrimaryKey = true
	var plans []string
	for _, n := range notices {
		i := strings.Index(n, "plan:\n")
		if !strings.HasPrefix(n, "duration:") || i < 0 {
			continue // not auto_explain's
		}
		doc := n[i+len("plan:\n"):]
		var head struct {
			Query string `json:"Query Text"`
		}
		if err := json.Unmarshal([]byte(doc), &head); err != nil {
			return p, fmt.Errorf("inspect plans: auto_explain's plan: %w", err)
		}
		if strings.TrimSpace(head.Query) == strings.TrimSpace(call) {
			continue // the call's own: a Function Scan
		}
		acc, err := tableAccesses("["+doc+"]", schema, rel, p.PrimaryKey)
		if err != nil {
			return p, fmt.Errorf("inspect plans: %w", err)
		}
		for _, a := range acc {
			p.OnlyPrimaryKey = p.OnlyPrimaryKey && a.PrimaryKey
		}
		p.Accesses = append(p.Accesses, acc...)
		plans = append(plans, strings.ReplaceAll(doc, "\n", " "))
	}
	p.Plan = strings.Join(plans, "\n")
	if len(p.Accesses) == 0 {
		return p, fmt.Errorf("inspect plans: none of the %d statements %s ran reached %s", len(plans), call, table)
	}
	return p, nil
}
