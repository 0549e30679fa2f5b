package admin

import (
	"database/sql"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
)

// E1: a commit acknowledged to its client that the server promoted next
// lacks. A table that records sync, a synchronous standby. A's claim starts
// while the standby is synchronous and streaming (a lock on the history
// holds it before its commit), and only then does the standby stop
// receiving, so that nothing the claim read could have seen it: its commit
// waits in SyncRep until an operator
// cancels the wait (pg_cancel_backend, as JDBC's setQueryTimeout and libpq's
// PQcancel do): PostgreSQL then returns the claim, committed locally only,
// and A mints. The primary crashes and the standby, which lacks the claim,
// is promoted. B's claim of node 0 there must not get A's epoch or stamp
// inside A's range: it is quarantined past A's horizon.
//
// An earlier version trusted a table that records sync never to lose an
// acknowledged commit and ran no generation check on it: B claimed node 0
// at A's epoch at once, while A could still mint.
func TestCancelledSyncWaitLostInAFailover(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	pair, dbName := replicatedTable(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl, Replication: Sync})
	ctx := ctxOf(t)
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`} {
		if err := pair.Primary.Exec(ctx, dbName, q); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := sql.Open("pgx", pair.Primary.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	testkit.Until(t, 30*time.Second, "the standby is synchronous", testkit.True(func() bool {
		var n int
		return admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`).Scan(&n) == nil && n == 1
	}))
	hold, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback() //nolint:errcheck // committed below
	if _, err := hold.ExecContext(ctx, `LOCK TABLE `+HistoryTable(DefaultTable)+` IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	type answer struct {
		res ClaimResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := p.Claim(ctx, 0, 0, "a", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
		done <- answer{res, err}
	}()
	testkit.Until(t, 30*time.Second, "A's claim has started, and waits for the lock on the history", testkit.True(func() bool {
		var n int
		err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '-- nodeid claim%'`).Scan(&n)
		return err == nil && n == 1
	}))
	pair.Repl.Cut() // the standby receives nothing more: the claim's commit waits in SyncRep
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "A's claim waits for the synchronous standby, and its wait is cancelled", testkit.True(func() bool {
		var cancelled int
		err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity, pg_cancel_backend(pid) AS c
            WHERE wait_event = 'SyncRep' AND query LIKE '-- nodeid claim%' AND c`).Scan(&cancelled)
		return err == nil && cancelled > 0
	}))
	a := <-done
	if a.err != nil || !a.res.OK {
		t.Fatalf("A's claim, its synchronous wait cancelled: %+v, %v; PostgreSQL returns it committed locally", a.res, a.err)
	}
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	var epoch int64
	if err := s.DB().QueryRowContext(ctx, `SELECT epoch FROM `+DefaultTable+` WHERE node_id = 0`).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	if epoch >= a.res.Epoch {
		t.Fatalf("the promoted standby has A's claim (epoch %d, A's %d): the failover lost nothing, and the test shows nothing", epoch, a.res.Epoch)
	}
	res, err := s.Claim(ctx, 0, 0, "b", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	switch {
	case err != nil:
		t.Fatal(err)
	case res.OK:
		t.Errorf("B claimed node 0 on the new primary at epoch %d (A's, lost: %d), stamping after %d, inside A's range (%d, %d]",
			res.Epoch, a.res.Epoch, res.PrevHorizon, a.res.PrevHorizon, a.res.Horizon)
	case !res.Refusal.Quarantined || res.Refusal.Until < a.res.Horizon:
		t.Errorf("B refused, but not quarantined past A's horizon %d: %+v", a.res.Horizon, res.Refusal)
	}
	b := claimWithin(t, s, "b", ttl, honest(ttl), 3*ttl)
	if b.Epoch <= a.res.Epoch || b.PrevHorizon < a.res.Horizon {
		t.Errorf("B's claim after the quarantine: epoch %d (A's %d), stamping after %d (A's horizon %d)", b.Epoch, a.res.Epoch, b.PrevHorizon, a.res.Horizon)
	}
}
