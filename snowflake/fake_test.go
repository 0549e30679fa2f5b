package snowflake

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
)

// fakeTable is the table of the fake leases, whose node range is 0-1023.
const fakeTable = "fake_nodes"

// fakeLease behaves like *nodeid.Lease without a database: Check reads
// an immutable fence through one atomic pointer, as the real one does, and
// release closes the fence before it calls the seal functions.
type fakeLease struct {
	node, epoch, prev int64
	base              time.Time

	fence                atomic.Pointer[fakeFence]
	expiredErr, aheadErr error

	mu    sync.Mutex
	seals []func() int64
}

type fakeFence struct {
	until   time.Duration // the deadline less the lease's base
	horizon int64
	err     error
}

// newFake returns a live lease of node and epoch after a previous horizon
// prev, with a deadline and a recorded horizon far ahead.
func newFake(node, epoch, prev int64) *fakeLease {
	l := &fakeLease{node: node, epoch: epoch, prev: prev, base: time.Now()}
	l.expiredErr = &nodeid.EndError{NodeID: node, Epoch: epoch, Cause: nodeid.ErrExpired}
	l.aheadErr = fmt.Errorf("%w: node ID %d, epoch %d", nodeid.ErrClockAhead, node, epoch)
	l.setFence(time.Now().Add(time.Hour), math.MaxInt64)
	return l
}

func (l *fakeLease) NodeID() int64             { return l.node }
func (l *fakeLease) Epoch() int64              { return l.epoch }
func (l *fakeLease) Table() string             { return fakeTable }
func (l *fakeLease) NodeRange() (int64, int64) { return 0, 1023 }
func (l *fakeLease) PreviousHorizon() int64    { return l.prev }

func (l *fakeLease) Base() time.Time { return l.base }

func (l *fakeLease) Check(d time.Duration, ms int64) error {
	f := l.fence.Load()
	switch {
	case f.err != nil:
		return f.err
	case d >= f.until:
		return l.expiredErr
	case ms > f.horizon:
		return l.aheadErr
	}
	return nil
}

func (l *fakeLease) Bind(seal func() int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fence.Load().err; err != nil {
		return err
	}
	if len(l.seals) > 0 {
		return fmt.Errorf("nodeid: node ID %d (epoch %d) already has a generator", l.node, l.epoch)
	}
	l.seals = append(l.seals, seal)
	return nil
}

// setFence replaces the deadline and the recorded horizon.
func (l *fakeLease) setFence(deadline time.Time, horizon int64) {
	l.fence.Store(&fakeFence{until: deadline.Sub(l.base), horizon: horizon})
}

// lose ends the lease with cause, as a takeover or expiry does.
func (l *fakeLease) lose(cause error) {
	f := l.fence.Load()
	l.fence.Store(&fakeFence{until: f.until, horizon: f.horizon,
		err: &nodeid.EndError{NodeID: l.node, Epoch: l.epoch, Cause: cause}})
}

// release does what Lease.Release does before it writes to the database:
// close the fence, then seal every generator; it returns the horizon that
// Release would record.
func (l *fakeLease) release() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lose(nodeid.ErrReleased)
	h := l.prev
	for _, seal := range l.seals {
		h = max(h, seal())
	}
	return h
}

// sealOnly calls the seal functions without closing the fence, so that
// tests see what the seal alone guarantees.
func (l *fakeLease) sealOnly() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.prev
	for _, seal := range l.seals {
		h = max(h, seal())
	}
	return h
}

// countingLease counts the checks of a fakeLease.
type countingLease struct {
	*fakeLease
	checks atomic.Int64
}

func (l *countingLease) Check(d time.Duration, ms int64) error {
	l.checks.Add(1)
	return l.fakeLease.Check(d, ms)
}

// openLease admits everything: Check always returns nil. It measures
// the generator without any fence.
type openLease struct {
	node, epoch, prev int64
	base              time.Time
}

func newOpen(node, epoch, prev int64) *openLease {
	return &openLease{node: node, epoch: epoch, prev: prev, base: time.Now()}
}

func (l *openLease) NodeID() int64                    { return l.node }
func (l *openLease) Table() string                    { return fakeTable }
func (l *openLease) NodeRange() (int64, int64)        { return 0, 1023 }
func (l *openLease) Epoch() int64                     { return l.epoch }
func (l *openLease) PreviousHorizon() int64           { return l.prev }
func (l *openLease) Base() time.Time                  { return l.base }
func (l *openLease) Check(time.Duration, int64) error { return nil }
func (l *openLease) Bind(func() int64) error          { return nil }

func mustNew(tb testing.TB, l lease, opts ...Option) *Generator {
	tb.Helper()
	g, err := newGenerator(l, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func mustGenerate(tb testing.TB, g *Generator) Parts {
	tb.Helper()
	id, err := g.Generate()
	if err != nil {
		tb.Fatal(err)
	}
	return g.layout.Decode(id)
}

// stepClock is a wall clock that reads time.Now plus an offset that a test
// can change at any moment.
type stepClock struct{ offset atomic.Int64 }

func (c *stepClock) now() time.Time      { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *stepClock) set(d time.Duration) { c.offset.Store(int64(d)) }

// synctestLayout works in a testing/synctest bubble, whose clock starts in
// 2000, before the Twitter epoch.
var synctestLayout = Layout{NodeBits: 10, StepBits: 12}
