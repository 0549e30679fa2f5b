package snowflake

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"go.opentelemetry.io/otel"

	"github.com/nodeid/nodeid"
)

// lease is what a Generator needs of a lease: the lease and its
// nodeid.Fence. leaseFence implements it; the unit tests use fakes.
type lease interface {
	NodeID() int64
	Epoch() int64
	Table() string
	NodeRange() (lo, hi int64)
	PreviousHorizon() int64
	Base() time.Time
	Check(d time.Duration, ms int64) error
	Bind(seal func() int64) error
}

// leaseFence is a *nodeid.Lease with its Fence.
type leaseFence struct {
	*nodeid.Lease
	nodeid.Fence
}

var _ lease = leaseFence{}

// sealedBit marks a sealed state word. The packed time and sequence use at
// most 62 bits (TimeBits + SeqBits <= Width - NodeBits <= 62), so it is
// never set by counting.
const sealedBit = 1 << 63

// Generator mints IDs under one lease. It is safe for concurrent use and
// takes no lock: each ID costs one reading of the monotonic clock, one
// lease check and one compare-and-swap. Build it with New; the zero value
// is not usable.
type Generator struct {
	// The fields are grouped by cache line: 256 bytes, a size class whose
	// objects are 64-byte aligned. What every call reads comes first.
	lease    lease
	base     time.Time        // the lease's Base; carries the monotonic clock
	baseNs   int64            // base's wall clock, unix ns
	clock    func() time.Time // WithClock, or nil
	originMs int64            // layout.Start()

	// state packs, as (time units since the layout's origin) << seqBits |
	// sequence, the least value the next ID may take: the last minted plus
	// one. sealedBit set means the generator is sealed and mints nothing
	// more. Every call writes it, so it shares its cache line only with
	// what waits, failures and the seal read.
	state   atomic.Uint64
	metrics *instruments
	prevMs  int64  // the previous holder's horizon
	initial uint64 // the state before the first ID
	_       [32]byte

	// The default stamping clock is base's wall clock plus the monotonic
	// time since base plus corr, the wall clock's drift from that measured
	// at the last anchoring. anchorAt is the monotonic time since base from
	// which the next Generate re-anchors. Both change about once a second.
	corr     atomic.Int64
	anchorAt atomic.Int64
	pk       packing // the layout's shifts, masks and time unit
	fields   int64   // the node and epoch fields of every ID (packing.fields)

	// Read only when waiting, sealing or failing, and by Layout.
	readWall  func() (unixNs int64, sinceBase time.Duration) // time.Now, for anchoring
	maxWait   time.Duration
	layout    Layout
	errSealed error
	_         [8]byte // to 256 bytes: a size class of 64-byte aligned objects
}

// New returns a Generator that mints IDs under l: node ID l.NodeID(), with
// the low EpochBits of l.Epoch() if the layout has epoch bits, stamped with
// time units that begin strictly after l.PreviousHorizon(). It binds the
// generator to the lease, so that Release seals it and records the last
// millisecond of the latest time unit it stamped.
// Build one Generator per lease and share it: New refuses a second one on
// the same lease (the lease takes one Bind), and fails if the lease is
// already lost.
func New(l *nodeid.Lease, opts ...Option) (*Generator, error) {
	if l == nil {
		return nil, invalid("New: the lease is nil")
	}
	return newGenerator(leaseFence{l, nodeid.NewFence(l)}, opts...)
}

func newGenerator(l lease, opts ...Option) (*Generator, error) {
	c := config{layout: DefaultLayout, maxWait: DefaultMaxWait, meters: otel.GetMeterProvider()}
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	lay := c.layout // valid: WithLayout checks it
	node, epoch, prev := l.NodeID(), l.Epoch(), l.PreviousHorizon()
	if node < 0 || node > lay.MaxNode() {
		return nil, invalid("node ID %d does not fit the layout (%s): its node bits hold 0-%d",
			node, lay, lay.MaxNode())
	}
	if unit := lay.Unit(); c.maxWait < unit {
		return nil, invalid("max wait %s is shorter than the layout's time unit %s: the wait for the next unit, once a unit's sequence is used up, must fit in it",
			c.maxWait, unit)
	}
	base, pk := l.Base(), lay.packing()
	g := &Generator{
		lease:    l,
		base:     base,
		baseNs:   base.UnixNano(),
		clock:    c.clock,
		originMs: lay.Start(),
		pk:       pk,
		fields:   pk.fields(node, epoch),
		maxWait:  c.maxWait,
		layout:   lay,
		prevMs:   prev,
	}
	// The first ID is stamped, at the earliest, with the first time unit
	// whose first millisecond is after the previous horizon: the unit after
	// the horizon's. With units of several milliseconds, the horizon's own
	// unit may hold stamps of the previous holder.
	if t := g.unitOf(prev) + 1; t > 0 {
		if t >= pk.maxT {
			return nil, fmt.Errorf("%w: node ID %d: the previous holder's horizon %s leaves no time unit before the layout's end %s",
				nodeid.ErrTimeOverflow, node, exactMs(prev), exactMs(lay.End()))
		}
		g.initial = uint64(t) << pk.seqBits
	}
	g.state.Store(g.initial)
	g.readWall = func() (int64, time.Duration) {
		w := time.Now()
		return w.UnixNano(), w.Sub(base)
	}
	g.anchorAt.Store(int64(g.readAnchor() + anchorEvery)) // anchor the default clock now
	g.errSealed = &nodeid.EndError{NodeID: node, Epoch: epoch, Cause: nodeid.ErrReleased}
	g.metrics = newInstruments(c.meters, l)

	if err := l.Bind(g.seal); err != nil { // refuses a second generator
		return nil, fmt.Errorf("snowflake: no generator on node ID %d (epoch %d): %w", node, epoch, err)
	}
	return g, nil
}

// Layout returns the generator's bit layout.
func (g *Generator) Layout() Layout { return g.layout }

// NodeID returns the node ID in every ID the generator mints.
func (g *Generator) NodeID() int64 { return g.lease.NodeID() }

// Epoch returns the epoch of the lease the generator mints under; the
// layout's epoch bits hold it modulo 2^EpochBits.
func (g *Generator) Epoch() int64 { return g.lease.Epoch() }

// MaxWait returns the bound set by WithMaxWait.
func (g *Generator) MaxWait() time.Duration { return g.maxWait }

// Generate mints an ID. It returns an error, and mints nothing, when:
//
//   - the lease no longer admits IDs (lost, released, or its local deadline
//     has passed): the lease's *nodeid.EndError, matching its cause and,
//     unless the lease was released, nodeid.ErrLeaseLost;
//   - the stamp (the last millisecond of its time unit) would be later than
//     the horizon the lease has recorded in the database (the clock is
//     ahead of the registry's): an error matching nodeid.ErrClockAhead,
//     which clears at the next renewal;
//   - the clock is behind the time unit the ID must be stamped with by more
//     than the max wait: an error matching nodeid.ErrClockBehind;
//   - the layout's time field is used up (Layout.End): an error matching
//     nodeid.ErrTimeOverflow.
//
// In the common case it reads the monotonic clock once (and the WithClock
// clock once, if given), checks the lease once and updates the generator
// with one compare-and-swap; a call that loses the swap to another
// goroutine checks and swaps again. It takes no lock and does not
// allocate. It may wait up to the max wait for the clock (see the package
// documentation, Clocks and waits): GenerateContext also stops waiting
// when a context ends.
func (g *Generator) Generate() (bw.ID, error) { return g.generate(nil) }

// GenerateContext is Generate bounded by ctx as well as by the max wait:
// when ctx ends while the call waits for the clock, it returns at once an
// error that wraps ctx's (errors.Is(err, context.Canceled), or
// context.DeadlineExceeded, is true) and mints nothing. A ctx that has
// already ended mints nothing either. Use it where the caller has a bound
// of its own, such as an HTTP request's context.
func (g *Generator) GenerateContext(ctx context.Context) (bw.ID, error) {
	if ctx.Err() != nil {
		return 0, g.ctxErr(ctx)
	}
	return g.generate(ctx)
}

// generate is Generate; a wait for the clock ends when ctx does, unless
// ctx is nil.
func (g *Generator) generate(ctx context.Context) (bw.ID, error) {
	// A custom stamping clock is read before the monotonic clock that the
	// deadline is checked against, so that a pause between the two reads can
	// only make the check stricter, never admit a stamp taken after the
	// deadline.
	var ms int64
	if g.clock != nil {
		ms = g.clock().UnixMilli()
	}
	d := time.Since(g.base)
	if g.clock == nil {
		if int64(d) >= g.anchorAt.Load() {
			g.anchor(d)
		}
		ms = floorMs(g.baseNs + int64(d) + g.corr.Load())
	}
	// The common case, inline: the clock is within the layout and the ID
	// is stamped with the clock's time unit. The lease is checked for the
	// unit's last millisecond (the clock's, with 1 ms units) before the
	// state is read, so that under contention little happens between the
	// read and the compare-and-swap. mint has the rest: a sealed generator,
	// a stamp after the clock's, waits.
	tn, last := ms-g.originMs, ms
	if u := int64(g.pk.unitMs); u != 1 && ms >= g.originMs {
		tn /= u
		last = g.originMs + tn*u + u - 1
	}
	if uint64(tn) < uint64(g.pk.maxT) {
		if err := g.lease.Check(d, last); err != nil {
			return 0, g.metrics.refused(err)
		}
		if s := g.state.Load(); int64(s) >= 0 {
			next := max(int64(s), tn<<(g.pk.seqBits&63))
			if next>>(g.pk.seqBits&63) == tn && g.state.CompareAndSwap(s, uint64(next+1)) {
				return g.pk.id(tn, g.fields, next), nil
			}
		}
	}
	return g.mint(ctx, g.base.Add(d), ms)
}

// mint mints an ID at now, when the stamping clock reads unix millisecond
// ms; a wait for the clock ends when ctx does, unless ctx is nil.
func (g *Generator) mint(ctx context.Context, now time.Time, ms int64) (bw.ID, error) {
	tn := g.unitOf(ms)
	var start time.Time // when this call began waiting for the clock
	spins, waited := 0, false
	for {
		s := g.state.Load()
		if s&sealedBit != 0 {
			return 0, g.metrics.refused(g.sealedErr(now))
		}
		// The ID is the larger of the next free value and the first value of
		// the clock's time unit.
		next := int64(s)
		if c := min(max(tn, 0), g.pk.maxT) << (g.pk.seqBits & 63); c > next {
			next = c
		}
		t := next >> (g.pk.seqBits & 63)
		if t >= g.pk.maxT {
			return 0, g.metrics.refused(g.overflowErr(ms))
		}
		if t > tn && next&g.pk.seqMask == 0 {
			// The clock is behind a time unit not stamped yet: the last
			// unit's sequence is used up (after a backward step of the clock
			// too), or the clock is behind the unit after the previous
			// holder's horizon. Behind a unit already stamped, the ID goes on
			// in it.
			if start.IsZero() {
				start = now
			}
			// Waiting for the unit after the clock's, whose sequence is used
			// up, rather than for a clock behind the previous holder's
			// horizon or a stamp made before it stepped back.
			exhausted := t == tn+1 && uint64(next) != g.initial
			var err error
			if now, ms, err = g.wait(ctx, start, now, t, &spins); err != nil {
				return 0, g.metrics.refused(err)
			}
			if !waited {
				waited = true
				g.metrics.waited(exhausted)
			}
			tn = g.unitOf(ms)
			continue
		}
		if err := g.lease.Check(now.Sub(g.base), g.lastMs(t)); err != nil {
			return 0, g.metrics.refused(err)
		}
		if g.state.CompareAndSwap(s, uint64(next+1)) {
			return g.pk.id(t, g.fields, next), nil
		}
	}
}

// unitOf returns the time unit since the layout's origin that holds unix
// millisecond ms, or -1 if ms is before the origin.
func (g *Generator) unitOf(ms int64) int64 {
	if ms < g.originMs {
		return -1
	}
	return (ms - g.originMs) / int64(g.pk.unitMs)
}

// firstMs returns the first unix millisecond of time unit t.
func (g *Generator) firstMs(t int64) int64 { return g.originMs + t*int64(g.pk.unitMs) }

// lastMs returns the last unix millisecond of time unit t: every stamp
// with t covers the milliseconds firstMs(t) to lastMs(t), so the lease is
// checked with the last and the seal returns it.
func (g *Generator) lastMs(t int64) int64 { return g.firstMs(t+1) - 1 }

// seal is the function bound to the lease: it stops the generator for good
// with one atomic operation and returns the last millisecond of the latest
// time unit stamped, or the previous horizon if none was. A Generate racing
// with it either completed its compare-and-swap before it, and is counted,
// or fails.
func (g *Generator) seal() int64 {
	s := g.state.Or(sealedBit) &^ sealedBit
	if s == g.initial {
		return g.prevMs
	}
	return g.lastMs(int64(s-1) >> g.pk.seqBits)
}

func (g *Generator) sealedErr(now time.Time) error {
	if err := g.lease.Check(now.Sub(g.base), math.MinInt64); err != nil {
		return err
	}
	return g.errSealed
}

func (g *Generator) behindErr(ms, t int64) error {
	want := g.firstMs(t)
	why := fmt.Sprintf("the last stamped millisecond %s has used up its sequence", exactMs(want-1))
	if g.pk.unitMs != 1 {
		why = fmt.Sprintf("the last stamped time unit (%s from %s) has used up its sequence", g.layout.Unit(), exactMs(g.firstMs(t-1)))
	}
	switch {
	case ms < g.originMs:
		why = "the layout starts at its origin"
	case uint64(t)<<g.pk.seqBits == g.initial:
		why = fmt.Sprintf("the previous holder's horizon is %s", exactMs(g.prevMs))
	}
	away := gap(want, ms).String()
	if gap(want, ms) == math.MaxInt64 {
		away = "centuries"
	}
	return fmt.Errorf("snowflake: node ID %d: %w: the clock reads %s, but the next ID needs %s or later (%s); that is %s away, and the max wait of %s would end first",
		g.lease.NodeID(), nodeid.ErrClockBehind, exactMs(ms), exactMs(want), why, away, g.maxWait)
}

// ctxErr is the error of a call whose ctx ended: ctx's error, and its
// cause if that differs.
func (g *Generator) ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("snowflake: node ID %d: no ID minted: %w: %w", g.lease.NodeID(), err, cause)
	}
	return fmt.Errorf("snowflake: node ID %d: no ID minted: %w", g.lease.NodeID(), err)
}

func (g *Generator) overflowErr(ms int64) error {
	return fmt.Errorf("%w: node ID %d: the clock reads %s; the layout (%s) ends at %s",
		nodeid.ErrTimeOverflow, g.lease.NodeID(), exactMs(ms), g.layout, exactMs(g.layout.End()))
}
