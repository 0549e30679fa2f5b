package admin

// The holes a review found in the rules of an earlier version, as black-box
// tests at the statement level, with a real promotion of a real standby:
// each failed on that version (docs/protocol.md, "What the model found").

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// protocolPair starts a primary and an asynchronous standby with a table of
// node ID 0 whose maximum TTL is maxTTL, replicated, and returns the
// database's name.
func protocolPair(t *testing.T, maxTTL time.Duration) (*pgtest.Pair, string) {
	t.Helper()
	return rangePair(t, 0, maxTTL)
}

// rangePair is protocolPair for a table of node IDs 0 to maxNode.
func rangePair(t *testing.T, maxNode int64, maxTTL time.Duration) (*pgtest.Pair, string) {
	t.Helper()
	return replicatedTable(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: maxNode, MaxTTL: maxTTL})
}

// replicatedTable starts a primary and an asynchronous standby with the
// table of schema, replicated and its creation confirmed, and returns the
// database's name.
func replicatedTable(t *testing.T, schema Schema) (*pgtest.Pair, string) {
	t.Helper()
	ctx := ctxOf(t)
	pair := pgtest.NewPair(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Primary.Exec(ctx, dbName, mustSchemaSQL(t, schema)); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := storeOn(t, pair.Primary.DSN(dbName), 0).SettleCreation(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return pair, dbName
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// storeOn returns a Store on dsn whose statements read the server's clock
// shifted by offset.
func storeOn(t *testing.T, dsn string, offset time.Duration) *Store {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var clock *strings.Replacer
	if offset != 0 {
		shift := fmt.Sprintf(" + interval '%d ms')", offset.Milliseconds())
		clock = strings.NewReplacer("now()", "(now()"+shift, "clock_timestamp()", "(clock_timestamp()"+shift,
			"statement_timestamp()", "(statement_timestamp()"+shift)
	}
	st, err := newStore(db, DefaultConfig(), clock)
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		if err := installClock(ctxOf(t), db, DefaultConfig().Table, clock); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// claimWithin claims node ID 0 for owner, trying again while it is not
// claimable, until it is claimed or within ends.
func claimWithin(t *testing.T, st *Store, owner string, ttl time.Duration, horizon func() int64, within time.Duration) Claim {
	t.Helper()
	return claimNodeWithin(t, st, 0, owner, ttl, horizon, within)
}

// claimNodeWithin claims node ID node for owner, trying again while it is
// not claimable, until it is claimed or within ends.
func claimNodeWithin(t *testing.T, st *Store, node int64, owner string, ttl time.Duration, horizon func() int64, within time.Duration) Claim {
	t.Helper()
	ctx := ctxOf(t)
	end := time.Now().Add(within)
	for {
		res, err := st.Claim(ctx, node, node, owner, ttl, horizon())
		if err != nil {
			t.Fatalf("claim of node %d for %s: %v", node, owner, err)
		}
		if res.OK {
			return res.Claim
		}
		if time.Now().After(end) {
			t.Fatalf("claim of node %d for %s: refused for %s: %+v", node, owner, within, res.Refusal)
		}
		time.Sleep(50 * time.Millisecond) // a poll of the condition
	}
}

// F2, case 1. Holder H1's wall clock is well behind; it claims node ID 0
// and the standby replays the claim, then receives nothing more. On the
// primary an operator evicts H1, and B claims the node ID as soon as it can
// and mints. The primary stops, the standby is promoted: it shows H1's
// lease. H1, on its own clock still before its deadline, renews there and
// then releases, and C claims. No two of them may stamp the same
// millisecond, and C's epoch must be above every epoch either history
// granted.
//
// An earlier version freed an evicted row at the evicted holder's horizon
// (early, for a clock behind) and let a renewal and a release record the
// new generation in the row: B claimed while H1 could still mint, H1's
// renewal on the new primary raised its horizon into B's range, its
// release lifted the quarantine, and C claimed at once at B's epoch.
func TestEvictionLostInAFailoverDuplicatesNothing(t *testing.T) {
	t.Parallel()
	const ttl, behind = 6 * time.Second, 4500 * time.Millisecond
	pair, dbName := protocolPair(t, ttl)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	h1Clock := func() int64 { return time.Now().Add(-behind).UnixMilli() }
	h1 := claimWithin(t, p, "h1", ttl, func() int64 { return h1Clock() + ttl.Milliseconds() }, 0)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut() // from here on the standby receives nothing
	if ev, err := p.Evict(ctx, 0, h1.Epoch); err != nil || !ev.OK {
		t.Fatalf("evict H1: %+v, %v", ev, err)
	}
	b := claimWithin(t, p, "b", ttl, func() int64 { return time.Now().UnixMilli() + ttl.Milliseconds() }, 2*ttl)
	t.Logf("H1 epoch %d, horizon %d, expires %s; B claimed %s after H1, epoch %d, stamps (%d, %d]",
		h1.Epoch, h1.Horizon, h1.Expires.Format(time.StampMilli), b.Now.Sub(h1.Now).Round(time.Millisecond), b.Epoch, b.PrevHorizon, b.Horizon)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	// H1 may mint while its clock is before its deadline: it renews, then
	// releases with the latest millisecond it stamped.
	h1Max := h1.Horizon // what H1 may stamp
	if o, err := s.Renew(ctx, h1.Key, ttl, h1Clock()+ttl.Milliseconds()); err != nil {
		t.Fatal(err)
	} else if o.OK {
		h1Max = max(h1Max, o.Horizon)
		t.Logf("H1 renewed on the new primary: horizon %d", o.Horizon)
	}
	if _, err := s.Release(ctx, h1.Key, h1Clock()); err != nil {
		t.Fatal(err)
	}
	c := claimWithin(t, s, "c", ttl, func() int64 { return time.Now().UnixMilli() + ttl.Milliseconds() }, 3*ttl)
	t.Logf("C claimed epoch %#x, stamping after %d", c.Epoch, c.PrevHorizon)
	if h1Max > b.PrevHorizon && b.Now.Before(h1.Expires) {
		t.Errorf("H1 may stamp up to %d, B after %d: B claimed at %s, while H1's lease was unexpired (until %s)",
			h1Max, b.PrevHorizon, b.Now.Format(time.StampMilli), h1.Expires.Format(time.StampMilli))
	}
	if c.Epoch <= max(b.Epoch, h1.Epoch) {
		t.Errorf("C's epoch %#x is not above B's %#x: an epoch of the lost history was granted again", c.Epoch, b.Epoch)
	}
	if c.PrevHorizon < max(b.Horizon, h1Max) {
		t.Errorf("C stamps after %d, inside what B (up to %d) or H1 (up to %d) may have stamped", c.PrevHorizon, b.Horizon, h1Max)
	}
}

// F2, case 2. H1's lease lapses on the primary and B takes the node ID
// over; the standby has H1's claim only. After the promotion a release H1
// sends late (Close releases a lease that passed its deadline) reaches the
// new primary, whose clock is behind the old one's, within a tenth of the
// maximum TTL: there H1's lease has not expired yet, and the release frees
// the row. The next claim must still wait for the quarantine, and take an
// epoch above B's. An earlier version recorded the new generation at the
// release, lifting the quarantine: C claimed at once at B's epoch.
func TestLateReleaseOnANewPrimaryLiftsNoQuarantine(t *testing.T) {
	t.Parallel()
	const ttl, maxTTL = 3 * time.Second, 2 * time.Minute
	pair, dbName := protocolPair(t, maxTTL)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	horizon := func() int64 { return time.Now().UnixMilli() + ttl.Milliseconds() }
	h1 := claimWithin(t, p, "h1", ttl, horizon, 0)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut()
	b := claimWithin(t, p, "b", ttl, horizon, 3*ttl) // once H1's lease has lapsed
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	// The new primary's clock is behind the old one's by a tenth of the
	// maximum TTL, as far as the servers' clocks may be apart.
	s := storeOn(t, pair.Standby.DSN(dbName), -maxTTL/10)
	if d := time.Since(h1.Expires); d > maxTTL/10 {
		t.Fatalf("the promotion took %s: H1's lease cannot be unexpired on a new primary whose clock is at most %s behind", d, maxTTL/10)
	}
	o, err := s.Release(ctx, h1.Key, h1.Horizon)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("H1's late release on the new primary: %+v", o)
	res, err := s.Claim(ctx, 0, 0, "c", ttl, horizon())
	if err != nil {
		t.Fatal(err)
	}
	if res.OK {
		if res.Epoch <= b.Epoch || res.PrevHorizon < b.Horizon {
			t.Errorf("C claimed at once after H1's late release: epoch %#x (B's %#x), stamping after %d, inside B's range up to %d",
				res.Epoch, b.Epoch, res.PrevHorizon, b.Horizon)
		}
		return
	}
	if !res.Refusal.Quarantined || res.Refusal.Until < b.Horizon {
		t.Errorf("C's claim refused: %+v; want the quarantine, past B's horizon %d", res.Refusal, b.Horizon)
	}
}

// waitStandbysReport waits until st's server reports every standby past
// WAL position lsn. The primary learns how far a standby has replayed from
// its feedback, sent every few seconds: the tests wait for it, as init
// does.
func waitStandbysReport(t *testing.T, st *Store, m Mark) {
	t.Helper()
	testkit.Until(t, time.Minute, "the standbys report they have replayed "+m.LSN, func() error {
		_, sbs, err := st.Standbys(ctxOf(t), m)
		if err != nil || len(sbs) == 0 {
			return testkit.Stop(fmt.Errorf("standbys: %+v, %v", sbs, err))
		}
		for _, sb := range sbs {
			if !sb.Caught {
				return fmt.Errorf("standby %+v has not replayed it", sb)
			}
		}
		return nil
	})
}

// A raise confirmed beyond what the standbys have. Operator A raises the
// maximum TTL and waits until the standby has replayed the raise; operator
// B raises it again, which the standby never receives; A's confirmation
// follows. It must confirm A's raise only: had it made B's the maximum, H1
// could claim for B's TTL, and after a failover to the standby, which
// quarantines for A's raise only, C would claim while H1 may still mint.
func TestConfirmRaiseConfirmsOnlyWhatTheStandbysHave(t *testing.T) {
	t.Parallel()
	const short, raiseA, raiseB = 6 * time.Second, 20 * time.Second, time.Minute
	pair, dbName := protocolPair(t, short)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	raise := func(maxTTL time.Duration) {
		t.Helper()
		ddl, err := Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: maxTTL}.SQL()
		if err != nil {
			t.Fatal(err)
		}
		if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
			t.Fatal(err)
		}
	}
	raise(raiseA)
	mark, err := p.PendingRaise(ctx) // nodeid init, for A's raise
	pending := mark.Raise
	if err != nil || pending != raiseA {
		t.Fatalf("PendingRaise: %s, %v; want %s", pending, err, raiseA)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	waitStandbysReport(t, p, mark.Mark)
	pair.Repl.Cut() // the standby receives nothing more
	raise(raiseB)   // operator B, meanwhile
	maxTTL, raised, err := p.ConfirmRaise(ctx, mark)
	if err != nil || !raised || maxTTL != raiseA {
		t.Fatalf("ConfirmRaise(%s): %s, %v, %v; want the maximum %s, %s still pending", pending, maxTTL, raised, err, raiseA, raiseB)
	}
	// A claim for B's TTL is refused; one for A's succeeds.
	if res, err := p.Claim(ctx, 0, 0, "h1", raiseB, time.Now().UnixMilli()+raiseB.Milliseconds()); err != nil || res.OK || !res.Refusal.TTLAbove {
		t.Fatalf("a claim for %s, above the confirmed maximum: %+v, %v; want refused, TTL above the maximum", raiseB, res, err)
	}
	h1 := claimWithin(t, p, "h1", raiseA, func() int64 { return time.Now().UnixMilli() + raiseA.Milliseconds() }, 0)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	res, err := s.Claim(ctx, 0, 0, "c", short, time.Now().UnixMilli()+short.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || time.UnixMilli(res.Refusal.Until).Before(h1.Expires) {
		t.Errorf("node 0 is claimable on the new primary from %s (claimed: %v), before H1's lease of %s expires (%s)",
			time.UnixMilli(res.Refusal.Until).Format(time.StampMilli), res.OK, raiseA, h1.Expires.Format(time.StampMilli))
	}
}

// A raise confirmed across a failover. nodeid init reads the pending raise
// and a WAL position on the primary P, and waits for the standbys to
// replay the position; meanwhile P fails and S1, which lacks the raise, is
// promoted. On S1's timeline the position means nothing: S1's own standby
// S2 passes it while lacking a raise to the same value made on S1 since.
// Confirmed there, that raise would let H1 claim for its TTL on S1, and
// after a failover to S2, which quarantines for the old maximum only, C
// would claim while H1 may still mint. The confirmation must refuse on a
// server other than the one the raise was read on.
func TestConfirmRaiseAcrossAFailover(t *testing.T) {
	t.Parallel()
	const short, raiseTo = 6 * time.Second, time.Minute
	pair, dbName := protocolPair(t, short)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	ddl, err := Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: raiseTo}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut() // S1 does not receive the raise
	if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
		t.Fatal(err)
	}
	mark, err := p.PendingRaise(ctx) // nodeid init
	if err != nil || mark.Raise != raiseTo {
		t.Fatalf("PendingRaise: %+v, %v; want %s", mark, err, raiseTo)
	}
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s1 := storeOn(t, pair.Standby.DSN(dbName), 0)
	// S1's own writes carry its WAL past the position read on P.
	if err := pair.Standby.Exec(ctx, dbName, `CREATE TABLE filler (x int)`); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, time.Minute, "S1's WAL passes "+mark.LSN, func() error {
		if err := pair.Standby.Exec(ctx, dbName, `INSERT INTO filler SELECT generate_series(1, 2000)`); err != nil {
			return testkit.Stop(err)
		}
		var past bool
		if err := s1.DB().QueryRowContext(ctx, `SELECT pg_current_wal_lsn() > $1::pg_lsn`, mark.LSN).Scan(&past); err != nil {
			return testkit.Stop(err)
		}
		if !past {
			return errors.New("not yet")
		}
		return nil
	})
	// S2, S1's standby, replays that far, then receives nothing more,
	// its replication connection held open (its slot on S1 stays taken).
	s2 := pair.AddStandbyOfStandby(t, "s2")
	if err := s2.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	var s2Slot string
	testkit.Until(t, time.Minute, "S2 to stream from its slot on S1 and report it has replayed "+mark.LSN, func() error {
		err := s1.DB().QueryRowContext(ctx, `SELECT s.slot_name || ':' || s.active_pid
			FROM pg_replication_slots AS s JOIN pg_stat_replication AS r ON r.pid = s.active_pid
			WHERE s.slot_name = 'pgtest_standby_s2' AND r.replay_lsn >= $1::pg_lsn`, mark.LSN).Scan(&s2Slot)
		if errors.Is(err, sql.ErrNoRows) {
			return errors.New("not yet")
		}
		return testkit.Stop(err)
	})
	s2.Repl.Blackhole()
	if err := pair.Standby.Exec(ctx, dbName, ddl); err != nil { // the same raise, made again on S1
		t.Fatal(err)
	}
	// Every standby of S1 is past the position read on P (S2's slot
	// counts as one of the mark's, as held by the process that holds it
	// now: a slot's name says nothing of its server, and a new primary
	// makes slots of the names the old one had, as Patroni does): the
	// wait, reading them on S1, refuses, and so does the confirmation,
	// reaching S1.
	onS1 := mark.Mark
	onS1.Slots = append(onS1.Slots[:len(onS1.Slots):len(onS1.Slots)], s2Slot)
	if _, sbs, err := s1.Standbys(ctx, onS1); !errors.Is(err, ErrServerChanged) {
		t.Errorf("S1's standbys for the mark read on P: %+v, %v; want ErrServerChanged", sbs, err)
	}
	anywhere := onS1 // the positions alone, wherever they are read
	anywhere.Server = ""
	waitStandbysReport(t, s1, anywhere)
	maxTTL, raised, err := s1.ConfirmRaise(ctx, mark)
	if !errors.Is(err, ErrServerChanged) || raised {
		t.Errorf("ConfirmRaise on S1 of the raise read on P: maximum %s, raised %v, %v; want ErrServerChanged", maxTTL, raised, err)
	}
	if tc, err := s1.ReadConfig(ctx); err != nil || tc.MaxTTL != short || tc.PendingMaxTTL != raiseTo {
		t.Errorf("S1's configuration: %+v, %v; want the maximum %s and %s pending", tc, err, short, raiseTo)
	}
	// Read again on S1, the raise's position is one S2 lacks: init waits.
	again, err := s1.PendingRaise(ctx)
	if err != nil || again.Raise != raiseTo || again.Server == mark.Server {
		t.Fatalf("PendingRaise on S1: %+v, %v; want %s read on another server than %s", again, err, raiseTo, mark.Server)
	}
	if _, sbs, err := s1.Standbys(ctx, again.Mark); err != nil || len(sbs) == 0 || sbs[0].Caught {
		t.Errorf("S1's standbys for the raise read on S1: %+v, %v; want S2 behind", sbs, err)
	}
}

// A failover after a declared restore. The table came from another
// cluster (another system identifier) whose maximum TTL is shorter than
// the leases its old history may hold; the operator declares the restore
// with that bound, the declaration replicates, and the new cluster fails
// over to its standby. The failover's generation must not end the
// declared quarantine sooner: a quarantine of the copy's maximum TTL from
// the failover would let C claim while a holder of the old history may
// still mint.
func TestFailoverAfterADeclaredRestoreKeepsItsQuarantine(t *testing.T) {
	t.Parallel()
	const short, declared = 6 * time.Second, time.Minute
	pair, dbName := protocolPair(t, short)
	ctx := ctxOf(t)
	// The table records another system identifier: it was restored here.
	if err := pair.Primary.Exec(ctx, dbName, `UPDATE `+ConfigTable(DefaultTable)+` SET server_id = server_id + 1`); err != nil {
		t.Fatal(err)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	res, err := p.Claim(ctx, 0, 0, "a", short, time.Now().UnixMilli()+short.Milliseconds())
	if err != nil || res.OK || !res.Refusal.RestorePending {
		t.Fatalf("a claim on the moved copy: %+v, %v; want refused, the restore pending", res, err)
	}
	_, until, err := p.Restored(ctx, declared)
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	// The list, before any claim has seen the failover, shows the
	// quarantine that claim will start: never sooner than the declared one.
	rows, _, err := s.List(ctx)
	if err != nil || len(rows) != 1 || rows[0].QuarantinedUntil.Before(until) {
		t.Errorf("the list after the failover: %+v, %v; want node 0 quarantined until the declared end %s", rows, err, until.Format(time.StampMilli))
	}
	res, err = s.Claim(ctx, 0, 0, "c", short, time.Now().UnixMilli()+short.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := s.ReadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || tc.QuarantineUntil.Before(until) || time.UnixMilli(res.Refusal.Until).Before(until) {
		t.Errorf("after the failover: claimed %v, quarantine until %s, node 0 claimable from %s; the declared quarantine ends at %s",
			res.OK, tc.QuarantineUntil.Format(time.StampMilli), time.UnixMilli(res.Refusal.Until).Format(time.StampMilli), until.Format(time.StampMilli))
	}
}

// Two standbys of one primary promoted one after the other, the second
// never having streamed from the first (no WAL archive between them), take
// the same timeline: PostgreSQL numbers a promotion's timeline one above
// the newest it knows of. P raises the maximum TTL; both standbys replay
// it. P fails, S1 is promoted (timeline 2), and nodeid init reads the raise
// there and waits for S1's standbys. S1 fails in turn and S2 is promoted
// (timeline 2 again): the confirmation reaching S2 must find another server
// (the servers' starts differ), or it would confirm the raise without
// anyone having looked at S2's standbys.
func TestConfirmRaiseOnATwinTimeline(t *testing.T) {
	t.Parallel()
	const short, raiseTo = 6 * time.Second, time.Minute
	pair, dbName := protocolPair(t, short)
	ctx := ctxOf(t)
	twin := pair.AddStandby(t, "s2")
	if err := twin.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	if err := pair.Primary.Exec(ctx, dbName, mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: raiseTo})); err != nil {
		t.Fatal(err)
	}
	if tc, err := p.ReadConfig(ctx); err != nil || tc.PendingMaxTTL != raiseTo {
		t.Fatalf("the raise on P: %+v, %v", tc, err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := twin.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pair.FailOver(ctx); err != nil { // P fails, S1 is promoted
		t.Fatal(err)
	}
	s1 := storeOn(t, pair.Standby.DSN(dbName), 0)
	mark, err := s1.PendingRaise(ctx) // nodeid init, on S1
	if err != nil || mark.Raise != raiseTo {
		t.Fatalf("PendingRaise on S1: %+v, %v", mark, err)
	}
	// S1 takes writes of its own (its history is not S2's), then fails.
	if err := pair.Standby.Exec(ctx, dbName, `CREATE TABLE s1_only (x int)`); err != nil {
		t.Fatal(err)
	}
	if err := pair.Standby.Stop(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := twin.Promote(ctx); err != nil { // S2, which never streamed from S1
		t.Fatal(err)
	}
	s2 := storeOn(t, twin.Standby.DSN(dbName), 0)
	var s1Only bool
	if err := s2.DB().QueryRowContext(ctx, `SELECT to_regclass('s1_only') IS NOT NULL`).Scan(&s1Only); err != nil || s1Only {
		t.Fatalf("S2 has S1's writes (%v, %v): not a twin", s1Only, err)
	}
	again, err := s2.PendingRaise(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mark read on S1: server %s, position %s; S2 is %s", mark.Server, mark.LSN, again.Server)
	maxTTL, raised, err := s2.ConfirmRaise(ctx, mark)
	if !errors.Is(err, ErrServerChanged) {
		t.Errorf("ConfirmRaise on S2 of the raise read on S1 (another server, another history on the same timeline number %s): maximum %s, raised %v, err %v; want ErrServerChanged",
			again.Server, maxTTL, raised, err)
	}
}

// Two declared restores with a move between them. The first declaration (a
// copy older than a raise: D = 1 min) quarantines every node ID until F1.
// Before F1, the table is moved to another cluster (a dump, an upgrade),
// which the DDL (nodeid init) sees first: its generation check, like a
// claim's, leaves quarantine_until_ms unset until the next declaration,
// whose D is the copy's maximum TTL. "A second declaration never shortens
// the first's quarantine": when the move forgot F1, C claimed node 0 59 s
// before F1.
func TestAMoveKeepsTheDeclaredQuarantine(t *testing.T) {
	t.Parallel()
	const short, declared = 6 * time.Second, time.Minute
	pair, dbName := protocolPair(t, short)
	ctx := ctxOf(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	// move makes the table record another system identifier (it was
	// restored here), which a claim or the DDL sees first.
	move := func(byDDL bool) {
		t.Helper()
		if err := pair.Primary.Exec(ctx, dbName, `UPDATE `+ConfigTable(DefaultTable)+` SET server_id = server_id + 1`); err != nil {
			t.Fatal(err)
		}
		if byDDL {
			if err := p.Apply(ctx, short); err != nil {
				t.Fatal(err)
			}
		}
		res, err := p.Claim(ctx, 0, 0, "a", short, time.Now().UnixMilli()+short.Milliseconds())
		if err != nil || res.OK || !res.Refusal.RestorePending {
			t.Fatalf("a claim on the moved copy: %+v, %v; want refused, the restore pending", res, err)
		}
	}
	move(false)
	_, f1, err := p.Restored(ctx, declared)
	if err != nil {
		t.Fatal(err)
	}
	move(true)
	_, f2, err := p.Restored(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	if f2.Before(f1) {
		t.Errorf("the first declaration quarantined node 0 until %s; after the move the second's ends at %s, %s sooner",
			f1.Format(time.StampMilli), f2.Format(time.StampMilli), f1.Sub(f2).Round(time.Millisecond))
	}
	res, err := p.Claim(ctx, 0, 0, "c", short, time.Now().UnixMilli()+short.Milliseconds())
	if err != nil || res.OK || !res.Refusal.Quarantined || res.Refusal.Until < f1.UnixMilli() {
		t.Errorf("a claim after the second declaration: %+v, %v; want it refused, quarantined until the first's end %s", res, err, f1.Format(time.StampMilli))
	}
}

// A table's creation lost in a failover. The table is created on a
// primary whose standby receives nothing; the primary fails and the
// standby, promoted, has no table, and the table is created again there.
// The first table must have handed out nothing: its next holder on the
// new table takes node 0 at epoch 1 and stamps at once, and a claim made
// in the lost table had the same node ID and epoch, stamping in the same
// range. The creation is pending until the standby has replayed it, and
// no claim is made meanwhile; when it confirmed at once, a claim took
// node 0 at epoch 1 in the lost table, 5.7 s inside the range that the
// new table's claim then stamped.
func TestALostCreationHandedOutNothing(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	pair.Repl.Cut()
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	if created, err := p.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	if tc, err := p.ReadConfig(ctx); err != nil || !tc.CreationPending {
		t.Errorf("a table created on a primary with a standby: %+v, %v; want its creation pending", tc, err)
	}
	lost, err := p.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	if lost.OK || !lost.Refusal.CreationPending {
		t.Errorf("a claim in a creation the standby lacks: %+v; want a refusal, the creation pending", lost)
	}
	// The standby, cut off, never replays it: the creation stays pending.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var behind *StandbysBehindError
	if err := p.SettleCreation(short, nil); !errors.As(err, &behind) || len(behind.Behind) == 0 {
		t.Errorf("SettleCreation with the standby cut off: %v; want the standbys behind named", err)
	}
	recreateAfterFailover(t, ctx, pair, dbName, lost, ttl)
}

// A creation the standby has replayed is confirmed, on the server it was
// read on only; a switch to sync confirms it too. On a server without
// standbys or slots, Create confirms its creation at once, and a creation
// by the DDL alone (a migration tool) is pending until the first
// SettleCreation, which confirms it without waiting.
func TestCreationConfirmedOnceReplayed(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	if created, err := p.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	mark, err := p.PendingCreation(ctx)
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	if ok, err := p.ConfirmCreation(ctx, CreationMark{Pending: true, Mark: Mark{LSN: mark.LSN, Server: mark.Server + "x"}}); !errors.Is(err, ErrServerChanged) || ok {
		t.Errorf("ConfirmCreation of a mark read on another server: %v, %v; want ErrServerChanged", ok, err)
	}
	var seen []Standby
	if err := p.SettleCreation(ctx, func(_ string, sbs []Standby) { seen = sbs }); err != nil {
		t.Fatal(err)
	}
	t.Logf("standbys waited for: %s", Labels(seen))
	if tc, err := p.ReadConfig(ctx); err != nil || tc.CreationPending {
		t.Fatalf("after SettleCreation: %+v, %v; want the creation confirmed", tc, err)
	}
	if res, err := p.Claim(ctx, 0, 0, "h", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !res.OK {
		t.Fatalf("a claim once the creation is confirmed: %+v, %v", res, err)
	}

	// A switch to sync confirms nothing on a server that tells its
	// identity: a synchronous standby may lack an acknowledged commit too.
	sw := Config{Table: "switched", MinNode: 0, MaxNode: 0}
	st, err := New(p.DB(), sw)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyMode(ctx, ttl, ""); err != nil {
		t.Fatal(err)
	}
	if tc, err := st.ReadConfig(ctx); err != nil || !tc.CreationPending {
		t.Fatalf("a second table: %+v, %v; want its creation pending", tc, err)
	}
	if err := st.ApplyMode(ctx, ttl, Sync); err != nil {
		t.Fatal(err)
	}
	if tc, err := st.ReadConfig(ctx); err != nil || !tc.CreationPending || !tc.Watched {
		t.Fatalf("after the switch to sync: %+v, %v; want the table watched and its creation still pending", tc, err)
	}

	// Without standbys or slots, nothing is pending.
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	alone, err := New(storeOn(t, pair.Standby.DSN(dbName), 0).DB(), Config{Table: "alone", MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	if created, err := alone.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	if tc, err := alone.ReadConfig(ctx); err != nil || tc.CreationPending {
		t.Fatalf("a table created on a server without standbys: %+v, %v; want it not pending", tc, err)
	}
	byDDL, err := New(alone.DB(), Config{Table: "by_ddl", MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alone.DB().ExecContext(ctx, mustSchemaSQL(t, Schema{Table: "by_ddl", MinNode: 0, MaxNode: 0, MaxTTL: ttl})); err != nil {
		t.Fatal(err)
	}
	if tc, err := byDDL.ReadConfig(ctx); err != nil || !tc.CreationPending {
		t.Fatalf("a table created by the DDL alone: %+v, %v; want it pending", tc, err)
	}
	if res, err := byDDL.Claim(ctx, 0, 0, "early", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || res.OK || !res.Refusal.CreationPending {
		t.Fatalf("a claim before the creation by the DDL alone is confirmed: %+v, %v; want it refused, the creation pending", res, err)
	}
	settle, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := byDDL.SettleCreation(settle, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := byDDL.Claim(ctx, 0, 0, "h", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !res.OK {
		t.Fatalf("a claim once the creation by the DDL alone is confirmed: %+v, %v", res, err)
	}
}

// recreateAfterFailover fails pair over to its standby, which must lack the
// table (the creation was lost), creates the table there (the standby has
// no standby of its own: nothing can lose this creation), claims node 0,
// and fails the test if that claim stamps milliseconds that lost, a claim
// made in the lost table, may stamp.
func recreateAfterFailover(t *testing.T, ctx context.Context, pair *pgtest.Pair, dbName string, lost ClaimResult, ttl time.Duration) {
	t.Helper()
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	var had bool
	if err := s.DB().QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, DefaultTable).Scan(&had); err != nil || had {
		t.Fatalf("the promoted standby has the table (%v, %v): the creation was not lost", had, err)
	}
	if created, err := s.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create on the promoted standby: %v, %v", created, err)
	}
	if err := s.SettleCreation(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c := claimWithin(t, s, "next", ttl, func() int64 { return time.Now().UnixMilli() + ttl.Milliseconds() }, ttl)
	t.Logf("the new table's first claim: node %d epoch %d, stamping after %d", c.NodeID, c.Epoch, c.PrevHorizon)
	if lost.OK && lost.NodeID == c.NodeID && c.PrevHorizon < lost.Horizon {
		t.Errorf("duplicate IDs: the lost table's claim of node %d at epoch %d stamps up to unix ms %d, and the new table's claim at epoch %d stamps after %d: both may stamp %s before that",
			lost.NodeID, lost.Epoch, lost.Horizon, c.Epoch, c.PrevHorizon, time.Duration(min(lost.Horizon-c.PrevHorizon, lost.Horizon-lost.Now.UnixMilli()))*time.Millisecond)
	}
}
