package nodeid

import (
	"context"
	"log/slog"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// The timing rules of a lease, all fractions of the TTL:
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

// localDeadline is invariant 4 of the design: t0 was read before the
// statement was sent and the server stamped now() after receiving it, so t0
// plus the time the server granted falls before the true expiry; the margin
// covers clock-rate drift between the two hosts.
func localDeadline(t0, expires, serverNow time.Time, ttl time.Duration) time.Time {
	return t0.Add(expires.Sub(serverNow) - safetyMargin(ttl))
}

// horizonFor is the horizon a claim or renewal started at t0 records: the
// latest millisecond the registry's clock can show before the deadline that
// the statement grants, which is at most t0 + TTL.
func horizonFor(t0 time.Time, ttl time.Duration) int64 {
	return t0.UnixMilli() + ttl.Milliseconds()
}

// Backoff bounds of Acquire while it waits for a node ID.
const (
	waitMin = 50 * time.Millisecond
	waitMax = 2 * time.Second
)

// start arms the deadline timer of a lease claimed at t0 and starts its
// renewal loop, which ends when the lease does.
func (l *Lease) start(t0 time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.mu.Lock() // the timer may fire before AfterFunc returns
	l.timer = time.AfterFunc(time.Until(l.Deadline()), l.onDeadline)
	l.mu.Unlock()
	go l.renewLoop(ctx, t0)
}

// renewLoop keeps the lease alive until ctx is cancelled (Release, or the
// lease was lost). last is the start of the claim.
func (l *Lease) renewLoop(ctx context.Context, last time.Time) {
	defer close(l.done)
	again := admin.Backoff{Next: retryBase(l.ttl), Max: retryBase(l.ttl)}
	if !admin.Sleep(ctx, time.Until(last.Add(renewInterval(l.ttl)))) {
		return
	}
	var failing renewFailures
	for {
		t0 := time.Now()
		renewed, tryAgain := l.renewOnce(ctx, t0, &failing)
		switch {
		case renewed:
			if !admin.Sleep(ctx, time.Until(t0.Add(renewInterval(l.ttl)))) {
				return
			}
		case !tryAgain || !again.Wait(ctx):
			return
		}
	}
}

// renewFailures is what the renewal loop logs of a run of failed
// attempts: a line when the first fails, debug lines for the others, and a
// line when one succeeds again, so that an outage logs two lines, not one
// per attempt.
type renewFailures struct {
	n     int       // failed attempts since the last renewal
	since time.Time // start of the first of them
}

// failed logs the failure of an attempt started at t0.
func (f *renewFailures) failed(log *slog.Logger, t0 time.Time, err error, deadline time.Time) {
	f.n++
	if f.n == 1 {
		f.since = t0
		log.Warn("nodeid: renewals failing; retrying until the deadline", "err", err, "deadline_in", time.Until(deadline))
		return
	}
	log.Debug("nodeid: renewal failed again", "attempt", f.n, "err", err, "deadline_in", time.Until(deadline))
}

// renewed logs a renewal that ends a run of failed attempts.
func (f *renewFailures) renewed(log *slog.Logger, t0 time.Time) {
	if f.n > 0 {
		log.Info("nodeid: renewals recovered", "failed_attempts", f.n, "failing_for", t0.Sub(f.since))
	}
	*f = renewFailures{}
}

// renewOnce makes one renewal attempt started at t0. It reports whether the
// lease was renewed, and if not whether another attempt is worth making.
func (l *Lease) renewOnce(ctx context.Context, t0 time.Time, failing *renewFailures) (renewed, retry bool) {
	deadline := l.Deadline()
	actx, cancel := context.WithDeadline(ctx, minTime(deadline, t0.Add(attemptTimeout(l.ttl))))
	defer cancel()
	o, err := bounded(l.reg, actx, func(ctx context.Context) (admin.Outcome, error) {
		return l.reg.st.Renew(ctx, l.key, l.ttl, horizonFor(t0, l.ttl))
	}, nil)
	if ctx.Err() != nil || l.Err() != nil {
		l.recordEnded(t0) // released or lost while the statement ran
		return false, false
	}
	if err != nil {
		failing.failed(l.log, t0, err, deadline)
		l.recordRenewal(t0, outcomeRetried)
		return false, true
	}
	if !o.OK {
		l.recordRenewal(t0, outcomeLost)
		l.lose(l.causeOf(o))
		return false, false
	}
	if !l.extend(localDeadline(t0, o.Expires, o.Now, l.ttl), o.Horizon) {
		l.recordEnded(t0)
		return false, false
	}
	failing.renewed(l.log, t0)
	l.log.Debug("nodeid: renewed", "expires", o.Expires, "horizon_ms", o.Horizon)
	l.recordRenewal(t0, outcomeRenewed)
	return true, false
}

// extend installs the deadline and horizon of a successful renewal. It
// reports false if the lease ended meanwhile: a lapsed lease is never
// revived, even if the database granted the renewal.
func (l *Lease) extend(deadline time.Time, horizon int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.fence.Load()
	if f.err != nil {
		return false
	}
	if l.passed(f) {
		l.deadlinePassedLocked()
		return false
	}
	l.setFence(deadline, max(horizon, f.horizon), nil)
	l.timer.Reset(time.Until(deadline))
	return true
}

// onDeadline runs when the deadline timer fires: the lease expires unless a
// renewal moved the deadline meanwhile.
func (l *Lease) onDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.fence.Load()
	if f.err != nil {
		return
	}
	if d := f.until - time.Since(l.base); d > 0 {
		l.timer.Reset(d)
		return
	}
	l.deadlinePassedLocked()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
