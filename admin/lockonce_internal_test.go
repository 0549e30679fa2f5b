package admin

import (
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// A renewal and a release lock their row once, by their UPDATE: no plan
// of the statements their functions run reads it FOR UPDATE first (a
// LockRows node), which wrote a second WAL record per renewal.
func TestRenewalAndReleaseLockTheirRowOnce(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	ctx := ctxOf(t)
	for _, mode := range []Replication{Async, Sync} {
		table := "locks_" + string(mode)
		st := scratchTable(t, db, table, 16, mode)
		c, err := st.Claim(ctx, 1, 1, "o", time.Minute, time.Now().UnixMilli())
		if err != nil || !c.OK {
			t.Fatalf("%s: claim: %+v, %v", mode, c, err)
		}
		for _, call := range []struct {
			name, sql string
			args      []any
		}{
			{"renew", "SELECT * FROM " + table + "_renew($1, $2, $3, $4, $5)", []any{1, "o", c.Epoch, int64(60000), time.Now().UnixMilli()}},
			{"release", "SELECT * FROM " + table + "_release($1, $2, $3, $4)", []any{1, "o", c.Epoch, time.Now().UnixMilli()}},
		} {
			plans := nestedPlans(ctx, t, dsn, false, nil, call.sql, call.args...)
			locks, writes := 0, 0
			var walk func(n planNode)
			walk = func(n planNode) {
				switch n.Type {
				case "LockRows":
					locks++
				case "ModifyTable":
					writes++
				}
				for _, p := range n.Plans {
					walk(p)
				}
			}
			for _, p := range plans {
				walk(p.Plan)
			}
			if locks != 0 {
				t.Errorf("%s, %s: the plans lock rows in %d LockRows nodes before they write: %+v", mode, call.name, locks, plans)
			}
			if writes == 0 {
				t.Errorf("%s, %s: no ModifyTable in the %d plans captured: the inspection read the wrong plans", mode, call.name, len(plans))
			}
		}
	}
}
