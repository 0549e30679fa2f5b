package snowflake

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"
)

// The stamping clock is WithClock's function, or by default the wall
// clock kept as described at the Generator's corr field: one monotonic
// reading per ID, which also serves the lease's deadline, and a wall clock
// reading about once a second.

// anchorEvery is how often the default stamping clock re-reads the wall
// clock. In between it advances with the monotonic clock.
const anchorEvery = time.Second

// An anchoring reading is taken again, up to anchorTries times, while the
// monotonic readings around it are more than anchorSpread apart (see
// anchorReading).
const (
	anchorTries  = 8
	anchorSpread = 100 * time.Microsecond
)

// spinLimit is how many times a Generate yields while waiting for the next
// millisecond before it sleeps instead. A real clock moves on long before;
// a clock that only moves while every goroutine sleeps (testing/synctest)
// needs the sleep.
const spinLimit = 1 << 14

// read reads the clocks as Generate does: now carries the monotonic clock,
// for the lease's deadline; ms and frac are the stamping clock's unix
// millisecond and the nanoseconds into it.
func (g *Generator) read() (now time.Time, ms, frac int64) {
	if g.clock != nil { // first, as in Generate
		w := g.clock()
		return time.Now(), w.UnixMilli(), int64(w.Nanosecond() % 1e6)
	}
	d := time.Since(g.base)
	now = g.base.Add(d)
	if int64(d) >= g.anchorAt.Load() {
		g.anchor(d)
	}
	ns := g.baseNs + int64(d) + g.corr.Load()
	ms = floorMs(ns)
	return now, ms, ns - ms*1e6
}

// anchor re-reads the wall clock, at most once per anchorEvery, so that the
// default stamping clock follows its steps and slews.
func (g *Generator) anchor(d time.Duration) {
	at := g.anchorAt.Load()
	if int64(d) < at || !g.anchorAt.CompareAndSwap(at, int64(d+anchorEvery)) {
		return
	}
	g.readAnchor()
}

// readAnchor reads the wall clock and sets corr from it; it returns the
// monotonic time since base of that reading.
func (g *Generator) readAnchor() time.Duration {
	ns, since := anchorReading(g.readWall)
	g.corr.Store(ns - g.baseNs - int64(since))
	return since
}

// anchorReading returns a reading of read (time.Now's wall and monotonic
// clocks) whose two halves are of one instant, within anchorSpread if it
// can. time.Now reads the wall clock, then the monotonic one: a thread
// descheduled between the two pairs a wall reading with a later monotonic
// one, and a stamping clock anchored on it would lag the wall clock by the
// pause until the next anchoring. So each reading is bracketed by two
// more, and taken again while the brackets are more than anchorSpread
// apart, up to anchorTries times; the tightest is kept.
func anchorReading(read func() (unixNs int64, sinceBase time.Duration)) (unixNs int64, sinceBase time.Duration) {
	spread := time.Duration(math.MaxInt64)
	for range anchorTries {
		_, before := read()
		ns, since := read()
		_, after := read()
		if after-before < spread {
			spread, unixNs, sinceBase = after-before, ns, since
		}
		if spread <= anchorSpread {
			break
		}
	}
	return unixNs, sinceBase
}

// wait waits, without any lock, until the stamping clock may have reached
// time unit t (since the layout's origin), having started waiting at start; it
// returns fresh readings. It fails at once if the wait would end after
// start + maxWait, and when ctx ends, unless ctx is nil.
func (g *Generator) wait(ctx context.Context, start, now time.Time, t int64, spins *int) (time.Time, int64, error) {
	_, ms, frac := g.read()
	remaining := gap(g.firstMs(t), ms) - time.Duration(frac)
	if remaining > g.maxWait-now.Sub(start) {
		return now, ms, g.behindErr(ms, t)
	}
	var done <-chan struct{} // nil, which never closes, without a ctx
	if ctx != nil {
		done = ctx.Done()
	}
	switch {
	case remaining > time.Millisecond:
		if !sleep(done, remaining) {
			return now, ms, g.ctxErr(ctx)
		}
	case *spins < spinLimit:
		select {
		case <-done:
			return now, ms, g.ctxErr(ctx)
		default:
		}
		*spins++
		runtime.Gosched()
	default:
		*spins = 0
		if !sleep(done, max(remaining, time.Microsecond)) {
			return now, ms, g.ctxErr(ctx)
		}
	}
	now, ms, _ = g.read()
	return now, ms, nil
}

// sleep sleeps for d, or until done closes; it reports whether it slept
// for d.
func sleep(done <-chan struct{}, d time.Duration) bool {
	if done == nil {
		time.Sleep(d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// gap returns b-a milliseconds as a duration, saturated.
func gap(b, a int64) time.Duration {
	d := b - a
	if a < 0 && d < 0 || d > int64(math.MaxInt64/time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d) * time.Millisecond
}

// floorMs returns unix nanoseconds ns in whole milliseconds, rounded down.
func floorMs(ns int64) int64 {
	if ns < 0 {
		return (ns+1)/1e6 - 1
	}
	return ns / 1e6
}

// exactMs writes unix millisecond ms as the number and its time, in the
// layout of package nodeid's messages (UTC, to the millisecond).
func exactMs(ms int64) string {
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}
