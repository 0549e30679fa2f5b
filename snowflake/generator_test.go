package snowflake

// Unit tests of the generator against fake leases. Timing rules run in
// testing/synctest bubbles, where time is virtual: they assert exact
// instants without sleeping.

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
)

// 8 goroutines x 250,000 IDs: all distinct, strictly increasing per
// goroutine, each with the lease's node ID, epoch bits and a stamp taken
// during the run.
func TestConcurrentDistinctIncreasing(t *testing.T) {
	const goroutines, perG = 8, 250_000
	lay := Layout{Origin: TwitterOrigin, NodeBits: 8, StepBits: 14, EpochBits: 2}
	l := newFake(201, 7, 0)
	g := mustNew(t, l, WithLayout(lay))

	begin := time.Now().UnixMilli()
	ids := make([][]bw.ID, goroutines)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			out := make([]bw.ID, perG)
			for j := range out {
				id, err := g.Generate()
				if err != nil {
					t.Error(err)
					return
				}
				out[j] = id
			}
			ids[i] = out
		})
	}
	wg.Wait()
	end := time.Now().UnixMilli()
	if t.Failed() {
		return
	}

	all := make([]bw.ID, 0, goroutines*perG)
	for i, out := range ids {
		for j, id := range out {
			if j > 0 && id <= out[j-1] {
				t.Fatalf("goroutine %d: ID %d (%+v) after %d (%+v)", i, id, lay.Decode(id), out[j-1], lay.Decode(out[j-1]))
			}
			p := lay.Decode(id)
			if p.Node != 201 || p.Epoch != 7%4 || !stampedWithin(p.Ms, begin, end) {
				t.Fatalf("goroutine %d: ID %d decodes to %+v; want node 201, epoch 3, time in [%d, %d]", i, id, p, begin, end)
			}
		}
		all = append(all, out...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("ID %d (%+v) minted twice", all[i], lay.Decode(all[i]))
		}
	}
}

// The lease's deadline is checked on every ID against time.Now, even when a
// custom clock stamps: the last ID is minted in the millisecond before the
// deadline, and every call from the deadline on fails with the lease's
// error.
func TestDeadlineFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFake(3, 1, 0)
		deadline := time.Now().Add(10 * time.Second)
		l.setFence(deadline, 1<<60)
		frozen := time.Now() // a stamping clock that never moves
		g := mustNew(t, l, WithLayout(Layout{NodeBits: 2, StepBits: 20}), WithClock(func() time.Time { return frozen }))

		var last time.Time
		var err error
		for {
			now := time.Now()
			if _, err = g.Generate(); err != nil {
				break
			}
			last = now
			time.Sleep(time.Millisecond)
		}
		if !errors.Is(err, nodeid.ErrLeaseLost) || !errors.Is(err, nodeid.ErrExpired) {
			t.Fatalf("Generate at the deadline: %v; want ErrLeaseLost and ErrExpired", err)
		}
		if want := deadline.Add(-time.Millisecond); !last.Equal(want) {
			t.Fatalf("last ID minted at %s; want %s, the millisecond before the deadline", last, want)
		}
		if now := time.Now(); !now.Equal(deadline) {
			t.Fatalf("first refusal at %s; want the deadline %s", now, deadline)
		}
		time.Sleep(time.Hour)
		if _, err := g.Generate(); !errors.Is(err, nodeid.ErrExpired) {
			t.Fatalf("Generate long after the deadline: %v", err)
		}
	})
}

// Once the lease is lost, Generate fails with its cause; once it is
// released, Generate fails for good and the seal reports the last stamp.
func TestLostAndReleased(t *testing.T) {
	l := newFake(9, 4, 0)
	clock := time.UnixMilli(1_800_000_000_000)
	g := mustNew(t, l, WithClock(func() time.Time { return clock }))
	p := mustGenerate(t, g)
	if p.Ms != clock.UnixMilli() || p.Node != 9 || p.Seq != 0 {
		t.Fatalf("first ID %+v", p)
	}

	l.lose(nodeid.ErrTakenOver)
	for range 3 {
		if _, err := g.Generate(); !errors.Is(err, nodeid.ErrLeaseLost) || !errors.Is(err, nodeid.ErrTakenOver) {
			t.Fatalf("Generate after takeover: %v", err)
		}
	}
	if _, err := newGenerator(newFakeLost(nodeid.ErrExpired)); !errors.Is(err, nodeid.ErrExpired) {
		t.Fatalf("New on a lost lease: %v", err)
	}

	l2 := newFake(10, 4, 0)
	g2 := mustNew(t, l2, WithClock(func() time.Time { return clock }))
	mustGenerate(t, g2)
	mustGenerate(t, g2)
	clock = clock.Add(5 * time.Millisecond)
	last := mustGenerate(t, g2)
	if h := l2.release(); h != last.Ms {
		t.Fatalf("release records %d; want the last stamp %d", h, last.Ms)
	}
	for range 3 {
		if _, err := g2.Generate(); errors.Is(err, nodeid.ErrLeaseLost) || !errors.Is(err, nodeid.ErrReleased) {
			t.Fatalf("Generate after release: %v", err)
		}
	}
	// The seal alone stops the generator, even if the lease still admits IDs.
	l3 := newFake(11, 1, 0)
	g3 := mustNew(t, l3)
	if h := l3.sealOnly(); h != 0 {
		t.Fatalf("seal of an unused generator = %d; want the previous horizon 0", h)
	}
	if _, err := g3.Generate(); !errors.Is(err, nodeid.ErrReleased) {
		t.Fatalf("Generate after seal: %v", err)
	}
}

func newFakeLost(cause error) *fakeLease {
	l := newFake(1, 1, 0)
	l.lose(cause)
	return l
}

// A seal racing with concurrent Generate calls: every ID returned is
// counted by the seal (the largest stamp returned is exactly the sealed
// value), and no call that starts after the seal returned mints. The clock
// moves one millisecond per reading, so that an ID minted after the seal
// would carry a larger stamp.
func TestSealRacesGenerate(t *testing.T) {
	for round := range 200 {
		var tick atomic.Int64
		tick.Store(1_800_000_000_000)
		clock := func() time.Time { return time.UnixMilli(tick.Add(1)) }
		l := newFake(5, 2, 0)
		g := mustNew(t, l, WithClock(clock))

		var sealed atomic.Bool
		var maxMs atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for {
					after := sealed.Load()
					id, err := g.Generate()
					if err != nil {
						if !errors.Is(err, nodeid.ErrReleased) {
							t.Errorf("Generate: %v", err)
						}
						return
					}
					if after {
						t.Errorf("round %d: ID %d minted by a call that started after the seal", round, id)
						return
					}
					ms := g.Layout().Decode(id).Ms
					for m := maxMs.Load(); ms > m && !maxMs.CompareAndSwap(m, ms); m = maxMs.Load() {
					}
				}
			})
		}
		close(start)
		for tick.Load() < 1_800_000_000_000+int64(round%50)*20 {
			// let the generators run a little, longer in some rounds
		}
		h := l.sealOnly()
		sealed.Store(true)
		wg.Wait()
		if got := maxMs.Load(); got != h {
			t.Fatalf("round %d: the seal returned %d, but the latest stamp returned is %d", round, h, got)
		}
		if t.Failed() {
			return
		}
	}
}

// When the clock is behind the previous holder's horizon, Generate waits
// for it up to the max wait, and fails at once when the gap is larger.
func TestClockBehindHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prev := time.Now().UnixMilli() + 2000
		g := mustNew(t, newFake(4, 1, prev), WithLayout(synctestLayout))
		start := time.Now()
		p := mustGenerate(t, g)
		if p.Ms != prev+1 || p.Seq != 0 {
			t.Fatalf("first ID after the horizon %d: %+v", prev, p)
		}
		if waited := time.Since(start); waited < 2*time.Second || waited > 2*time.Second+time.Millisecond {
			t.Fatalf("waited %s for a clock 2s behind", waited)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		prev := time.Now().UnixMilli() + 2000
		g := mustNew(t, newFake(4, 2, prev), WithLayout(synctestLayout), WithMaxWait(time.Second))
		start := time.Now()
		_, err := g.Generate()
		if !errors.Is(err, nodeid.ErrClockBehind) {
			t.Fatalf("Generate 2s behind with a 1s bound: %v", err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("Generate waited %s before failing; the gap was known to exceed the bound", time.Since(start))
		}
		for _, want := range []string{"previous holder's horizon", "the max wait of 1s would end first", "node ID 4"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		// Once the gap is within the bound, the call waits and succeeds.
		time.Sleep(1500 * time.Millisecond)
		if p := mustGenerate(t, g); p.Ms != prev+1 {
			t.Fatalf("ID after the wait: %+v; want stamp %d", p, prev+1)
		}
		if waited := time.Since(start); waited != 2001*time.Millisecond {
			t.Fatalf("stamped at %s after start; want 2.001s", waited)
		}
	})
}

// GenerateContext waits for the clock as Generate does, but returns when
// its context ends, at that instant, with the context's error wrapped and
// no ID minted.
func TestGenerateContextEndsTheWait(t *testing.T) {
	// A live context: the same wait, the same ID.
	synctest.Test(t, func(t *testing.T) {
		prev := time.Now().UnixMilli() + 2000
		g := mustNew(t, newFake(4, 1, prev), WithLayout(synctestLayout))
		start := time.Now()
		id, err := g.GenerateContext(t.Context())
		if p := synctestLayout.Decode(id); err != nil || p.Ms != prev+1 || p.Seq != 0 || time.Since(start) != 2001*time.Millisecond {
			t.Fatalf("GenerateContext = %+v, %v after %s; want stamp %d after 2.001s", p, err, time.Since(start), prev+1)
		}
	})
	// Cancelled during the wait for the previous holder's horizon, and a
	// deadline that ends within it.
	for _, c := range []struct {
		name   string
		ctx    func(context.Context) (context.Context, context.CancelFunc)
		cancel time.Duration // when the test cancels, 0 for never
		want   error
		after  time.Duration
	}{
		{"cancelled", context.WithCancel, 500 * time.Millisecond, context.Canceled, 500 * time.Millisecond},
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 300*time.Millisecond)
		}, 0, context.DeadlineExceeded, 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				prev := time.Now().UnixMilli() + 2000
				g := mustNew(t, newFake(4, 1, prev), WithLayout(synctestLayout))
				ctx, cancel := c.ctx(t.Context())
				defer cancel()
				start := time.Now()
				var (
					err     error
					elapsed time.Duration
				)
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, err = g.GenerateContext(ctx)
					elapsed = time.Since(start)
				}()
				if c.cancel != 0 {
					time.Sleep(c.cancel)
					cancel()
				}
				<-done
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "node ID 4") {
					t.Fatalf("GenerateContext = %v; want an error of node ID 4 matching %v", err, c.want)
				}
				if elapsed != c.after {
					t.Fatalf("GenerateContext returned after %s; want %s, when its context ended", elapsed, c.after)
				}
				// Nothing was minted: the next ID is the first after the horizon.
				if p := mustGenerate(t, g); p.Ms != prev+1 || p.Seq != 0 {
					t.Fatalf("ID after the cancelled call: %+v; want stamp %d, sequence 0", p, prev+1)
				}
			})
		})
	}
	// A context already ended mints nothing, even with no wait, and its
	// cause is wrapped too.
	synctest.Test(t, func(t *testing.T) {
		g := mustNew(t, newFake(4, 1, 0), WithLayout(synctestLayout))
		cause := errors.New("request gone")
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(cause)
		if _, err := g.GenerateContext(ctx); !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
			t.Fatalf("GenerateContext with an ended context = %v; want context.Canceled and its cause", err)
		}
		if p := mustGenerate(t, g); p.Seq != 0 {
			t.Fatalf("ID after the refused call: %+v; want sequence 0", p)
		}
	})
	// Cancelled while it spins for the next millisecond, its sequence used
	// up (2 IDs per millisecond): the clock, which stands still, cancels on
	// its fifth reading, in the wait. The call returns before the clock
	// moves.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		readings := 0
		clock := WithClock(func() time.Time {
			if readings++; readings == 5 {
				cancel()
			}
			return time.Now()
		})
		g := mustNew(t, newFake(4, 1, 0), WithLayout(Layout{NodeBits: 10, StepBits: 1}), clock)
		mustGenerate(t, g)
		mustGenerate(t, g)
		readings = 0
		start := time.Now()
		if _, err := g.GenerateContext(ctx); !errors.Is(err, context.Canceled) || time.Since(start) != 0 || readings < 5 {
			t.Fatalf("GenerateContext = %v after %s and %d clock readings; want context.Canceled at once, in the wait", err, time.Since(start), readings)
		}
	})
}

// A wall clock that steps back never yields a repeated or smaller ID: the
// generator goes on from its last stamp, waits when that millisecond's
// sequence is used up, and fails with ErrClockBehind if the wait would
// exceed the bound.
func TestClockStepsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c stepClock
		// 4 IDs per millisecond, so that a step back soon uses up a millisecond.
		lay := Layout{NodeBits: 10, StepBits: 2}
		g := mustNew(t, newFake(8, 1, 0), WithLayout(lay), WithClock(c.now), WithMaxWait(time.Second))
		var last bw.ID
		next := func() (bw.ID, error) {
			id, err := g.Generate()
			if err == nil {
				if id <= last {
					t.Fatalf("ID %d (%+v) after %d (%+v)", id, lay.Decode(id), last, lay.Decode(last))
				}
				last = id
			}
			return id, err
		}
		mustNext := func() Parts {
			t.Helper()
			id, err := next()
			if err != nil {
				t.Fatal(err)
			}
			return lay.Decode(id)
		}
		top := mustNext().Ms
		mustNext()

		// A 3 ms step back: the two free IDs of the last millisecond are used,
		// then the generator waits for the clock to pass it.
		c.set(-3 * time.Millisecond)
		start := time.Now()
		for range 2 {
			if p := mustNext(); p.Ms != top {
				t.Fatalf("after a step back: stamp %d; want the last stamp %d", p.Ms, top)
			}
		}
		if time.Since(start) != 0 {
			t.Fatalf("waited %s with IDs left in the last stamped millisecond", time.Since(start))
		}
		if p := mustNext(); p.Ms != top+1 {
			t.Fatalf("after the millisecond was used up: stamp %d; want %d", p.Ms, top+1)
		}
		if waited := time.Since(start); waited != 4*time.Millisecond {
			t.Fatalf("waited %s; want 4ms for a clock 3ms behind", waited)
		}

		// A 10 s step back uses up the millisecond, then fails at once.
		top = lay.Decode(last).Ms
		c.set(-10 * time.Second)
		start = time.Now()
		var err error
		for err == nil {
			_, err = next()
		}
		if !errors.Is(err, nodeid.ErrClockBehind) || !strings.Contains(err.Error(), "has used up its sequence") {
			t.Fatalf("Generate 10s behind the last stamp with a 1s bound: %v", err)
		}
		if p := lay.Decode(last); p.Ms != top || p.Seq != 3 {
			t.Fatalf("last ID before the refusal: %+v; want the rest of millisecond %d", p, top)
		}
		if time.Since(start) != 0 {
			t.Fatalf("waited %s before failing", time.Since(start))
		}
		c.set(0)
		time.Sleep(time.Millisecond)
		if p := mustNext(); p.Ms != time.Now().UnixMilli() || p.Seq != 0 {
			t.Fatalf("after the clock recovered at %d: %+v", time.Now().UnixMilli(), p)
		}
	})
}

// Two claims of one node ID in the same millisecond mint different IDs when
// the layout has epoch bits, and the same ID without them: the epoch bits
// are what separates them when every clock lies.
func TestEpochBitsDistinguishClaims(t *testing.T) {
	clock := func() time.Time { return time.UnixMilli(1_800_000_000_000) }
	for _, c := range []struct {
		epochBits uint8
		differ    bool
	}{{2, true}, {0, false}} {
		lay := Layout{Origin: TwitterOrigin, NodeBits: 10, StepBits: 12, EpochBits: c.epochBits}
		a := mustGenerate(t, mustNew(t, newFake(5, 6, 0), WithLayout(lay), WithClock(clock)))
		b := mustGenerate(t, mustNew(t, newFake(5, 7, 0), WithLayout(lay), WithClock(clock)))
		ida, _ := lay.Encode(a)
		idb, _ := lay.Encode(b)
		if (ida != idb) != c.differ {
			t.Fatalf("epoch bits %d: claims 6 and 7 minted %d (%+v) and %d (%+v)", c.epochBits, ida, a, idb, b)
		}
		if c.differ && (a.Epoch != 6%4 || b.Epoch != 7%4) {
			t.Fatalf("epoch fields %d and %d; want 2 and 3", a.Epoch, b.Epoch)
		}
	}
}

// IDs of the default layout decode with bwmarrin's own accessors.
func TestDefaultLayoutDecodesWithBwmarrin(t *testing.T) {
	g := mustNew(t, newFake(777, 3, 0))
	before := time.Now().UnixMilli()
	ids := make([]bw.ID, 20_000)
	for i := range ids {
		id, err := g.Generate()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	after := time.Now().UnixMilli()
	for _, id := range ids {
		p := DefaultLayout.Decode(id)
		if id.Node() != 777 || id.Time() != p.Ms || id.Step() != p.Seq || !stampedWithin(p.Ms, before, after) {
			t.Fatalf("ID %d: bwmarrin reads time %d node %d step %d; Decode %+v; minted in [%d, %d]",
				id, id.Time(), id.Node(), id.Step(), p, before, after)
		}
		if back, err := bw.ParseString(id.String()); err != nil || back != id {
			t.Fatalf("bwmarrin round trip of %d: %d, %v", id, back, err)
		}
	}
}

// stampSlack is how far the default stamping clock may stand from the wall
// clock read around a Generate: it is anchored on a reading whose two
// halves may be up to anchorSpread apart (more, on a loaded machine, when
// every try was split), and the wall clock may slew until the next
// anchoring (chrony slews up to 83 ms a second). Any lag at all puts a
// stamp in the millisecond before a wall reading taken just after a
// millisecond began. The steps the tests make are seconds.
const stampSlack = 250 * time.Millisecond

// stampedWithin reports whether stamp ms falls in [before, after], wall
// clock milliseconds read around the Generate, give or take stampSlack.
func stampedWithin(ms, before, after int64) bool {
	return ms >= before-stampSlack.Milliseconds() && ms <= after+stampSlack.Milliseconds()
}

// Two generators with different layouts in one process do not interfere,
// and neither reads bwmarrin's package settings, even when a program
// changes them.
func TestTwoLayoutsConcurrently(t *testing.T) {
	saved := [3]int64{bw.Epoch, int64(bw.NodeBits), int64(bw.StepBits)}
	bw.Epoch, bw.NodeBits, bw.StepBits = 0, 5, 5
	defer func() { bw.Epoch, bw.NodeBits, bw.StepBits = saved[0], uint8(saved[1]), uint8(saved[2]) }()

	other := Layout{Origin: 1_600_000_000_000, NodeBits: 16, StepBits: 8, EpochBits: 3}
	gens := []*Generator{
		mustNew(t, newFake(1023, 2, 0)),
		mustNew(t, newFake(60_000, 13, 0), WithLayout(other)),
	}
	want := []Parts{{Node: 1023, Epoch: 0}, {Node: 60_000, Epoch: 13 % 8}}
	var wg sync.WaitGroup
	for i, g := range gens {
		for range 4 {
			wg.Go(func() {
				for range 20_000 {
					before := time.Now().UnixMilli()
					id, err := g.Generate()
					if err != nil {
						t.Error(err)
						return
					}
					p := g.Layout().Decode(id)
					if after := time.Now().UnixMilli(); p.Node != want[i].Node || p.Epoch != want[i].Epoch || !stampedWithin(p.Ms, before, after) {
						t.Errorf("generator %d: ID %d decodes to %+v; want node %d epoch %d, time in [%d, %d]", i, id, p, want[i].Node, want[i].Epoch, before, after)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if bw.Epoch != 0 || bw.NodeBits != 5 || bw.StepBits != 5 {
		t.Fatalf("bwmarrin's settings changed: %d %d %d", bw.Epoch, bw.NodeBits, bw.StepBits)
	}
}

// A stamp later than the horizon the lease recorded is refused, and
// refusing it consumes nothing.
func TestClockAheadOfRecordedHorizon(t *testing.T) {
	ms := int64(1_800_000_000_000)
	clock := func() time.Time { return time.UnixMilli(ms) }
	l := newFake(2, 1, 0)
	l.setFence(time.Now().Add(time.Hour), ms-1)
	g := mustNew(t, l, WithClock(clock))
	if _, err := g.Generate(); !errors.Is(err, nodeid.ErrClockAhead) {
		t.Fatalf("Generate past the recorded horizon: %v", err)
	}
	l.setFence(time.Now().Add(time.Hour), ms)
	if p := mustGenerate(t, g); p.Ms != ms || p.Seq != 0 {
		t.Fatalf("ID after the horizon moved: %+v", p)
	}
}

// Stamps past the layout's end fail with nodeid.ErrTimeOverflow, also when the
// last millisecond's sequence is used up, rather than waiting.
func TestTimeOverflow(t *testing.T) {
	lay := Layout{NodeBits: 30, StepBits: 1} // 32 time bits: ends 1970-02-19
	end := lay.End()
	g := mustNew(t, newFake(1, 1, 0), WithLayout(lay), WithClock(func() time.Time { return time.UnixMilli(end) }))
	for seq := range int64(2) {
		if p := mustGenerate(t, g); p.Ms != end || p.Seq != seq {
			t.Fatalf("ID %d of the last millisecond: %+v", seq, p)
		}
	}
	if _, err := g.Generate(); !errors.Is(err, nodeid.ErrTimeOverflow) || !strings.Contains(err.Error(), "1970-02-19") {
		t.Fatalf("Generate past the end: %v", err)
	}
	g2 := mustNew(t, newFake(1, 1, 0), WithLayout(lay))
	if _, err := g2.Generate(); !errors.Is(err, nodeid.ErrTimeOverflow) {
		t.Fatalf("Generate now with a layout that ended in 1970: %v", err)
	}
	if _, err := newGenerator(newFake(1, 1, end), WithLayout(lay)); !errors.Is(err, nodeid.ErrTimeOverflow) {
		t.Fatalf("New after a horizon at the layout's end: %v", err)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, nodeid.ErrInvalidOption) || !strings.Contains(err.Error(), "nil") {
		t.Errorf("New(nil) = %v", err)
	}
	for _, c := range []struct {
		l    lease
		opts []Option
		want string
	}{
		{newFake(1, 1, 0), []Option{nil}, "option 0 is nil"},
		{newFake(1, 1, 0), []Option{WithClock(nil)}, "clock is nil"},
		{newFake(1, 1, 0), []Option{WithMaxWait(-time.Second)}, "max wait -1s is outside 1ms to 1h0m0s"},
		{newFake(1, 1, 0), []Option{WithMaxWait(0)}, "max wait 0s"},
		{newFake(1, 1, 0), []Option{WithMaxWait(2 * time.Hour)}, "max wait 2h0m0s"},
		{newFake(1, 1, 0), []Option{WithLayout(Layout{NodeBits: 10})}, "step bits 0"},
		{newFake(1024, 1, 0), nil, "node ID 1024 does not fit the layout (63-bit IDs: origin 1288834974657"},
		{newFake(1, 1, 0), []Option{WithLayout(Layout{TimeUnit: 10 * time.Millisecond, NodeBits: 10, StepBits: 12}), WithMaxWait(5 * time.Millisecond)},
			"max wait 5ms is shorter than the layout's time unit 10ms"},
		{newFake(8, 1, 0), []Option{WithLayout(Layout{NodeBits: 3, StepBits: 12})}, "node ID 8 does not fit"},
		{newFake(-1, 1, 0), nil, "node ID -1"},
	} {
		_, err := newGenerator(c.l, c.opts...)
		if !errors.Is(err, nodeid.ErrInvalidOption) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "snowflake: ") {
			t.Errorf("New(%+v) = %v; want ErrInvalidOption saying %q", c.opts, err, c.want)
		}
	}
	for _, d := range []time.Duration{ShortestMaxWait, DefaultMaxWait, LongestMaxWait} {
		if g, err := newGenerator(newFake(1, 1, 0), WithMaxWait(d)); err != nil || g.MaxWait() != d {
			t.Errorf("WithMaxWait(%s): %v", d, err)
		}
	}
}

// Two generators on one lease would mint the same IDs: New refuses the
// second, and any generator once the lease is released.
func TestOneGeneratorPerLease(t *testing.T) {
	l := newFake(6, 1, 0)
	g := mustNew(t, l)
	if _, err := newGenerator(l); err == nil || !strings.Contains(err.Error(), "already has a generator") {
		t.Fatalf("second New on one lease: %v", err)
	}
	if g.NodeID() != 6 || g.Epoch() != 1 || g.Layout() != DefaultLayout {
		t.Fatalf("accessors: %d %d %v", g.NodeID(), g.Epoch(), g.Layout())
	}
	l.release()
	if _, err := newGenerator(l); !errors.Is(err, nodeid.ErrReleased) {
		t.Fatalf("New on a released lease: %v", err)
	}
}

// The success path reads the custom clock once, checks the lease once and
// does not allocate.
func TestGenerateCost(t *testing.T) {
	var reads atomic.Int64
	clock := func() time.Time { reads.Add(1); return time.Now() }
	l := &countingLease{fakeLease: newFake(1, 1, 0)}
	// 2^20 IDs per millisecond: the sequence is never used up here.
	g := mustNew(t, l, WithLayout(Layout{Origin: TwitterOrigin, NodeBits: 2, StepBits: 20}), WithClock(clock))
	const n = 10_000
	for range n {
		mustGenerate(t, g)
	}
	if reads.Load() != n || l.checks.Load() != n {
		t.Fatalf("%d IDs read the clock %d times and checked the lease %d times", n, reads.Load(), l.checks.Load())
	}
	g2 := mustNew(t, newFake(1, 1, 0))
	if a := testing.AllocsPerRun(1000, func() { _, _ = g2.Generate() }); a != 0 {
		t.Fatalf("Generate allocates %v times per call", a)
	}
}

// At the cap, a time unit's sequence is used up and the next ID waits for
// the next unit: each unit holds exactly PerUnit IDs, and minting three
// units' worth takes two units and a bit.
func TestSequenceExhaustion(t *testing.T) {
	for _, c := range []struct {
		name string
		lay  Layout
	}{
		{"1ms", Layout{NodeBits: 10, StepBits: 3}},
		{"10ms", Layout{TimeUnit: 10 * time.Millisecond, NodeBits: 10, StepBits: 3}},
		{"1s-epoch-bits", Layout{TimeUnit: time.Second, TotalBits: JSSafeBits, NodeBits: 10, StepBits: 5, EpochBits: 1}},
		{"js53", Layout{TotalBits: JS53.TotalBits, NodeBits: JS53.NodeBits, StepBits: JS53.StepBits}}, // from the bubble's clock
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lay := c.lay
				g := mustNew(t, newFake(1, 1, 0), WithLayout(lay))
				t0, per, unit := time.Now(), lay.PerUnit(), lay.Unit()
				for i := range 3 * per {
					p := mustGenerate(t, g)
					if want := t0.Add(time.Duration(i/per) * unit).UnixMilli(); p.Ms != want || p.Seq != i%per {
						t.Fatalf("ID %d: %+v; want stamp %d seq %d", i, p, want, i%per)
					}
				}
				if took := time.Since(t0); took != 2*unit {
					t.Fatalf("%d IDs took %s; want %s", 3*per, took, 2*unit)
				}
			})
		})
	}
}

// Two holders of one node ID, one after the other, on a layout of 10 ms
// units, the first's horizon in the middle of a unit: the first mints in no
// unit that ends after its horizon (the lease is checked with the unit's
// last millisecond), the second in no unit that begins at or before it
// (its first unit is the one after the horizon's), and the seal returns the
// last millisecond of the last unit stamped. Otherwise both would stamp
// the unit that holds the horizon, and mint the same IDs.
func TestCoarseUnitHandOver(t *testing.T) {
	lay := Layout{TimeUnit: 10 * time.Millisecond, NodeBits: 10, StepBits: 2} // 4 IDs per unit
	// handOver checks a's IDs against the horizon the node ID's row keeps
	// after a, and b's, minted by the next holder after that horizon.
	handOver := func(t *testing.T, a []Parts, horizon int64, b []Parts) {
		t.Helper()
		for _, p := range a {
			if last := p.Ms + 9; last > horizon {
				t.Errorf("the first holder stamped the unit %d-%d, which ends after its horizon %d", p.Ms, last, horizon)
			}
		}
		for _, p := range b {
			if p.Ms <= horizon {
				t.Errorf("the next holder stamped the unit %d-%d, which begins at or before the previous horizon %d", p.Ms, p.Ms+9, horizon)
			}
			if slices.Contains(a, p) {
				t.Errorf("both holders minted the ID %+v", p)
			}
		}
	}
	t.Run("lapsed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now().UnixMilli() // 2000-01-01: a unit begins
			horizon := t0 + 14           // in the unit t0+10 to t0+19
			a := newFake(5, 1, 0)
			a.setFence(time.Now().Add(time.Hour), horizon)
			ga := mustNew(t, a, WithLayout(lay))
			time.Sleep(3 * time.Millisecond)
			var aIDs []Parts
			for range 4 { // the unit t0 to t0+9 ends before the horizon
				aIDs = append(aIDs, mustGenerate(t, ga))
			}
			// The unit is used up: the next ID waits for the next unit, which
			// ends after the horizon (the slow path's check).
			if id, err := ga.Generate(); !errors.Is(err, nodeid.ErrClockAhead) {
				t.Errorf("Generate in the unit of the horizon, after a wait: %+v, %v; want ErrClockAhead", lay.Decode(id), err)
				aIDs = append(aIDs, lay.Decode(id))
			}
			time.Sleep(2 * time.Millisecond) // t0+12, at or before the horizon: the fast path's check
			if id, err := ga.Generate(); !errors.Is(err, nodeid.ErrClockAhead) {
				t.Errorf("Generate at %d, in the unit of the horizon %d: %+v, %v; want ErrClockAhead", time.Now().UnixMilli(), horizon, lay.Decode(id), err)
				aIDs = append(aIDs, lay.Decode(id))
			}
			a.lose(nodeid.ErrExpired) // the row keeps the horizon of a's last renewal

			time.Sleep(3 * time.Millisecond) // t0+15, after the horizon
			gb := mustNew(t, newFake(5, 2, horizon), WithLayout(lay))
			start := time.Now()
			var bIDs []Parts
			for range 2 {
				bIDs = append(bIDs, mustGenerate(t, gb))
			}
			if waited := time.Since(start); waited != 5*time.Millisecond {
				t.Errorf("the next holder waited %s; want 5ms, for the unit after the horizon's", waited)
			}
			handOver(t, aIDs, horizon, bIDs)
		})
	})
	t.Run("released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now().UnixMilli()
			a := newFake(5, 1, 0)
			ga := mustNew(t, a, WithLayout(lay))
			time.Sleep(3 * time.Millisecond)
			aIDs := []Parts{mustGenerate(t, ga)}
			horizon := a.release() // the seal's: the last millisecond of the unit
			if horizon != t0+9 {
				t.Errorf("released at %d with the horizon %d; want %d, the last millisecond of the unit stamped", t0+3, horizon, t0+9)
			}

			time.Sleep(2 * time.Millisecond) // t0+5
			gb := mustNew(t, newFake(5, 2, horizon), WithLayout(lay))
			start := time.Now()
			bIDs := []Parts{mustGenerate(t, gb)}
			if waited := time.Since(start); waited != 5*time.Millisecond {
				t.Errorf("the next holder waited %s; want 5ms, for the unit after the horizon's", waited)
			}
			handOver(t, aIDs, horizon, bIDs)
		})
	})
}

// The default stamping clock reads the wall clock at most once a second
// and advances with the monotonic clock in between: it follows a step of
// the wall clock at the next anchoring, and a step back never makes IDs
// repeat or decrease. The test moves the anchoring forward instead of
// sleeping.
func TestDefaultClockFollowsWallSteps(t *testing.T) {
	var c stepClock
	g := mustNew(t, newFake(1, 1, 0))
	g.readWall = func() (int64, time.Duration) {
		w := time.Now() // the wall clock steps; the monotonic clock does not
		return c.now().UnixNano(), w.Sub(g.base)
	}
	var last Parts
	next := func() Parts {
		t.Helper()
		p := mustGenerate(t, g)
		if p.Ms < last.Ms || p.Ms == last.Ms && p.Seq <= last.Seq {
			t.Fatalf("%+v after %+v", p, last)
		}
		last = p
		return p
	}
	within := func(what string, clock func() time.Time) {
		t.Helper()
		before := clock().UnixMilli()
		p := next()
		if after := clock().UnixMilli(); !stampedWithin(p.Ms, before, after) {
			t.Fatalf("%s: stamp %d; want %d-%d, give or take %s", what, p.Ms, before, after, stampSlack)
		}
	}
	within("at the start", time.Now)

	c.set(5 * time.Second)
	within("before the next anchoring", time.Now)
	if at, d := g.anchorAt.Load(), time.Since(g.base); at > int64(d+anchorEvery) || at < int64(anchorEvery) {
		t.Fatalf("next anchoring at %s; want within %s of %s", time.Duration(at), anchorEvery, d)
	}
	g.anchorAt.Store(0)
	within("after a 5s step", c.now)
	if at, d := g.anchorAt.Load(), time.Since(g.base); at > int64(d+anchorEvery) || at <= int64(d) {
		t.Fatalf("after anchoring, the next is at %s; want in (%s, %s]", time.Duration(at), d, d+anchorEvery)
	}

	c.set(-5 * time.Second)
	g.anchorAt.Store(0)
	top := last.Ms
	for range 100 {
		if p := next(); p.Ms != top {
			t.Fatalf("after a 10s step back: stamp %d; want the last stamp %d", p.Ms, top)
		}
	}
	c.set(6 * time.Second)
	g.anchorAt.Store(0)
	within("after a step past the last stamp", c.now)
}

// Goroutines minting while the wall clock steps back and forth: IDs stay
// distinct and strictly increasing per goroutine.
func TestClockStepsBackConcurrently(t *testing.T) {
	var c stepClock
	lay := Layout{Origin: TwitterOrigin, NodeBits: 10, StepBits: 6} // 64 per ms: steps back use them up
	g := mustNew(t, newFake(3, 1, 0), WithLayout(lay), WithClock(c.now))
	stop := make(chan struct{})
	stepped := make(chan int)
	go func() {
		n := 0
		defer func() { stepped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.set(-time.Duration(n%3) * 7 * time.Millisecond)
			n++
			time.Sleep(200 * time.Microsecond)
		}
	}()
	ids := make([][]bw.ID, 4)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			for range 20_000 {
				id, err := g.Generate()
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = append(ids[i], id)
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-stepped; n < 3 {
		t.Fatalf("the clock stepped %d times during the run", n)
	}
	var all []bw.ID
	for i, out := range ids {
		for j := 1; j < len(out); j++ {
			if out[j] <= out[j-1] {
				t.Fatalf("goroutine %d: %+v after %+v", i, lay.Decode(out[j]), lay.Decode(out[j-1]))
			}
		}
		all = append(all, out...)
	}
	slices.Sort(all)
	if k := len(slices.Compact(all)); k != len(all) {
		t.Fatalf("%d of %d IDs repeated", len(all)-k, len(all))
	}
}

// The Generator's fields are grouped by cache line for a size class whose
// objects are 64-byte aligned; the state word is alone on its line.
func TestGeneratorLayout(t *testing.T) {
	var g Generator
	if size, off := unsafe.Sizeof(g), unsafe.Offsetof(g.state); size != 256 || off != 64 {
		t.Fatalf("Generator is %d bytes with the state at %d; want 256 and 64", size, off)
	}
	if off := unsafe.Offsetof(g.corr); off != 128 {
		t.Fatalf("corr at %d; want 128, the line after the state's", off)
	}
}

// A custom clock that is slow to answer (the goroutine paused between the
// clock reads) cannot make Generate mint an ID stamped after the deadline:
// the deadline is checked against a monotonic reading taken after the stamp.
func TestSlowClockCannotStampAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFake(3, 1, 0)
		deadline := time.Now().Add(time.Second)
		l.setFence(deadline, math.MaxInt64)
		var pause atomic.Bool
		clock := func() time.Time {
			if pause.Load() {
				time.Sleep(time.Until(deadline) + time.Millisecond)
			}
			return time.Now()
		}
		g := mustNew(t, l, WithClock(clock), WithLayout(synctestLayout))
		if _, err := g.Generate(); err != nil {
			t.Fatal(err)
		}
		pause.Store(true)
		id, err := g.Generate()
		if err == nil {
			t.Fatalf("minted %d stamped %s, after the deadline %s",
				id, time.UnixMilli(g.Layout().Decode(id).Ms).UTC(), deadline.UTC())
		}
		if !errors.Is(err, nodeid.ErrExpired) {
			t.Fatalf("Generate = %v, want the expiry", err)
		}
	})
}

// An anchoring reading whose wall and monotonic halves were read a pause
// apart (the thread descheduled inside time.Now) is taken again, so that
// the default stamping clock does not lag the wall clock by the pause.
func TestAnchorReadingSkipsASplitReading(t *testing.T) {
	const wall = int64(1_800_000_000_000_000_000) // unix ns
	var mono time.Duration
	calls := 0
	read := func() (int64, time.Duration) {
		calls++
		mono += time.Microsecond
		ns := wall + int64(mono)
		if calls == 2 {
			mono += 5 * time.Millisecond // between the wall reading and the monotonic one
		}
		return ns, mono
	}
	ns, since := anchorReading(read)
	if lag := wall - (ns - int64(since)); lag != 0 || calls != 6 {
		t.Fatalf("anchored %s behind the wall clock after %d readings; want 0 after 6", time.Duration(lag), calls)
	}
	// A machine too busy for a tight reading: the tightest of the tries.
	calls, mono = 0, 0
	slow := func() (int64, time.Duration) {
		calls++
		mono += time.Millisecond
		if calls == 3*anchorTries-1 { // the last try's reading: the tightest
			mono -= 900 * time.Microsecond
		}
		return wall + int64(mono), mono
	}
	if ns, since := anchorReading(slow); calls != 3*anchorTries || ns-int64(since) != wall || since != time.Duration(3*anchorTries-1)*time.Millisecond-900*time.Microsecond {
		t.Fatalf("after %d readings: wall %d, since %s", calls, ns, since)
	}
}
