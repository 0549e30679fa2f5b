package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/pgtest"
	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// schema --verify-sql prints the statement of Lease.Verify for the table,
// which a program in another language runs as printed, with the lease's
// NODEID_NODE, NODEID_OWNER and NODEID_EPOCH.
func TestSchemaVerifySQL(t *testing.T) {
	golden(t, "schema_verify", mustCLI(t, "schema", "--verify-sql", "--table", "ids.nodes"))
	for _, flag := range [][]string{{"--range", "0-3"}, {"--nodes", "4"}, {"--max-ttl", "30s"}} {
		wantExit(t, cli(t, append([]string{"schema", "--verify-sql"}, flag...)...), exitUsage, flag[0], "--table")
	}
	wantExit(t, cli(t, "schema", "--verify-sql", "--table", "bad;name"), exitUsage, "bad;name")

	printed := mustCLI(t, "schema", "--verify-sql")
	if !strings.Contains(printed, store.VerifySQL(store.DefaultConfig())) {
		t.Fatalf("the printed statement is not the one Lease.Verify runs:\n%s", printed)
	}
	db, _ := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.New(db, store.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	c, ok, _, err := st.Claim(ctx, 0, 1, "worker-1", 30*time.Second, 0)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	run := func(owner string, epoch int64) (held bool, cause sql.NullString) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var (
			expires      sql.NullTime
			idle         sql.NullString
			idleMs       sql.NullInt64
			rowOwner     sql.NullString
			rowEpoch     sql.NullInt64
			statementNow time.Time
		)
		if err := tx.QueryRowContext(ctx, printed, c.NodeID, owner, epoch).
			Scan(&held, &cause, &expires, &idle, &idleMs, &rowOwner, &rowEpoch, &statementNow); err != nil {
			t.Fatalf("the printed statement: %v", err)
		}
		if held && (!idle.Valid || idleMs.Int64 <= 0 || idleMs.Int64 > 30_000) {
			t.Errorf("held, but the idle timeout is %v (%v ms)", idle, idleMs)
		}
		return held, cause
	}
	if held, cause := run("worker-1", c.Epoch); !held || cause.Valid {
		t.Errorf("the printed statement on a held lease: held=%v cause=%v", held, cause)
	}
	if held, cause := run("worker-1", c.Epoch+1); held || cause.String != store.CauseFailover {
		t.Errorf("the printed statement on a later epoch: held=%v cause=%v", held, cause)
	}
	if o, err := st.Release(ctx, c.Key, 0, true); err != nil || !o.OK {
		t.Fatalf("release: %+v %v", o, err)
	}
	if held, cause := run("worker-1", c.Epoch); held || cause.String != store.CauseReleased {
		t.Errorf("the printed statement on a released lease: held=%v cause=%v", held, cause)
	}
}
