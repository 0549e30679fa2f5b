package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// Explain returns the claim's EXPLAIN (ANALYZE, BUFFERS) in the current
// state, run in a transaction that is rolled back: the plan made for the
// parameters' values and, if generic is set, the generic plan a prepared
// statement may switch to.
func (r *Session) Explain(ctx context.Context, st *admin.Store, generic bool) ([]report.Plan, error) {
	stmts, err := r.CaptureSQL(ctx, st)
	if err != nil {
		return nil, err
	}
	c := st.Config()
	// The claim function's parameters: owner, TTL, horizon, the range and
	// no limit.
	args := []any{"bench-explain", BenchTTL.Milliseconds(), time.Now().Add(BenchTTL).UnixMilli(), c.MinNode, c.MaxNode, nil}
	conn, err := r.Admin.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	run := func(setup []string, q string, args ...any) (string, error) {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return "", err
		}
		defer tx.Rollback() //nolint:errcheck // always rolled back: EXPLAIN ANALYZE claims a row
		for _, s := range setup {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return "", err
			}
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return "", err
			}
			b.WriteString(line + "\n")
		}
		return b.String(), rows.Err()
	}
	custom, err := run(nil, "EXPLAIN (ANALYZE, BUFFERS) "+stmts.Claim, args...)
	if err != nil {
		return nil, err
	}
	plans := []report.Plan{{Kind: "custom", Text: custom}}
	if !generic {
		return plans, nil
	}
	if _, err := conn.ExecContext(ctx, "PREPARE nodeid_bench_claim(text, bigint, bigint, integer, integer, integer) AS "+stmts.Claim); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DEALLOCATE nodeid_bench_claim") //nolint:errcheck // the connection is closed next
	g, err := run([]string{"SET LOCAL plan_cache_mode = force_generic_plan"},
		fmt.Sprintf("EXPLAIN (ANALYZE, BUFFERS) EXECUTE nodeid_bench_claim('bench-explain', %d, %d, %d, %d, NULL)",
			args[1], args[2], args[3], args[4]))
	if err != nil {
		return nil, err
	}
	return append(plans, report.Plan{Kind: "generic", Text: g}), nil
}
