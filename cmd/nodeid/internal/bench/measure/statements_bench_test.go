package measure

// Go benchmarks of the statement layer, admin.Store, one operation at a
// time on one connection, against the test PostgreSQL (see internal/testkit/pgtest).
// Compare with benchstat:
//
//	go test -run '^$' -bench Statement -count 6 ./cmd/nodeid/internal/bench/measure > stmt.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /op stmt.txt
//
//	op=claim         Store.Claim, the statement of Acquire (history included);
//	                 each claim is released outside the timer
//	op=renew         Store.Renew, the statement of every renewal
//	op=release       Store.Release
//	op=update-floor  a plain single-row UPDATE by primary key: the floor of
//	                 any write
//
// mode= is the pgx exec mode: cache_statement prepares each statement once
// per connection; exec plans it at every execution, as through PgBouncer.

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// statementIDs is the node range of the statement benchmarks.
const statementIDs = 65536

func BenchmarkStatement(b *testing.B) {
	_, dsn := pgtest.NewDB(b)
	for _, mode := range []string{report.ModeCache, report.ModeExec} {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cc.DefaultQueryExecMode = session.ExecModes[mode]
		db := stdlib.OpenDB(*cc)
		db.SetMaxOpenConns(1)
		b.Cleanup(func() { db.Close() })
		st, err := admin.New(db, admin.Config{Table: "bench_" + mode, MinNode: 0, MaxNode: statementIDs - 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Apply(b.Context(), nodeid.MaxTTL); err != nil {
			b.Fatal(err)
		}
		b.Run("mode="+mode+"/op=claim", func(b *testing.B) { benchClaim(b, st) })
		b.Run("mode="+mode+"/op=renew", func(b *testing.B) { benchRenew(b, st) })
		b.Run("mode="+mode+"/op=release", func(b *testing.B) { benchRelease(b, st) })
		b.Run("mode="+mode+"/op=update-floor", func(b *testing.B) { benchFloor(b, st) })
	}
}

// freeAll frees every node ID of st's table and vacuums it, outside the
// timer.
func freeAll(b *testing.B, st *admin.Store) {
	b.Helper()
	t := st.Config().Table
	for _, q := range []string{
		"UPDATE " + t + " SET owner = '', expires_at = '-infinity', horizon_ms = 0 WHERE expires_at <> '-infinity' OR horizon_ms <> 0",
		"TRUNCATE " + t + "_history",
		"VACUUM (ANALYZE) " + t + ", " + t + "_history",
	} {
		if _, err := st.DB().ExecContext(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	}
}

func claimN(b *testing.B, st *admin.Store, n int) []admin.Key {
	b.Helper()
	keys := make([]admin.Key, 0, n)
	for range n {
		c, err := st.Claim(b.Context(), st.Config().MinNode, st.Config().MaxNode, "bench", time.Hour, time.Now().Add(time.Hour).UnixMilli())
		ok := c.OK
		if err != nil || !ok {
			b.Fatalf("claim: ok %v, %v", ok, err)
		}
		keys = append(keys, c.Key)
	}
	return keys
}

func benchClaim(b *testing.B, st *admin.Store) {
	freeAll(b, st)
	// Prepare, and leave the plan cache's first executions behind.
	for _, k := range claimN(b, st, 10) {
		if _, err := st.Release(b.Context(), k, admin.NoHorizon); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	// Each claim is released outside the timer, so that every claim finds
	// the table in the same state.
	for b.Loop() {
		c, err := st.Claim(b.Context(), st.Config().MinNode, st.Config().MaxNode, "bench", time.Hour, time.Now().Add(time.Hour).UnixMilli())
		ok := c.OK
		if err != nil || !ok {
			b.Fatalf("claim: ok %v, %v", ok, err)
		}
		b.StopTimer()
		if _, err := st.Release(b.Context(), c.Key, admin.NoHorizon); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func benchRenew(b *testing.B, st *admin.Store) {
	freeAll(b, st)
	keys := claimN(b, st, 1024)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		o, err := st.Renew(b.Context(), keys[i%len(keys)], time.Hour, time.Now().Add(time.Hour).UnixMilli())
		if err != nil || !o.OK {
			b.Fatalf("renew: ok %v, %v", o.OK, err)
		}
		i++
	}
}

func benchRelease(b *testing.B, st *admin.Store) {
	freeAll(b, st)
	var keys []admin.Key
	b.ResetTimer()
	for b.Loop() {
		if len(keys) == 0 {
			b.StopTimer()
			keys = claimN(b, st, 1024)
			b.StartTimer()
		}
		o, err := st.Release(b.Context(), keys[0], admin.NoHorizon)
		if err != nil || !o.OK {
			b.Fatalf("release: ok %v, %v", o.OK, err)
		}
		keys = keys[1:]
	}
}

func benchFloor(b *testing.B, st *admin.Store) {
	q := fmt.Sprintf("UPDATE %s SET horizon_ms = horizon_ms + 1 WHERE node_id = $1", st.Config().Table)
	var db *sql.DB = st.DB()
	i := 0
	for b.Loop() {
		if _, err := db.ExecContext(b.Context(), q, i%statementIDs); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
