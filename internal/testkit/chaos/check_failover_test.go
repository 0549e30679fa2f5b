package chaos

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/snowflake"
)

// era2 is the era of the claims made after the failover of
// failoverHistory: the database clock's second after it began, as
// seconds since store.EraOrigin.
const era2 = t0/1000 + 4 - admin.EraOrigin

// tl2 is the epoch of a claim on timeline 2 that follows epoch 1.
const tl2 = era2<<32 | 2

// failoverHistory is a history across one failover (KillLeader, started at
// t0+3100, the new primary on timeline 2 at t0+4000) that breaks no rule.
// All workers stamp with the default layout and no clock offset.
//
// Node 1: worker a holds epoch 1 and releases it at t0+2000; worker b
// claims epoch 2 at t0+2100 on the old primary, and the failover loses
// that claim: the history lacks it, b mints until its renewal on the new
// primary tells it so. Worker c claims the node ID on timeline 2 once the
// quarantine is over (from t0+7300, the new timeline seen at t0+4000 plus
// 3.3 s), with epoch era2<<32|2, and releases it.
//
// Node 2: worker d holds epoch 1 from t0+1000; its renewals of the last
// second before the failover are lost, so the new primary's row expires at
// t0+4000 while d's deadline is t0+5500: d stamps after t0+4000 and learns
// of the loss at t0+4100. Worker e claims the node ID on timeline 2, which
// ends d's claim as expired at the stale t0+4000.
func failoverHistory(t *testing.T) History {
	t.Helper()
	l := snowflake.DefaultLayout
	id := func(msec, node, seq int64) uint64 { return mustID(t, l, msec, node, 0, seq) }
	file := func(w int64, owner string, recs ...any) *File {
		return &File{Header: Header{Worker: w, Owner: owner, Layout: l}, Records: recs}
	}
	a := file(0, "a",
		Acquired{Node: 1, Epoch: 1, AtNs: ms(t0 + 1), DeadlineNs: ms(t0 + 2700), ClaimedBeforeNs: ms(t0 - 5)},
		IDs{Node: 1, Epoch: 1, IDs: []uint64{id(t0+1000, 1, 0), id(t0+1900, 1, 0)}},
		Released{Node: 1, Epoch: 1, StartNs: ms(t0 + 1990), AtNs: ms(t0 + 2000)},
	)
	b := file(1, "b",
		Acquired{Node: 1, Epoch: 2, PrevHorizon: t0 + 1900, AtNs: ms(t0 + 2101), DeadlineNs: ms(t0 + 4800), ClaimedBeforeNs: ms(t0 + 2090)},
		IDs{Node: 1, Epoch: 2, IDs: []uint64{id(t0+2500, 1, 0), id(t0+3000, 1, 0)}},
		Lost{Node: 1, Epoch: 2, Cause: CauseFailover, DeadlineNs: ms(t0 + 4800), LostAtNs: ms(t0 + 4100), NoticedNs: ms(t0 + 4101)},
	)
	c := file(2, "c",
		Acquired{Node: 1, Epoch: tl2, PrevHorizon: t0 + 7300, AtNs: ms(t0 + 7302), DeadlineNs: ms(t0 + 10000), ClaimedBeforeNs: ms(t0 + 5000)},
		IDs{Node: 1, Epoch: tl2, IDs: []uint64{id(t0+7400, 1, 0), id(t0+8000, 1, 0)}},
		Released{Node: 1, Epoch: tl2, StartNs: ms(t0 + 8490), AtNs: ms(t0 + 8500)},
	)
	d := file(3, "d",
		Acquired{Node: 2, Epoch: 1, AtNs: ms(t0 + 1001), DeadlineNs: ms(t0 + 3700), ClaimedBeforeNs: ms(t0 + 990)},
		IDs{Node: 2, Epoch: 1, IDs: []uint64{id(t0+3900, 2, 0), id(t0+4050, 2, 0)}},
		Lost{Node: 2, Epoch: 1, Cause: CauseExpired, DeadlineNs: ms(t0 + 5500), LostAtNs: ms(t0 + 4100), NoticedNs: ms(t0 + 4101)},
	)
	e := file(4, "e",
		Acquired{Node: 2, Epoch: tl2, PrevHorizon: t0 + 7300, AtNs: ms(t0 + 7402), DeadlineNs: ms(t0 + 10000), ClaimedBeforeNs: ms(t0 + 5000)},
		IDs{Node: 2, Epoch: tl2, IDs: []uint64{id(t0+7500, 2, 0)}},
		Released{Node: 2, Epoch: tl2, StartNs: ms(t0 + 7990), AtNs: ms(t0 + 8000)},
	)
	return History{
		Claims: []Claim{
			{Node: 1, Epoch: 1, Owner: "a", AcquiredNs: ms(t0), HorizonMs: t0 + 1900,
				EndedNs: ms(t0 + 2000), EndReason: "released", Timeline: 1},
			{Node: 1, Epoch: tl2, Owner: "c", AcquiredNs: ms(t0 + 7301), FromMs: t0 + 7300, HorizonMs: t0 + 8000,
				EndedNs: ms(t0 + 8500), EndReason: "released", Timeline: 2},
			{Node: 2, Epoch: 1, Owner: "d", AcquiredNs: ms(t0 + 1000), HorizonMs: t0 + 7300,
				EndedNs: ms(t0 + 4000), EndReason: "expired", Timeline: 1},
			{Node: 2, Epoch: tl2, Owner: "e", AcquiredNs: ms(t0 + 7401), FromMs: t0 + 7300, HorizonMs: t0 + 7500,
				EndedNs: ms(t0 + 8000), EndReason: "released", Timeline: 2},
		},
		Rows: []Row{
			{Node: 1, Epoch: tl2, HorizonMs: t0 + 8000, Timeline: 2},
			{Node: 2, Epoch: tl2, HorizonMs: t0 + 7500, Timeline: 2},
		},
		Files:     []*File{a, b, c, d, e},
		Failovers: []FailoverEvent{{Kind: KillLeader, StartNs: ms(t0 + 3100), PromotedNs: ms(t0 + 4000), Timeline: 2}},
		Timeline:  2,
		TTL:       3 * time.Second,
	}
}

func TestCheckGoodFailoverHistory(t *testing.T) {
	r := Check(failoverHistory(t))
	if r.Duplicates != 0 || r.Violations != 0 {
		t.Fatalf("a good history gives %d duplicates, %d violations:\n%s", r.Duplicates, r.Violations, strings.Join(r.Details, "\n"))
	}
	if r.IDs != 9 || r.Leases != 5 || r.LostInFailover != 1 || r.Claims != 4 {
		t.Fatalf("report %+v: want 9 IDs, 5 leases, 1 lost in failover, 4 claims", r)
	}
	// The first claim on timeline 2, c's at t0+7301, came 4.201 s after
	// the failover began, and it waited for the quarantine.
	if len(r.FirstClaim) != 1 || r.FirstClaim[0] != 4201*time.Millisecond ||
		len(r.FirstQuarantined) != 1 || r.FirstQuarantined[0] != 4201*time.Millisecond {
		t.Fatalf("FirstClaim = %v, FirstQuarantined = %v, want [4.201s] and [4.201s]", r.FirstClaim, r.FirstQuarantined)
	}
}

// A claim on the new primary of a row whose lease lived on through the
// failover comes before the quarantine's end: it counts as the first
// claim, not as the first quarantined one.
func TestCheckFirstClaims(t *testing.T) {
	h := failoverHistory(t)
	h.Claims = append(h.Claims, Claim{Node: 3, Epoch: 1, Owner: "x", AcquiredNs: ms(t0 + 1000), HorizonMs: t0 + 4500,
		EndedNs: ms(t0 + 4500), EndReason: "released", Timeline: 1},
		Claim{Node: 3, Epoch: 2, Owner: "y", AcquiredNs: ms(t0 + 4600), FromMs: t0 + 4500, HorizonMs: t0 + 5000,
			EndedNs: ms(t0 + 5000), EndReason: "released", Timeline: 2})
	h.Rows = append(h.Rows, Row{Node: 3, Epoch: 2, HorizonMs: t0 + 5000, Timeline: 2})
	r := Check(h)
	if r.Violations != 0 {
		t.Fatal(r.Details)
	}
	if r.FirstClaim[0] != 1500*time.Millisecond || r.FirstQuarantined[0] != 4201*time.Millisecond {
		t.Fatalf("FirstClaim = %v, FirstQuarantined = %v, want [1.5s] and [4.201s]", r.FirstClaim, r.FirstQuarantined)
	}
}

// lostLease returns worker b's lease of failoverHistory, whose claim the
// failover lost.
func lostLease(h History) (*File, IDs) {
	return h.Files[1], h.Files[1].Records[1].(IDs)
}

// The failover lost b's claim; the new primary's claim c starts from a
// horizon below b's stamps (a quarantine too short) and mints one of b's
// IDs again.
func TestCheckDuplicateAcrossFailover(t *testing.T) {
	h := failoverHistory(t)
	_, lost := lostLease(h)
	c := h.Files[2]
	c.Header.OffsetMs = -1200 // c's clock is behind: it stamps t0+3000 at t0+4200
	c.Records[0] = Acquired{Node: 1, Epoch: tl2, PrevHorizon: t0 + 2999, AtNs: ms(t0 + 4102), DeadlineNs: ms(t0 + 6800), ClaimedBeforeNs: ms(t0 + 4050)}
	c.Records[1] = IDs{Node: 1, Epoch: tl2, IDs: []uint64{lost.IDs[1]}}
	c.Records[2] = Released{Node: 1, Epoch: tl2, StartNs: ms(t0 + 4290), AtNs: ms(t0 + 4300)}
	h.Claims[1] = Claim{Node: 1, Epoch: tl2, Owner: "c", AcquiredNs: ms(t0 + 4101), FromMs: t0 + 2999, HorizonMs: t0 + 3000,
		EndedNs: ms(t0 + 4300), EndReason: "released", Timeline: 2}
	h.Rows[0].HorizonMs = t0 + 3000
	r := checkRule(t, h, "duplicate")
	if r.Duplicates != 1 {
		t.Fatalf("Duplicates = %d, want 1", r.Duplicates)
	}
	// The short quarantine and the lost lease's stamps after the new
	// claim's from_ms are violations of their own.
	for _, rule := range []string{"quarantine", "failover", "order"} {
		if r.ByRule[rule] == 0 {
			t.Errorf("no %q violation: %v", rule, r.Details)
		}
	}
}

// A lease that the history lacks is a violation unless a failover's new
// primary took writes after the lease's Acquire was called.
func TestCheckLostClaimWithoutFailover(t *testing.T) {
	h := failoverHistory(t)
	h.Failovers = nil
	checkRule(t, h, "lease")

	h = failoverHistory(t)
	f, _ := lostLease(h)
	acq := f.Records[0].(Acquired)
	acq.ClaimedBeforeNs = h.Failovers[0].PromotedNs + 1 // after the new primary took writes
	f.Records[0] = acq
	r := checkRule(t, h, "lease")
	if r.LostInFailover != 0 {
		t.Fatalf("LostInFailover = %d, want 0", r.LostInFailover)
	}
}

// The IDs of a lease lost in a failover must stay at or below the from_ms
// of the next claim of its node ID, and after its own previous horizon.
func TestCheckLostClaimBounds(t *testing.T) {
	h := failoverHistory(t)
	f, lost := lostLease(h)
	lost.IDs = append(lost.IDs, mustID(t, f.Header.Layout, t0+7301, 1, 0, 0)) // after c's from_ms
	f.Records[1] = lost
	f.Records[2] = Lost{Node: 1, Epoch: 2, Cause: CauseFailover, DeadlineNs: ms(t0 + 7400), LostAtNs: ms(t0 + 7401), NoticedNs: ms(t0 + 7401)}
	checkRule(t, h, "failover")

	h = failoverHistory(t)
	f, lost = lostLease(h)
	lost.IDs = append(lost.IDs, mustID(t, f.Header.Layout, t0+1900, 1, 0, 1)) // at its previous horizon
	f.Records[1] = lost
	checkRule(t, h, "horizon")
}

// A claim that jumps to a new timeline's epochs needs a failover to that
// timeline before it, and starts from the end of the quarantine at least.
func TestCheckJump(t *testing.T) {
	h := failoverHistory(t)
	h.Failovers[0].Timeline = 1 // no failover made timeline 2
	checkRule(t, h, "claims")

	h = failoverHistory(t)
	h.Failovers[0].StartNs = ms(t0 + 7350) // after c's claim
	h.Failovers[0].PromotedNs = ms(t0 + 7360)
	checkRule(t, h, "claims")

	h = failoverHistory(t)
	h.Failovers[0].StartNs = ms(t0 + 4001) // c's from_ms is 3.299 s later
	checkRule(t, h, "quarantine")

	h = failoverHistory(t)
	h.Claims[1].Epoch, h.Rows[0].Epoch = era2<<32|3, era2<<32|3 // the count skips one
	checkRule(t, h, "claims")

	h = failoverHistory(t)
	const before = (era2 - 2) << 32 // an era of a time before the failover began
	h.Claims[1].Epoch, h.Rows[0].Epoch = before|2, before|2
	checkRule(t, h, "claims")
}

// A claim ended as expired by the first claim of a new timeline may have
// lost its last renewals: its holder's deadline bounds its IDs instead of
// the end in the database. Without the failover's jump the end is binding.
func TestCheckStaleEnd(t *testing.T) {
	h := failoverHistory(t)
	d := h.Files[3]
	b := d.Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, d.Header.Layout, t0+5600, 2, 0, 0)) // after d's own deadline too
	d.Records[1] = b
	checkRule(t, h, "interval")

	// Node 2's next claim on the same timeline: d's end is not stale.
	h = failoverHistory(t)
	h.Claims[3].Epoch, h.Rows[1].Epoch = 2, 2
	e := h.Files[4]
	for i, rec := range e.Records {
		switch v := rec.(type) {
		case Acquired:
			v.Epoch = 2
			e.Records[i] = v
		case IDs:
			v.Epoch = 2
			e.Records[i] = v
		case Released:
			v.Epoch = 2
			e.Records[i] = v
		}
	}
	r := checkRule(t, h, "interval") // d's ID at t0+4050, after the end at t0+4000
	if r.ByRule["deadline"] == 0 {   // d's deadline t0+5500 is after that end
		t.Fatalf("no deadline violation: %v", r.Details)
	}

	// d's claim still open at the end of the run, on a row last written
	// before the failover: its expiry may be stale too.
	h = failoverHistory(t)
	h.Claims = h.Claims[:3]
	h.Claims[2].EndedNs, h.Claims[2].EndReason, h.Claims[2].ExpiresNs, h.Claims[2].HorizonMs = 0, "", ms(t0+4000), t0+5500
	h.Rows[1] = Row{Node: 2, Epoch: 1, Owner: "d", HorizonMs: t0 + 5500, ExpiresNs: ms(t0 + 4000), Timeline: 1}
	h.Files = h.Files[:4]
	if r := Check(h); r.Violations != 0 {
		t.Fatalf("an open claim on a row of timeline 1: %v", r.Details)
	}
	h.Rows[1].Timeline = 2 // written on the new primary: its expiry is binding
	checkRule(t, h, "interval")
}

// Per node ID, a lease acquired before another's Acquire was called has the
// lower epoch.
func TestCheckEpochOrder(t *testing.T) {
	h := goodHistory(t)
	acq := h.Files[0].Records[0].(Acquired)
	acq.ClaimedBeforeNs = ms(t0 + 6000) // after b acquired epoch 2
	h.Files[0].Records[0] = acq
	checkRule(t, h, "epoch order")

	// Across a failover too: after c's claim on the new primary, the old
	// primary grants epoch 3, as it would if it took writes after the
	// promotion.
	h = failoverHistory(t)
	h.Files = append(h.Files, &File{
		Header:  Header{Worker: 5, Owner: "f", Layout: snowflake.DefaultLayout},
		Records: []any{Acquired{Node: 1, Epoch: 3, PrevHorizon: t0 + 8000, AtNs: ms(t0 + 9001), DeadlineNs: ms(t0 + 11700), ClaimedBeforeNs: ms(t0 + 9000)}},
	})
	checkRule(t, h, "epoch order")
}

// Per node ID, every ID of a lease is stamped before every ID of the leases
// of higher epochs.
func TestCheckStampOrder(t *testing.T) {
	h := failoverHistory(t)
	// d's claim was lost in the failover and stamped after e's first ID.
	h.Claims = slicesDelete(h.Claims, 2)
	h.Claims[2].Epoch, h.Claims[2].FromMs = era2<<32|1, t0+7300 // the first claim of node 2 in the history
	h.Rows[1].Epoch = era2<<32 | 1
	e := h.Files[4]
	e.Records[0] = Acquired{Node: 2, Epoch: era2<<32 | 1, PrevHorizon: t0 + 7300, AtNs: ms(t0 + 7402), DeadlineNs: ms(t0 + 10000), ClaimedBeforeNs: ms(t0 + 5000)}
	e.Records[1] = IDs{Node: 2, Epoch: era2<<32 | 1, IDs: []uint64{mustID(t, e.Header.Layout, t0+7500, 2, 0, 0)}}
	e.Records[2] = Released{Node: 2, Epoch: era2<<32 | 1, StartNs: ms(t0 + 7990), AtNs: ms(t0 + 8000)}
	if r := Check(h); r.Violations != 0 || r.LostInFailover != 2 {
		t.Fatalf("d's lease lost in the failover: %d violations, %d lost: %v", r.Violations, r.LostInFailover, r.Details)
	}
	d := h.Files[3]
	b := d.Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, d.Header.Layout, t0+7500, 2, 0, 1))
	d.Records[1] = b
	d.Records[2] = Lost{Node: 2, Epoch: 1, Cause: CauseFailover, DeadlineNs: ms(t0 + 7600), LostAtNs: ms(t0 + 7601), NoticedNs: ms(t0 + 7601)}
	checkRule(t, h, "order")
}

func slicesDelete(cs []Claim, i int) []Claim { return append(cs[:i:i], cs[i+1:]...) }

// No lease is lost as evicted in a chaos run, nor as lost in a failover
// unless one came after the claim.
func TestCheckCauses(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.Cause = CauseEvicted
	h.Files[0].Records[2] = lost
	checkRule(t, h, "lost")

	h = goodHistory(t)
	lost.Cause = CauseFailover
	h.Files[0].Records[2] = lost
	checkRule(t, h, "failover")
	// The pause rule too wants it expired or taken over.
	checkRule(t, h, "pause")

	h.Failovers = []FailoverEvent{{Kind: Switchover, StartNs: ms(t0 + 3500), PromotedNs: ms(t0 + 3600), Timeline: 2}}
	if r := Check(h); r.ByRule["failover"] != 0 || r.ByRule["pause"] != 0 {
		t.Fatalf("a loss in a failover after the claim: %v", r.Details)
	}
}

func TestCauseOf(t *testing.T) {
	seen := map[int64]bool{}
	for _, err := range []error{nodeid.ErrExpired, nodeid.ErrTakenOver, nodeid.ErrReleased, nodeid.ErrEvicted, nodeid.ErrFailover} {
		lost := &nodeid.EndError{NodeID: 1, Epoch: 2, Cause: err}
		c := causeOf(fmt.Errorf("wrapped: %w", lost))
		if c == CauseUnknown || seen[c] || strings.HasPrefix(CauseName(c), "unknown") {
			t.Errorf("causeOf(%v) = %d (%s): want a cause of its own", lost, c, CauseName(c))
		}
		seen[c] = true
	}
	if c := causeOf(errors.New("something else")); c != CauseUnknown {
		t.Errorf("causeOf(another error) = %d, want CauseUnknown", c)
	}
}
