package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/plancheck"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

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
			q, err := st.sqlFor(ctx)
			if err != nil {
				t.Fatal(err)
			}
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
				{Statement: q.renew, Args: []any{1, "h1", int64(3), int64(60000), now}, Table: history},
				{Statement: q.release, Args: []any{1, "h1", int64(3), now}, Table: history},
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
