package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/snowflake"
)

const t0 = int64(1_780_000_000_000) // unix ms of the synthetic histories

func ms(v int64) int64 { return v * 1e6 } // unix ms to unix ns

func mustID(t *testing.T, l snowflake.Layout, msec, node, epoch, seq int64) uint64 {
	t.Helper()
	id, err := l.Encode(snowflake.Parts{Ms: msec, Node: node, Epoch: epoch, Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	return uint64(id)
}

// goodHistory is a history that breaks no rule: node 1 is claimed by worker
// 0 (clock +100 ms, default layout) until its lease expires, then by worker
// 1 (clock -100 ms, two epoch bits) until the end; worker 0 was paused for
// longer than the TTL and saw its lease lost right after SIGCONT.
func goodHistory(t *testing.T) History {
	t.Helper()
	la := snowflake.DefaultLayout
	lb := snowflake.DefaultLayout
	lb.EpochBits = 2
	a := &File{Header: Header{Worker: 0, Owner: "a", OffsetMs: 100, Layout: la}}
	a.Records = []any{
		Acquired{Node: 1, Epoch: 1, PrevHorizon: 0, AtNs: ms(t0 + 1), DeadlineNs: ms(t0 + 2700), ClaimedBeforeNs: ms(t0 - 5)},
		IDs{Node: 1, Epoch: 1, IDs: []uint64{
			mustID(t, la, t0+1000+100, 1, 0, 0),
			mustID(t, la, t0+1000+100, 1, 0, 1),
			mustID(t, la, t0+2000+100, 1, 0, 0),
		}},
		Lost{Node: 1, Epoch: 1, Cause: CauseExpired, DeadlineNs: ms(t0 + 4700), LostAtNs: ms(t0 + 8010), NoticedNs: ms(t0 + 8011)},
	}
	b := &File{Header: Header{Worker: 1, Owner: "b", OffsetMs: -100, Layout: lb}}
	b.Records = []any{
		Acquired{Node: 1, Epoch: 2, PrevHorizon: t0 + 5000, AtNs: ms(t0 + 5002), DeadlineNs: ms(t0 + 7700), ClaimedBeforeNs: ms(t0 + 4000)},
		IDs{Node: 1, Epoch: 2, IDs: []uint64{
			mustID(t, lb, t0+6000-100, 1, 2, 0),
			mustID(t, lb, t0+7000-100, 1, 2, 0),
		}},
		Released{Node: 1, Epoch: 2, StartNs: ms(t0 + 7500), AtNs: ms(t0 + 7501)},
		End{AtNs: ms(t0 + 7600)},
	}
	return History{
		Claims: []Claim{
			{Node: 1, Epoch: 1, Owner: "a", AcquiredNs: ms(t0), FromMs: 0, HorizonMs: t0 + 5000,
				EndedNs: ms(t0 + 5000), EndReason: "expired"},
			{Node: 1, Epoch: 2, Owner: "b", AcquiredNs: ms(t0 + 5001), FromMs: t0 + 5000, HorizonMs: t0 + 6950,
				EndedNs: ms(t0 + 7500), EndReason: "released"},
		},
		Rows:   []Row{{Node: 1, Epoch: 2, HorizonMs: t0 + 6950}},
		Files:  []*File{a, b},
		Pauses: []Pause{{Worker: 0, StopNs: ms(t0 + 3000), ContNs: ms(t0 + 8000)}},
		TTL:    3 * time.Second,
	}
}

func checkRule(t *testing.T, h History, rule string) Report {
	t.Helper()
	r := Check(h)
	if r.ByRule[rule] == 0 {
		t.Fatalf("Check found no %q violation; report: %+v", rule, r)
	}
	return r
}

func TestCheckGoodHistory(t *testing.T) {
	r := Check(goodHistory(t))
	if r.Duplicates != 0 || r.Violations != 0 {
		t.Fatalf("a good history gives %d duplicates, %d violations:\n%s", r.Duplicates, r.Violations, strings.Join(r.Details, "\n"))
	}
	if r.IDs != 5 || r.Leases != 2 || r.Losses != 1 || r.Releases != 1 || r.Claims != 2 {
		t.Fatalf("report %+v: want 5 IDs, 2 leases, 1 loss, 1 release, 2 claims", r)
	}
}

func TestCheckDuplicate(t *testing.T) {
	h := goodHistory(t)
	// A third worker records an ID that worker 0 minted.
	dup := h.Files[0].Records[1].(IDs).IDs[0]
	h.Files = append(h.Files, &File{
		Header:  Header{Worker: 2, Owner: "c", Layout: snowflake.DefaultLayout},
		Records: []any{IDs{Node: 1, Epoch: 1, IDs: []uint64{dup}}},
	})
	r := checkRule(t, h, "duplicate")
	if r.Duplicates != 1 {
		t.Fatalf("Duplicates = %d, want 1", r.Duplicates)
	}
	if !strings.Contains(strings.Join(r.Details, "\n"), "worker 2.0") {
		t.Fatalf("the details do not name the second minter:\n%s", strings.Join(r.Details, "\n"))
	}
}

func TestCheckDuplicateWithinOneWorker(t *testing.T) {
	h := goodHistory(t)
	b := h.Files[1].Records[1].(IDs)
	b.IDs = append(b.IDs, b.IDs[0])
	h.Files[1].Records[1] = b
	if r := checkRule(t, h, "duplicate"); r.Duplicates != 1 {
		t.Fatalf("Duplicates = %d, want 1", r.Duplicates)
	}
}

func TestCheckOutsideInterval(t *testing.T) {
	h := goodHistory(t)
	// Stamped 7600 ms less the offset: after the claim was released at 7500.
	b := h.Files[1].Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, h.Files[1].Header.Layout, t0+7600-100, 1, 2, 0))
	h.Files[1].Records[1] = b
	checkRule(t, h, "interval")
}

func TestCheckBeforeAcquired(t *testing.T) {
	h := goodHistory(t)
	// Worker 0's clock is 100 ms ahead: a stamp of t0+50 is t0-50 in real
	// time, before the claim.
	b := h.Files[0].Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, h.Files[0].Header.Layout, t0+50, 1, 0, 0))
	h.Files[0].Records[1] = b
	checkRule(t, h, "interval")
}

func TestCheckOpenClaimUsesRowExpiry(t *testing.T) {
	h := goodHistory(t)
	c := &h.Claims[1]
	c.EndedNs, c.EndReason, c.ExpiresNs = 0, "", ms(t0+6500)
	c.HorizonMs = t0 + 8000
	// The ID stamped at 7000-100 less the offset is 7000: after the expiry.
	checkRule(t, h, "interval")
}

func TestCheckHorizon(t *testing.T) {
	h := goodHistory(t)
	h.Claims[1].HorizonMs = t0 + 6000 // below the 6900 stamped
	checkRule(t, h, "horizon")
}

func TestCheckAtPreviousHorizon(t *testing.T) {
	h := goodHistory(t)
	// Worker 1 stamps exactly the previous holder's horizon: not after it.
	b := h.Files[1].Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, h.Files[1].Header.Layout, t0+5000, 1, 2, 1))
	h.Files[1].Records[1] = b
	checkRule(t, h, "horizon")
}

func TestCheckNodeBits(t *testing.T) {
	h := goodHistory(t)
	b := h.Files[0].Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, h.Files[0].Header.Layout, t0+1500, 2, 0, 0))
	h.Files[0].Records[1] = b
	checkRule(t, h, "node bits")
}

func TestCheckEpochBits(t *testing.T) {
	h := goodHistory(t)
	b := h.Files[1].Records[1].(IDs)
	b.IDs = append(b.IDs, mustID(t, h.Files[1].Header.Layout, t0+6500-100, 1, 3, 0))
	h.Files[1].Records[1] = b
	checkRule(t, h, "epoch bits")
}

func TestCheckAfterDeadline(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.DeadlineNs = ms(t0 + 1500) // the ID of t0+2000 comes after it
	h.Files[0].Records[2] = lost
	checkRule(t, h, "deadline")
}

func TestCheckDeadlineAfterExpiry(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.DeadlineNs = ms(t0 + 5100) // the database let the claim go at 5000
	h.Files[0].Records[2] = lost
	checkRule(t, h, "deadline")
}

func TestCheckProbe(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.ProbeMinted, lost.ProbeID = 1, 42
	h.Files[0].Records[2] = lost
	checkRule(t, h, "probe")
}

func TestCheckLostNeverClosed(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.LostAtNs = 0
	h.Files[0].Records[2] = lost
	checkRule(t, h, "lost")
}

func TestCheckPauseLostLate(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.LostAtNs = ms(t0+8000) + int64(LostBound) + 1
	h.Files[0].Records[2] = lost
	checkRule(t, h, "pause")
}

func TestCheckPauseLostBeforeContinue(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.LostAtNs = ms(t0 + 4800) // while the process was stopped
	h.Files[0].Records[2] = lost
	checkRule(t, h, "pause")
}

func TestCheckPauseNeverLost(t *testing.T) {
	h := goodHistory(t)
	h.Files[0].Records = h.Files[0].Records[:2]
	checkRule(t, h, "pause")

	// Unless the process was killed before it could say so.
	h.Deaths = map[Incarnation]int64{{0, 0}: ms(t0 + 8100)}
	if r := Check(h); r.Violations != 0 {
		t.Fatalf("a worker killed right after SIGCONT: %v", r.Details)
	}
}

func TestCheckShortPauseIgnored(t *testing.T) {
	h := goodHistory(t)
	h.Files[0].Records = h.Files[0].Records[:2] // never lost...
	h.Pauses[0].ContNs = h.Pauses[0].StopNs + int64(2*time.Second)
	if r := Check(h); r.Violations != 0 { // ...but paused for less than the TTL
		t.Fatalf("a pause shorter than the TTL: %v", r.Details)
	}
}

func TestCheckClaimTimeline(t *testing.T) {
	for name, mutate := range map[string]func(h *History){
		"epoch gap":     func(h *History) { h.Claims[1].Epoch = 3 },
		"first epoch":   func(h *History) { h.Claims[0].Epoch = 0 },
		"overlap":       func(h *History) { h.Claims[1].AcquiredNs = ms(t0 + 4999) },
		"open then new": func(h *History) { h.Claims[0].EndedNs = 0 },
		"from":          func(h *History) { h.Claims[1].FromMs = t0 + 4000 },
		"horizon<from":  func(h *History) { h.Claims[1].HorizonMs = t0 + 4000 },
		"no expiry":     func(h *History) { h.Claims[1].EndedNs = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			h := goodHistory(t)
			mutate(&h)
			checkRule(t, h, "claims")
		})
	}
}

// After a release, the next claim's acquired_at (read after its row lock)
// never precedes the release's ended_at: even 1 ms is a violation.
func TestCheckOverlapAfterRelease(t *testing.T) {
	h := goodHistory(t)
	h.Claims[0].EndReason = "released"
	h.Claims[1].AcquiredNs = h.Claims[0].EndedNs - ms(1)
	checkRule(t, h, "claims")
}

func TestCheckRows(t *testing.T) {
	for name, mutate := range map[string]func(h *History){
		"epoch":    func(h *History) { h.Rows[0].Epoch = 1 },
		"horizon":  func(h *History) { h.Rows[0].HorizonMs = t0 + 5000 },
		"held":     func(h *History) { h.Rows[0].Owner, h.Rows[0].ExpiresNs = "b", ms(t0+9000) },
		"no claim": func(h *History) { h.Rows = append(h.Rows, Row{Node: 2, Epoch: 1}) },
		"open, not his": func(h *History) {
			h.Claims[1].EndedNs, h.Claims[1].EndReason, h.Claims[1].ExpiresNs = 0, "", ms(t0+9000)
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := goodHistory(t)
			mutate(&h)
			checkRule(t, h, "rows")
		})
	}
}

func TestCheckLostLate(t *testing.T) {
	h := goodHistory(t)
	h.Pauses = nil // not paused: Lost must close at the deadline (4700)
	checkRule(t, h, "lost")

	h = goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.LostAtNs = lost.DeadlineNs + int64(LostBound) // just in time
	h.Files[0].Records[2] = lost
	h.Pauses = nil
	if r := Check(h); r.Violations != 0 {
		t.Fatalf("Lost closed within the bound: %v", r.Details)
	}

	// 3.3 s after the deadline (4700), while the worker's control timer,
	// due at 4690, fired 3.1 s late: the process ran no timer meanwhile.
	h = goodHistory(t)
	h.Pauses = nil
	h.Files[0].Records = append(h.Files[0].Records, Late{DueNs: ms(t0 + 4690), FiredNs: ms(t0 + 7800)})
	if r := Check(h); r.Violations != 0 || r.LateExcused != 1 {
		t.Fatalf("Lost late as the control timer: %d violations, %d excused: %v", r.Violations, r.LateExcused, r.Details)
	}
	// The control timer fired more than LostBound before Lost closed; or
	// was late only after the deadline, or only before it.
	for _, late := range []Late{
		{DueNs: ms(t0 + 4690), FiredNs: ms(t0 + 6900)},
		{DueNs: ms(t0 + 4710), FiredNs: ms(t0 + 7900)},
		{DueNs: ms(t0 + 4000), FiredNs: ms(t0 + 4690)},
	} {
		h = goodHistory(t)
		h.Pauses = nil
		h.Files[0].Records = append(h.Files[0].Records, late)
		r := checkRule(t, h, "lost")
		if r.LateExcused != 0 {
			t.Fatalf("%+v excused the late Lost", late)
		}
	}
}

// A worker whose control timer was late across SIGCONT ran no timer until
// it fired: Lost may close up to LostBound after that.
func TestCheckPauseStalled(t *testing.T) {
	h := goodHistory(t)
	lost := h.Files[0].Records[2].(Lost)
	lost.LostAtNs = ms(t0 + 9500) // 1.5 s after SIGCONT
	h.Files[0].Records[2] = lost
	checkRule(t, h, "pause")

	h.Files[0].Records = append(h.Files[0].Records, Late{DueNs: ms(t0 + 2990), FiredNs: ms(t0 + 8700)})
	if r := Check(h); r.Violations != 0 {
		t.Fatalf("Lost closed 0.8 s after the control timer fired: %v", r.Details)
	}
}

func TestCheckLeaseNotInHistory(t *testing.T) {
	h := goodHistory(t)
	h.Claims[1].Owner = "somebody else"
	checkRule(t, h, "lease")

	h = goodHistory(t)
	h.Claims = h.Claims[:1]
	checkRule(t, h, "lease")
}

func TestCheckLeaseHeldTwice(t *testing.T) {
	h := goodHistory(t)
	h.Files = append(h.Files, &File{
		Header:  Header{Worker: 3, Owner: "a", Layout: snowflake.DefaultLayout},
		Records: []any{Acquired{Node: 1, Epoch: 1}},
	})
	checkRule(t, h, "lease")
}

func TestRecordRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.rec")
	lay := snowflake.DefaultLayout
	lay.EpochBits = 3
	h := Header{Worker: 4, Incarnation: 2, PID: 99, Owner: "chaos-w4.2-99", OffsetMs: -1500, Layout: lay}
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		Acquired{Node: 3, Epoch: 7, PrevHorizon: 123, AtNs: 4, DeadlineNs: 5, ClaimedBeforeNs: 6},
		IDs{Node: 3, Epoch: 7, IDs: []uint64{1, 2, 1 << 63}},
		Lost{Node: 3, Epoch: 7, Cause: CauseTakeover, DeadlineNs: 1, LostAtNs: 2, NoticedNs: 3, ProbeMinted: 1, ProbeID: 9, Ahead: 10, Behind: 11},
		Released{Node: 3, Epoch: 8, StartNs: 1, AtNs: 2, Failed: 1, Ahead: 3, Behind: 4},
		Late{DueNs: 5, FiredNs: 6},
		End{AtNs: 77},
	}
	for _, rec := range want {
		switch v := rec.(type) {
		case Acquired:
			err = w.Acquired(v)
		case IDs:
			err = w.IDs(v.Node, v.Epoch, v.IDs)
		case Lost:
			err = w.Lost(v)
		case Released:
			err = w.Released(v)
		case Late:
			err = w.Late(v)
		case End:
			err = w.End(v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header != h || !reflect.DeepEqual(f.Records, want) || f.Truncated {
		t.Fatalf("read back %+v %+v (truncated %v)\nwant %+v %+v", f.Header, f.Records, f.Truncated, h, want)
	}

	// A worker killed in the middle of a record leaves a truncated tail:
	// every whole record before it is kept.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < 13; cut++ { // the End record is 13 bytes
		g, err := Parse(b[:len(b)-cut])
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if !g.Truncated || !reflect.DeepEqual(g.Records, want[:len(want)-1]) {
			t.Fatalf("cut %d: truncated %v, records %+v", cut, g.Truncated, g.Records)
		}
	}
	for _, n := range []int{0, 3, 20} {
		if _, err := Parse(b[:n]); !errors.Is(err, ErrNoHeader) {
			t.Fatalf("%d bytes: got %v, want ErrNoHeader", n, err)
		}
	}
}

func TestPlan(t *testing.T) {
	const ttl = 3 * time.Second
	for _, kinds := range [][]FaultKind{ServerKinds(), ClusterKinds()} {
		p := Plan(42, time.Minute, 6, ttl, kinds)
		if !reflect.DeepEqual(p, Plan(42, time.Minute, 6, ttl, kinds)) {
			t.Fatal("the same seed gave two plans")
		}
		if reflect.DeepEqual(p, Plan(43, time.Minute, 6, ttl, kinds)) {
			t.Fatal("two seeds gave the same plan")
		}
		seen := map[FaultKind]bool{}
		for i, f := range p {
			if i < len(kinds) {
				seen[f.Kind] = true
			}
			if !slices.Contains(kinds, f.Kind) {
				t.Errorf("fault %s is not of the kinds %v", f, kinds)
			}
			if f.At < 3*time.Second || f.At >= time.Minute-3*time.Second {
				t.Errorf("fault %s is outside the window", f)
			}
			if f.Worker < 0 || f.Worker >= 6 {
				t.Errorf("fault %s aims at no worker", f)
			}
			if f.Kind == Stop && f.For <= ttl {
				t.Errorf("fault %s: a pause must outlast the TTL", f)
			}
		}
		if len(seen) != len(kinds) {
			t.Fatalf("the first %d faults are not one of each kind %v: %v", len(kinds), kinds, p[:len(kinds)])
		}
	}
}

func TestFailoverPlan(t *testing.T) {
	p := FailoverPlan(42, 12)
	if !reflect.DeepEqual(p, FailoverPlan(42, 12)) {
		t.Fatal("the same seed gave two plans")
	}
	if len(p) != 12 {
		t.Fatalf("%d failovers, want 12", len(p))
	}
	firstKinds := map[FaultKind]bool{}
	for i, s := range p {
		if !slices.Contains(FailoverKinds(), s.Kind) {
			t.Errorf("step %d: %s is not a kind of failover", i, s)
		}
		if i < 4 {
			firstKinds[s.Kind] = true
		}
		if (s.Kind == KillLaggingLeader) != (s.Lag > 0) || s.Lag >= 3*time.Second {
			t.Errorf("step %d: %s: a lag of 0.3 to 3 s is for a lagging leader alone", i, s)
		}
		lo, hi := time.Second, 5*time.Second
		if i == 0 {
			lo, hi = 4*time.Second, 8*time.Second
		}
		if s.After < lo || s.After >= hi {
			t.Errorf("step %d: %s: the pause is outside [%s, %s)", i, s, lo, hi)
		}
	}
	if len(firstKinds) != 4 {
		t.Fatalf("the first four failovers are not one of each kind: %v", p[:4])
	}
	// The one failover of a short run is whichever kind the seed draws.
	kinds := map[FaultKind]bool{}
	for seed := range uint64(40) {
		kinds[FailoverPlan(seed, 1)[0].Kind] = true
	}
	if len(kinds) != 4 {
		t.Fatalf("40 seeds drew only %v as the first failover", kinds)
	}
}
