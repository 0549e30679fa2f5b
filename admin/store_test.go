package admin_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

func TestMain(m *testing.M) { pgtest.MainWaiting(m) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newStore(t *testing.T, opts ...func(*admin.Config)) (*admin.Store, *pgtest.Server, string) {
	t.Helper()
	srv := pgtest.Shared(t)
	db, dsn := srv.NewDB(t)
	cfg := admin.DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	st, err := admin.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, srv, dsn
}

func withTable(name string) func(*admin.Config) {
	return func(c *admin.Config) { c.Table = name }
}

func withNodes(lo, hi int64) func(*admin.Config) {
	return func(c *admin.Config) { c.MinNode, c.MaxNode = lo, hi }
}

func TestSchemaSQLAppliesAndRecordsConfiguration(t *testing.T) {
	t.Parallel()
	ddl, err := postgres.Schema{Table: "ids.nodes", MinNode: 10, MaxNode: 19, MaxTTL: postgres.DefaultMaxTTL}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := newStore(t, withTable("ids.nodes"), withNodes(10, 19))
	db := st.DB()
	ctx := ctxT(t)
	if err := st.CheckSchema(ctx); !postgres.Fatal(err) || !strings.Contains(err.Error(), "ids.nodes") {
		t.Fatalf("CheckSchema before the DDL = %v, want a Fatal error naming the table", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA ids; "+ddl); err != nil {
		t.Fatalf("applying SchemaSQL: %v", err)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after the DDL: %v", err)
	}
	var n, lo, hi int
	if err := db.QueryRowContext(ctx, `SELECT count(*), min(node_id), max(node_id) FROM ids.nodes`).Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n != 10 || lo != 10 || hi != 19 {
		t.Fatalf("SchemaSQL pre-filled %d rows %d-%d, want 10-19", n, lo, hi)
	}
	tc, err := st.ReadConfig(ctx)
	if err != nil || tc.MinNode != 10 || tc.MaxNode != 19 || tc.MaxTTL != postgres.DefaultMaxTTL ||
		tc.Timeline != 1 || tc.Generation != 1 || tc.Replication != admin.Async || tc.ServerID == 0 {
		t.Fatalf("recorded configuration %+v, %v; want 10-19, max TTL %s, async, generation 1 on this server's timeline 1",
			tc, err, postgres.DefaultMaxTTL)
	}
	// Create on the provisioned tables creates nothing.
	if created, err := st.Create(ctx, time.Minute); err != nil || created {
		t.Fatalf("Create on provisioned tables = %v, %v; want false, nil", created, err)
	}
	// Applied again, with a narrower range and a shorter maximum TTL, the
	// DDL narrows and lowers nothing; with wider ones it widens and raises.
	for _, c := range []struct {
		lo, hi           int64
		maxTTL           time.Duration
		wantLo, wantHi   int64
		wantTTL          time.Duration
		wantRows, wantAt int
	}{
		{12, 15, 5 * time.Second, 10, 19, postgres.DefaultMaxTTL, 10, 10},
		{5, 24, time.Hour, 5, 24, time.Hour, 20, 5},
	} {
		ddl, err := postgres.Schema{Table: "ids.nodes", MinNode: c.lo, MaxNode: c.hi, MaxTTL: c.maxTTL}.SQL()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatalf("applying SchemaSQL again: %v", err)
		}
		// A raise of the maximum on an asynchronous table is pending until
		// it is confirmed.
		tc, err := st.ReadConfig(ctx)
		if err != nil || tc.MinNode != c.wantLo || tc.MaxNode != c.wantHi || max(tc.MaxTTL, tc.PendingMaxTTL) != c.wantTTL ||
			tc.MaxTTL != postgres.DefaultMaxTTL {
			t.Fatalf("after the DDL for %d-%d, %s: %+v, %v; want %d-%d, %s pending above %s", c.lo, c.hi, c.maxTTL, tc, err,
				c.wantLo, c.wantHi, c.wantTTL, postgres.DefaultMaxTTL)
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*), min(node_id) FROM ids.nodes`).Scan(&n, &lo); err != nil {
			t.Fatal(err)
		}
		if n != c.wantRows || lo != c.wantAt {
			t.Fatalf("after the DDL for %d-%d: %d rows from %d, want %d from %d", c.lo, c.hi, n, lo, c.wantRows, c.wantAt)
		}
	}
	mark, err := st.PendingRaise(ctx)
	if err != nil || mark.Raise != time.Hour || mark.LSN == "" || !strings.Contains(mark.Server, "/") {
		t.Fatalf("PendingRaise: %+v, %v; want 1h0m0s, a WAL position and the server's identifier/timeline", mark, err)
	}
	maxTTL, raised, err := st.ConfirmRaise(ctx, mark)
	if err != nil || !raised || maxTTL != time.Hour {
		t.Fatalf("ConfirmRaise: %s, %v, %v; want the pending 1h0m0s", maxTTL, raised, err)
	}
	if tc, err := st.ReadConfig(ctx); err != nil || tc.MaxTTL != time.Hour || tc.PendingMaxTTL != 0 {
		t.Fatalf("after the confirmation: %+v, %v; want a maximum of 1h0m0s, nothing pending", tc, err)
	}
	if _, raised, err := st.ConfirmRaise(ctx, admin.RaiseMark{Raise: 2 * time.Hour, Mark: mark.Mark}); err != nil || raised {
		t.Fatalf("ConfirmRaise with nothing pending: %v, %v; want nothing done", raised, err)
	}
	if tc, err := st.ReadConfig(ctx); err != nil || tc.MaxTTL != time.Hour {
		t.Fatalf("after a confirmation with nothing pending: %+v, %v; want the maximum unchanged, 1h0m0s", tc, err)
	}
}

// TestConfirmRaiseConfirmsTheRaiseItWasGiven: a raise made after the
// pending one was read (and its WAL position waited for) stays pending, so
// that the maximum never exceeds what the standbys were seen to have.
func TestConfirmRaiseConfirmsTheRaiseItWasGiven(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db, _ := pgtest.NewDB(t)
	st, err := admin.New(db, admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	apply := func(maxTTL time.Duration) {
		t.Helper()
		ddl, err := admin.Schema{Table: admin.DefaultTable, MinNode: 0, MaxNode: 3, MaxTTL: maxTTL}.SQL()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	apply(time.Minute)
	apply(2 * time.Minute) // pending
	mark, err := st.PendingRaise(ctx)
	first := mark.Raise
	if err != nil || first != 2*time.Minute {
		t.Fatalf("PendingRaise: %s, %v; want 2m0s", first, err)
	}
	apply(5 * time.Minute) // a later raise, which the standbys may lack
	// On another server than the one it was read on, nothing is confirmed.
	if _, raised, err := st.ConfirmRaise(ctx, admin.RaiseMark{Raise: first, Mark: admin.Mark{LSN: mark.LSN, Server: mark.Server + "0"}}); !errors.Is(err, admin.ErrServerChanged) || raised {
		t.Fatalf("ConfirmRaise of a raise read on another server: %v, %v; want ErrServerChanged", raised, err)
	}
	maxTTL, raised, err := st.ConfirmRaise(ctx, mark)
	if err != nil || !raised || maxTTL != first {
		t.Fatalf("ConfirmRaise(%s): %s, %v, %v; want the maximum raised to %s", first, maxTTL, raised, err, first)
	}
	tc, err := st.ReadConfig(ctx)
	if err != nil || tc.MaxTTL != first || tc.PendingMaxTTL != 5*time.Minute {
		t.Fatalf("after confirming %s: %+v, %v; want the maximum %s and 5m0s still pending", first, tc, err, first)
	}
}

func TestReadConfigOnMissingTable(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t)
	_, err := st.ReadConfig(ctxT(t))
	if !postgres.Fatal(err) || postgres.SQLSTATE(err) != "42P01" {
		t.Fatalf("ReadConfig on a missing table = %v, want Fatal 42P01", err)
	}
	if !strings.Contains(err.Error(), "snowflake_nodes") || !strings.Contains(err.Error(), "Schema.SQL") {
		t.Errorf("error %q does not name the table and the fix", err)
	}
}

func TestCheckSchemaFindsWrongColumnAndMissingPrivilege(t *testing.T) {
	t.Parallel()
	st, srv, dsn := newStore(t)
	ctx := ctxT(t)
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	db := st.DB()
	role := fmt.Sprintf("reader_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN;
		GRANT ALL ON snowflake_nodes, snowflake_nodes_history, snowflake_nodes_config TO %[1]s`, role)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Exec(context.Background(), "postgres", "DROP ROLE IF EXISTS "+role) })
	roleDB, err := sql.Open("pgx", strings.Replace(dsn, "postgres@", role+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer roleDB.Close()
	rs, _ := admin.New(roleDB, admin.DefaultConfig())
	err = rs.CheckSchema(ctx)
	if !postgres.Fatal(err) || !strings.Contains(err.Error(), "EXECUTE on function snowflake_nodes_claim()") {
		t.Fatalf("CheckSchema with every privilege on the tables and none on the functions = %v, want a Fatal error naming EXECUTE and the claim function", err)
	}
	grants, err := admin.GrantSQL(admin.DefaultTable, role, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "REVOKE ALL ON snowflake_nodes, snowflake_nodes_history, snowflake_nodes_config FROM "+role+";"+grants); err != nil {
		t.Fatal(err)
	}
	if err := rs.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema with the grants of a client: %v", err)
	}
	if _, err := db.ExecContext(ctx, `DROP TABLE snowflake_nodes_history;
		CREATE TABLE snowflake_nodes_history (node_id integer, epoch bigint)`); err != nil {
		t.Fatal(err)
	}
	err = st.CheckSchema(ctx)
	if !postgres.Fatal(err) || postgres.SQLSTATE(err) != "42703" {
		t.Fatalf("CheckSchema with missing columns = %v, want Fatal 42703", err)
	}
}

func TestHistoryWhoEvictPrune(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t, withNodes(0, 0))
	ctx := ctxT(t)
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	ttl := time.Minute
	// Claim 1 stamps up to 5000 and releases with that exact horizon.
	c1, err := st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "a", ttl, 1000)
	ok := c1.OK
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if c1.PrevHorizon != 0 || c1.Horizon != 1000 {
		t.Fatalf("claim 1 horizons %d -> %d", c1.PrevHorizon, c1.Horizon)
	}
	if o, err := st.Release(ctx, c1.Key, 5000); err != nil || !o.OK || o.Horizon != 5000 {
		t.Fatalf("release 1: %+v %v", o, err)
	}
	// Claim 2 promises 9000, for a second, then is evicted by an operator.
	c2, err := st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "b", time.Second, 9000)
	if err != nil || c2.PrevHorizon != 5000 || c2.Epoch != 2 {
		t.Fatalf("claim 2: %+v %v", c2, err)
	}
	if ev, err := st.Evict(ctx, 0, 1); err != nil || ev.OK {
		t.Fatalf("evicting an old epoch: %+v %v; want no change", ev, err)
	}
	ev, err := st.Evict(ctx, 0, 2)
	if err != nil || !ev.OK || ev.HorizonMs != 9000 || !ev.Expires.Equal(c2.Expires) || !ev.ClaimableAfter().Equal(c2.Expires) {
		t.Fatalf("evicting the current epoch: %+v, %v; want it done, horizon 9000, the lease's expiry %s kept", ev, err, c2.Expires)
	}
	if ev, _ := st.Evict(ctx, 0, 2); ev.OK {
		t.Fatal("evicting twice changed the row again")
	}
	// The evicted lease's holder may mint until its deadline: the row is
	// claimable once the lease has expired, not before.
	c3, err := st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "c", ttl, 20000)
	if err != nil || c3.OK || !c3.Refusal.Evicted || c3.Refusal.Cooling != 1 || c3.Refusal.Held != 0 {
		t.Fatalf("a claim before the evicted lease's expiry: %+v %v; want it refused, waiting for that expiry", c3, err)
	}
	// Claim 3 is open: its horizon is the row's.
	for !c3.OK {
		time.Sleep(20 * time.Millisecond) // a poll of the condition, not a wait for it
		if c3, err = st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "c", ttl, 20000); err != nil {
			t.Fatal(err)
		}
		// The refusal reads the table after the claim: once the expiry has
		// passed between the two, it finds nothing left to wait for, or,
		// within the expiry's millisecond, only that millisecond: the
		// refusal counts in whole milliseconds, which the server rounds
		// to, while the lease expires by the microsecond.
		expiryMs := c2.Expires.UnixMilli()
		lastMs := c3.Refusal.Cooling == 1 && (c3.Refusal.Until == expiryMs || c3.Refusal.Until == expiryMs+1)
		raced := c3.Refusal.Held == 0 && !c3.Refusal.Now.Before(c2.Expires) && (c3.Refusal.Cooling == 0 || lastMs)
		if !c3.OK && !c3.Refusal.Evicted && !raced {
			t.Fatalf("claim 3: %+v; want it refused only for the evicted lease's expiry", c3)
		}
	}
	if c3.PrevHorizon != 9000 || c3.Now.Before(c2.Expires) {
		t.Fatalf("claim 3: %+v; want it after %s, stamping after 9000", c3, c2.Expires)
	}

	for _, c := range []struct {
		ms   int64
		want string // owner, or "" for none
	}{
		{1, "a"}, {5000, "a"}, {5001, "b"}, {9000, "b"}, {9001, "c"}, {20000, "c"}, {20001, ""}, {0, ""},
	} {
		// The stamps are synthetic, near time zero, and the claims were
		// acquired now: a skew back to time zero leaves it to the horizons
		// to split the time line.
		who, err := st.Who(ctx, 0, c.ms, sinceTimeZero())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(who) != 0:
			t.Errorf("Who(ms %d) = %+v, want nobody", c.ms, who)
		case c.want != "" && (len(who) != 1 || who[0].Owner != c.want):
			t.Errorf("Who(ms %d) = %+v, want exactly %q", c.ms, who, c.want)
		}
	}
	hist, err := st.History(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hist {
		got = append(got, fmt.Sprintf("%d:%s:%s:%d-%d", h.Epoch, h.Owner, h.EndReason, h.FromMs, h.HorizonMs))
	}
	if want := "3:c::9000-20000 2:b:evicted:5000-9000 1:a:released:0-5000"; strings.Join(got, " ") != want {
		t.Errorf("history = %q, want %q", strings.Join(got, " "), want)
	}

	rows, now, err := st.List(ctx)
	if err != nil || len(rows) != 1 || rows[0].State(now) != admin.Held || rows[0].Owner != "c" {
		t.Fatalf("List = %+v at %v, %v", rows, now, err)
	}

	// Pruning keeps open claims and recent ones.
	if n, err := st.PruneHistory(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("prune older than 1h: %d, %v", n, err)
	}
	time.Sleep(10 * time.Millisecond)
	if n, err := st.PruneHistory(ctx, time.Millisecond); err != nil || n != 2 {
		t.Fatalf("prune older than 1ms: %d, %v; want the 2 ended claims", n, err)
	}
	if hist, _ := st.History(ctx, 0, 10); len(hist) != 1 || hist[0].Epoch != 3 {
		t.Fatalf("history after prune = %+v", hist)
	}
	if who, _ := st.Who(ctx, 0, 100, sinceTimeZero()); len(who) != 0 {
		t.Errorf("Who found a pruned claim: %+v", who)
	}
}

// A standby (recovery in progress) is retryable, as during a failover; a
// server that refuses the WAL functions is Fatal for an asynchronous table.
func TestReplicationErrorsClassified(t *testing.T) {
	standby := &pgconn.PgError{Code: "55000", Message: "recovery is in progress",
		Hint: "WAL control functions cannot be executed during recovery."}
	if !postgres.Retryable(standby) || postgres.Fatal(standby) {
		t.Errorf("a standby's refusal: Retryable %v, Fatal %v; want retryable", postgres.Retryable(standby), postgres.Fatal(standby))
	}
	aurora := &pgconn.PgError{Code: "55000", Message: "wal_level must be set to 'logical'"}
	if postgres.Retryable(aurora) {
		t.Errorf("a server that never allows the function is retryable")
	}
}

// A release never records a horizon below the one its claim stamped after,
// whatever last stamp its client gives: a client that stamped nothing and
// says 0 (as docs/sql.md's session does) leaves the next holder stamping
// after its predecessor's horizon, not after 0.
func TestReleaseKeepsTheHorizonItsClaimStampedAfter(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t, withNodes(0, 0))
	ctx := ctxT(t)
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	lo, hi := st.Config().MinNode, st.Config().MaxNode
	c1, err := st.Claim(ctx, lo, hi, "a", time.Minute, 1000)
	if err != nil || !c1.OK {
		t.Fatal(c1, err)
	}
	if o, err := st.Release(ctx, c1.Key, 5000); err != nil || !o.OK || o.Horizon != 5000 {
		t.Fatalf("release 1: %+v %v", o, err)
	}
	c2, err := st.Claim(ctx, lo, hi, "b", time.Minute, 2000)
	if err != nil || !c2.OK || c2.PrevHorizon != 5000 {
		t.Fatalf("claim 2: %+v %v; want it to stamp after 5000", c2, err)
	}
	for _, last := range []int64{0, 4999} {
		t.Run(fmt.Sprint(last), func(t *testing.T) {
			// A release below the claim's own horizon: the first records
			// 5000, and the retry finds the lease released.
			o, err := st.Release(ctx, c2.Key, last)
			if err != nil {
				t.Fatal(err)
			}
			if o.OK && o.Horizon != 5000 || !o.OK && o.EndReason != admin.EndReleased {
				t.Fatalf("release with last stamp %d: %+v; want the horizon 5000 its claim stamped after", last, o)
			}
		})
	}
	var horizon int64
	if err := st.DB().QueryRowContext(ctx, `SELECT horizon_ms FROM snowflake_nodes WHERE node_id = 0`).Scan(&horizon); err != nil || horizon != 5000 {
		t.Fatalf("the row's horizon after the release: %d, %v; want 5000", horizon, err)
	}
	c3, err := st.Claim(ctx, lo, hi, "c", time.Minute, 3000)
	if err != nil || !c3.OK || c3.PrevHorizon != 5000 {
		t.Fatalf("claim 3: %+v %v; want it to stamp after 5000, not after the 0 its predecessor sent", c3, err)
	}
}
