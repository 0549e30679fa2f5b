package snowflake

// Tests of a Generator's metrics, read with metrictest's recording
// MeterProvider: each wait and refusal is counted with its reason, and a
// minted ID records nothing.

import (
	"context"
	"errors"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/metrictest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// counts returns the waits and refusals collected, by reason.
func counts(t *testing.T, rd *metrictest.Reader) (waits, refusals map[string]float64) {
	t.Helper()
	ms := rd.Collect(t, scopeName)
	by := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, p := range ms[name].Points {
			if p.Attrs[attrTable] != fakeTable || p.Attrs[attrNodeRange] != "0-1023" {
				t.Errorf("%s point with attributes %v, want the lease's table and range", name, p.Attrs)
			}
			out[p.Attrs[attrReason]] += p.Value
		}
		return out
	}
	return by(metricWaits), by(metricRefusals)
}

// equal reports whether two counts by reason are the same.
func equal(a, b map[string]float64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

func wantCounts(t *testing.T, rd *metrictest.Reader, waits, refusals map[string]float64) {
	t.Helper()
	w, r := counts(t, rd)
	if !equal(w, waits) {
		t.Errorf("waits = %v, want %v", w, waits)
	}
	if !equal(r, refusals) {
		t.Errorf("refusals = %v, want %v", r, refusals)
	}
}

// A millisecond's used-up sequence and a clock behind the previous
// holder's horizon or the last stamp are each counted once per waiting
// call, with their reason.
func TestMetricsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		lay := Layout{NodeBits: 10, StepBits: 3} // 8 IDs per millisecond
		g := mustNew(t, newFake(1, 1, 0), WithLayout(lay), WithMeterProvider(rd.Provider))
		for range 3 * 8 { // three milliseconds' worth: two waits
			mustGenerate(t, g)
		}
		wantCounts(t, rd, map[string]float64{reasonSequenceExhausted: 2}, nil)
	})
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		prev := time.Now().UnixMilli() + 2000
		g := mustNew(t, newFake(4, 1, prev), WithLayout(synctestLayout), WithMeterProvider(rd.Provider))
		mustGenerate(t, g) // waits 2 s for the previous holder's horizon
		mustGenerate(t, g)
		wantCounts(t, rd, map[string]float64{reasonClockBehind: 1}, nil)
	})
	synctest.Test(t, func(t *testing.T) {
		// The clock reads the horizon's millisecond: the wait for the next
		// one is for the horizon, though it looks like a used-up sequence.
		rd := metrictest.New()
		g := mustNew(t, newFake(4, 1, time.Now().UnixMilli()), WithLayout(synctestLayout), WithMeterProvider(rd.Provider))
		mustGenerate(t, g)
		wantCounts(t, rd, map[string]float64{reasonClockBehind: 1}, nil)
	})
	synctest.Test(t, func(t *testing.T) {
		// The clock steps back 3 ms; once the last stamped millisecond is
		// used up the generator waits for the clock to pass it: behind, not
		// a sequence used up in the clock's millisecond.
		rd := metrictest.New()
		var c stepClock
		lay := Layout{NodeBits: 10, StepBits: 2} // 4 IDs per millisecond
		g := mustNew(t, newFake(8, 1, 0), WithLayout(lay), WithClock(c.now), WithMeterProvider(rd.Provider))
		mustGenerate(t, g)
		c.set(-3 * time.Millisecond)
		for range 4 {
			mustGenerate(t, g)
		}
		wantCounts(t, rd, map[string]float64{reasonClockBehind: 1}, nil)
	})
}

// Every refusal is counted with its reason, and a refusal is not a wait.
func TestMetricsRefusals(t *testing.T) {
	ms := int64(1_800_000_000_000)
	fixed := func() time.Time { return time.UnixMilli(ms) }
	for _, c := range []struct {
		reason string
		want   error
		gen    func(t *testing.T, rd *metrictest.Reader) *Generator
	}{
		{reasonLeaseEnded, nodeid.ErrTakenOver, func(t *testing.T, rd *metrictest.Reader) *Generator {
			l := newFake(1, 1, 0)
			g := mustNew(t, l, WithMeterProvider(rd.Provider))
			l.lose(nodeid.ErrTakenOver)
			return g
		}},
		{reasonLeaseEnded, nodeid.ErrReleased, func(t *testing.T, rd *metrictest.Reader) *Generator {
			l := newFake(1, 1, 0)
			g := mustNew(t, l, WithMeterProvider(rd.Provider))
			l.sealOnly() // sealed, with the fence still open
			return g
		}},
		{reasonBeyondHorizon, nodeid.ErrClockAhead, func(t *testing.T, rd *metrictest.Reader) *Generator {
			l := newFake(1, 1, 0)
			l.setFence(time.Now().Add(time.Hour), ms-1)
			return mustNew(t, l, WithClock(fixed), WithMeterProvider(rd.Provider))
		}},
		{reasonClockBehind, nodeid.ErrClockBehind, func(t *testing.T, rd *metrictest.Reader) *Generator {
			return mustNew(t, newFake(1, 1, ms+2000), WithClock(fixed), WithMaxWait(time.Second), WithMeterProvider(rd.Provider))
		}},
		{reasonTimeOverflow, nodeid.ErrTimeOverflow, func(t *testing.T, rd *metrictest.Reader) *Generator {
			lay := Layout{NodeBits: 30, StepBits: 1} // ended in 1970
			return mustNew(t, newFake(1, 1, 0), WithLayout(lay), WithMeterProvider(rd.Provider))
		}},
	} {
		t.Run(c.reason+"/"+c.want.Error(), func(t *testing.T) {
			rd := metrictest.New()
			g := c.gen(t, rd)
			for range 3 {
				if _, err := g.Generate(); !errors.Is(err, c.want) {
					t.Fatalf("Generate = %v, want %v", err, c.want)
				}
			}
			wantCounts(t, rd, nil, map[string]float64{c.reason: 3})
		})
	}
}

// A minted ID records nothing, and still allocates nothing, with a real
// SDK meter provider.
func TestMetricsNothingRecordedPerID(t *testing.T) {
	rd := metrictest.New()
	g := mustNew(t, newFake(1, 1, 0), WithLayout(belowCapLayout), WithMeterProvider(rd.Provider))
	for range 10_000 {
		mustGenerate(t, g)
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = g.Generate() }); a != 0 {
		t.Errorf("Generate allocates %v times per call with a meter provider", a)
	}
	for name, m := range rd.Collect(t, scopeName) {
		if name != metricWaits && name != metricRefusals || m.Sum() != 0 {
			t.Errorf("minting recorded %s: %v", name, m.Points)
		}
	}
}

// A new generator's counters have a series at 0 for every reason, with
// the attributes of the waits and refusals that follow: a refusal adds to
// the series that was there.
func TestMetricsStartAtZero(t *testing.T) {
	rd := metrictest.New()
	l := newFake(1, 1, 0)
	g := mustNew(t, l, WithMeterProvider(rd.Provider))
	type series struct{ name, reason string }
	want := map[series]float64{
		{metricWaits, "sequence_exhausted"}: 0, {metricWaits, "clock_behind"}: 0,
		{metricRefusals, "lease_ended"}: 0, {metricRefusals, "beyond_horizon"}: 0,
		{metricRefusals, "clock_behind"}: 0, {metricRefusals, "time_overflow"}: 0,
	}
	check := func() {
		t.Helper()
		got := map[series]float64{}
		for name, m := range rd.Collect(t, scopeName) {
			for _, p := range m.Points {
				if len(p.Attrs) != 3 || p.Attrs[attrTable] != fakeTable || p.Attrs[attrNodeRange] != "0-1023" {
					t.Errorf("%s point with attributes %v, want the lease's table and range and a reason", name, p.Attrs)
				}
				s := series{name, p.Attrs[attrReason]}
				if _, dup := got[s]; dup {
					t.Errorf("two series of %v", s)
				}
				got[s] = p.Value
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("series %v, want %v", got, want)
		}
	}
	check()
	l.lose(nodeid.ErrTakenOver)
	if _, err := g.Generate(); !errors.Is(err, nodeid.ErrTakenOver) {
		t.Fatalf("Generate on a lost lease = %v", err)
	}
	want[series{metricRefusals, "lease_ended"}] = 1
	check()
}

// A scenario that records both instruments: the reader sees exactly the
// documented ones, with the documented kinds and units.
func TestMetricsAreTheDocumentedOnes(t *testing.T) {
	rd := metrictest.New()
	lay := Layout{NodeBits: 10, StepBits: 1} // 2 IDs per millisecond
	l := newFake(1, 1, 0)
	g := mustNew(t, l, WithLayout(lay), WithMeterProvider(rd.Provider))
	for w, _ := counts(t, rd); w[reasonSequenceExhausted] == 0; w, _ = counts(t, rd) {
		for range 10 { // 3 IDs minted within a millisecond wait for the next
			mustGenerate(t, g)
		}
	}
	l.lose(nodeid.ErrTakenOver)
	if _, err := g.Generate(); !errors.Is(err, nodeid.ErrTakenOver) {
		t.Fatalf("Generate on a lost lease = %v", err)
	}
	seen := rd.Collect(t, scopeName)
	metrictest.CheckDocumented(t, "Generator", seen)
}

func TestWithMeterProviderNil(t *testing.T) {
	_, err := newGenerator(newFake(1, 1, 0), WithMeterProvider(nil))
	if !errors.Is(err, nodeid.ErrInvalidOption) || err.Error() != "snowflake: WithMeterProvider: the meter provider is nil" {
		t.Fatalf("WithMeterProvider(nil) = %v", err)
	}
}

// On a lease from PostgreSQL, a generator's refusals carry the table and
// node range that the Registry's measurements carry.
func TestMetricsAttributesMatchTheRegistrys(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.Shared(t).NewDB(t)
	rd := metrictest.New()
	reg, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithNodeRange(2, 3), nodeid.WithMeterProvider(rd.Provider))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	l, err := reg.Acquire(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(l, WithMeterProvider(rd.Provider))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Generate(); !errors.Is(err, nodeid.ErrReleased) {
		t.Fatalf("Generate after Release = %v", err)
	}
	refusals := rd.Collect(t, scopeName)[metricRefusals].Select(attrReason, reasonLeaseEnded)
	lost := rd.Collect(t, "github.com/nodeid/nodeid")["nodeid.lease.lost"].Select("nodeid.cause", "released")
	if len(refusals) != 1 || refusals[0].Value != 1 || len(lost) != 1 || lost[0].Value != 1 {
		t.Fatalf("refusals %v, releases %v; want one each", refusals, lost)
	}
	for _, k := range []string{attrTable, attrNodeRange} {
		if a, b := refusals[0].Attrs[k], lost[0].Attrs[k]; a != b || a == "" {
			t.Errorf("%s: the generator records %q, the Registry %q", k, a, b)
		}
	}
	if got := refusals[0].Attrs[attrNodeRange]; got != "2-3" {
		t.Errorf("node range %q, want 2-3", got)
	}
}
