package admin

// Only a claim (and the refusal after a claim that found nothing) starts a
// generation; renewals and releases do not look at the server. What else
// must look: the DDL of nodeid init, before the table switches to
// synchronous replication, whose statements never look, and before it adds
// rows that a failover may have lost.

import (
	"testing"
	"time"
)

// mustSchemaSQL returns the DDL of s.
func mustSchemaSQL(t *testing.T, s Schema) string {
	t.Helper()
	ddl, err := s.SQL()
	if err != nil {
		t.Fatal(err)
	}
	return ddl
}

// honest is the horizon of a holder whose clock is right.
func honest(ttl time.Duration) func() int64 {
	return func() int64 { return time.Now().UnixMilli() + ttl.Milliseconds() }
}

// A failover that only renewals have seen, then a switch to synchronous
// replication. H1 holds node 0 on a short lease, Y node 1 on a long one;
// the standby has both claims, then receives nothing more. H1's lease
// lapses and Z claims node 0 on the primary, a claim the failover loses,
// and mints. The standby is promoted; Y renews there; no claim runs. The
// operator records sync (nodeid init --replication sync), and C claims
// node 0 while Z may still mint: C must be quarantined past Z's horizon.
func TestSwitchToSyncAfterAFailoverNoClaimSaw(t *testing.T) {
	t.Parallel()
	const short, ttl = 2 * time.Second, 30 * time.Second
	pair, dbName := rangePair(t, 1, ttl)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	claimNodeWithin(t, p, 0, "h1", short, honest(short), 0)
	y := claimNodeWithin(t, p, 1, "y", ttl, honest(ttl), 0)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut() // the standby receives nothing more
	z := claimNodeWithin(t, p, 0, "z", ttl, honest(ttl), 5*short)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	if o, err := s.Renew(ctx, y.Key, ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !o.OK {
		t.Fatalf("Y's renewal on the new primary: %+v, %v", o, err)
	}
	if err := pair.Standby.Exec(ctx, dbName, mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 1, MaxTTL: ttl, Replication: Sync})); err != nil {
		t.Fatal(err)
	}
	c := storeOn(t, pair.Standby.DSN(dbName), 0)
	res, err := c.Claim(ctx, 0, 0, "c", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	switch {
	case err != nil:
		t.Fatal(err)
	case res.OK:
		t.Errorf("C claimed node 0 on the new primary, now sync: epoch %d (Z's, lost: %d), stamping after %d, inside Z's range (%d, %d]",
			res.Epoch, z.Epoch, res.PrevHorizon, z.PrevHorizon, z.Horizon)
	case !res.Refusal.Quarantined || res.Refusal.Until < z.Horizon:
		t.Errorf("C refused, but not quarantined past Z's horizon %d: %+v", z.Horizon, res.Refusal)
	}
}

// A move (another system identifier) that only renewals have seen, then a
// switch to sync: the restore waits to be declared, as it would had a
// claim seen the move.
func TestSwitchToSyncAfterAMoveNoClaimSaw(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	pair, dbName := rangePair(t, 1, ttl)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	y := claimNodeWithin(t, p, 1, "y", ttl, honest(ttl), 0)
	// The table records another system identifier: it was restored here.
	if err := pair.Primary.Exec(ctx, dbName, `UPDATE `+ConfigTable(DefaultTable)+` SET server_id = server_id + 1`); err != nil {
		t.Fatal(err)
	}
	if o, err := p.Renew(ctx, y.Key, ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !o.OK {
		t.Fatalf("Y's renewal: %+v, %v", o, err)
	}
	if err := pair.Primary.Exec(ctx, dbName, mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 1, MaxTTL: ttl, Replication: Sync})); err != nil {
		t.Fatal(err)
	}
	c := storeOn(t, pair.Primary.DSN(dbName), 0)
	res, err := c.Claim(ctx, 0, 0, "c", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	switch {
	case err != nil:
		t.Fatal(err)
	case res.OK:
		t.Errorf("C claimed node 0 (epoch %d) on a moved copy whose restore was never declared", res.Epoch)
	case !res.Refusal.RestorePending:
		t.Errorf("C refused, but not for the restore to declare: %+v", res.Refusal)
	}
}

// A widening of the range lost in a failover with a claim of a row it
// added; on the new primary a claim starts the generation, and the range
// is widened again. The row added again must be quarantined as every older
// row is, and its first claim take an epoch of the new era.
func TestWideningAfterAFailoverQuarantinesTheNewRows(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	pair, dbName := protocolPair(t, ttl) // node 0 only
	ctx := ctxOf(t)
	widen := mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 1, MaxTTL: ttl})
	pair.Repl.Cut() // the standby receives nothing more
	if err := pair.Primary.Exec(ctx, dbName, widen); err != nil {
		t.Fatal(err)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	z := claimNodeWithin(t, p, 1, "z", ttl, honest(ttl), 0)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	if res, err := s.Claim(ctx, 0, 0, "w", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || res.OK {
		t.Fatalf("W's claim of node 0 on the new primary: %+v, %v; want refused, quarantined", res, err)
	}
	if err := pair.Standby.Exec(ctx, dbName, widen); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, 1, 1, "c", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	switch {
	case err != nil:
		t.Fatal(err)
	case res.OK && (res.Epoch <= z.Epoch || res.PrevHorizon < z.Horizon):
		t.Errorf("C claimed node 1 on the new primary: epoch %d (Z's, lost: %d), stamping after %d, inside Z's range (%d, %d]",
			res.Epoch, z.Epoch, res.PrevHorizon, z.PrevHorizon, z.Horizon)
	case !res.OK && (!res.Refusal.Quarantined || res.Refusal.Until < z.Horizon):
		t.Errorf("C refused, but not quarantined past Z's horizon %d: %+v", z.Horizon, res.Refusal)
	}
}
