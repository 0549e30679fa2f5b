package nodeid

import (
	"context"
	"math/rand/v2"
	"time"
)

// The timing rules of renewal, all fractions of the TTL:
//
//   - a renewal starts TTL/3 after the start of the last successful claim
//     or renewal, so two attempts fit before the deadline even if the first
//     hangs until it times out;
//   - each attempt gives up after TTL/5, or at the deadline if that is
//     sooner, so that a blackholed connection is abandoned in time for
//     another attempt;
//   - after a failed attempt the next one starts after TTL/30, jittered by
//     ±50% so that a fleet does not retry in step;
//   - the local deadline keeps a margin of TTL/10 before the database's
//     expiry, for clock-rate drift between holder and server.
func renewInterval(ttl time.Duration) time.Duration  { return ttl / 3 }
func attemptTimeout(ttl time.Duration) time.Duration { return ttl / 5 }
func retryBase(ttl time.Duration) time.Duration      { return ttl / 30 }
func safetyMargin(ttl time.Duration) time.Duration   { return ttl / 10 }

// horizonFor is the horizon a claim or renewal started at t0 records: the
// latest millisecond the registry's clock can show before the deadline that
// the statement grants, which is at most t0 + TTL.
func horizonFor(t0 time.Time, ttl time.Duration) int64 {
	return t0.UnixMilli() + ttl.Milliseconds()
}

// jitter returns a duration uniformly in [d/2, 3d/2).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// renewLoop keeps the lease alive until ctx is cancelled (Release) or the
// lease is lost. last is the start of the claim.
func (l *Lease) renewLoop(ctx context.Context, last time.Time) {
	defer close(l.done)
	next := last.Add(renewInterval(l.ttl))
	for {
		if !l.sleepUntil(ctx, next) {
			return
		}
		t0 := time.Now()
		renewed, retry := l.renewOnce(ctx, t0)
		switch {
		case renewed:
			next = t0.Add(renewInterval(l.ttl))
		case retry:
			next = time.Now().Add(jitter(retryBase(l.ttl)))
		default:
			return
		}
	}
}

// sleepUntil waits until t; it reports false if the lease ended or the loop
// was stopped first.
func (l *Lease) sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-l.lost:
		return false
	case <-timer.C:
		return true
	}
}

// renewOnce makes one renewal attempt started at t0. It reports whether the
// lease was renewed, and if not whether another attempt is worth making.
func (l *Lease) renewOnce(ctx context.Context, t0 time.Time) (renewed, retry bool) {
	deadline := l.Deadline()
	actx, cancel := context.WithDeadline(ctx, minTime(deadline, t0.Add(attemptTimeout(l.ttl))))
	defer cancel()
	o, err := l.reg.st.Renew(actx, l.key, l.ttl, horizonFor(t0, l.ttl))
	if ctx.Err() != nil || l.Err() != nil {
		return false, false // released or lost while the statement ran
	}
	if err != nil {
		l.log.Warn("nodeid: renewal failed; retrying until the deadline", "err", err, "deadline_in", time.Until(deadline))
		return false, true
	}
	if !o.OK {
		l.lose(l.causeOf(o))
		return false, false
	}
	if !l.extend(localDeadline(t0, o.Expires, o.Now, l.ttl), o.Horizon) {
		return false, false
	}
	l.log.Debug("nodeid: renewed", "expires", o.Expires, "horizon_ms", o.Horizon)
	return true, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
