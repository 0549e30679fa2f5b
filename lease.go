package nodeid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// ReleaseTimeout bounds Release when its context has no earlier deadline.
const ReleaseTimeout = 5 * time.Second

// Lease is one claim of a node ID. It is renewed in the background until it
// is released or lost. All methods are safe for concurrent use.
type Lease struct {
	reg  *Registry
	key  store.Key
	prev int64 // the previous holder's horizon, unix ms
	ttl  time.Duration
	log  *slog.Logger

	// fence is what Check reads on every minted ID: one atomic load.
	fence atomic.Pointer[fence]
	base  time.Time // the monotonic origin of CheckSince: t0 of the claim
	lost  chan struct{}

	// Preallocated so that Check never allocates.
	expiredErr, aheadErr error

	mu     sync.Mutex // guards timer, sealer and every change of fence
	timer  *time.Timer
	sealer func() int64 // of the generator bound to the lease, if any

	cancel context.CancelFunc // stops the renewal loop
	done   chan struct{}      // closed when the renewal loop has returned

	releaseOnce sync.Once
	releaseErr  error
}

// fence is an immutable snapshot of what a lease permits.
type fence struct {
	// until is the local deadline, as monotonic time since the lease's
	// base: nothing may be minted at or after it.
	until   time.Duration
	horizon int64 // unix ms recorded in the database: nothing may be stamped after it
	err     error // non-nil once the lease is lost
}

// setFence installs a new fence; l.mu is held, or l is not yet shared.
func (l *Lease) setFence(deadline time.Time, horizon int64, err error) {
	l.fence.Store(&fence{until: deadline.Sub(l.base), horizon: horizon, err: err})
}

// deadline returns the local deadline of f.
func (l *Lease) deadline(f *fence) time.Time { return l.base.Add(f.until) }

// passed reports whether the local deadline of f has passed.
func (l *Lease) passed(f *fence) bool { return time.Since(l.base) >= f.until }

func newLease(r *Registry, c store.Claim, t0 time.Time) *Lease {
	l := &Lease{
		reg:  r,
		key:  c.Key,
		prev: c.PrevHorizon,
		ttl:  r.cfg.ttl,
		log:  r.cfg.logger.With("node_id", c.NodeID, "epoch", c.Epoch),
		lost: make(chan struct{}),
		done: make(chan struct{}),
		base: t0,
	}
	l.expiredErr = &LostError{NodeID: c.NodeID, Epoch: c.Epoch, Cause: ErrExpired}
	l.aheadErr = fmt.Errorf("%w: node ID %d, epoch %d", ErrClockAhead, c.NodeID, c.Epoch)
	deadline := localDeadline(t0, c.Expires, c.Now, l.ttl)
	l.setFence(deadline, c.Horizon, nil)
	l.mu.Lock() // the timer may fire before AfterFunc returns
	l.timer = time.AfterFunc(time.Until(deadline), l.onDeadline)
	l.mu.Unlock()
	return l
}

// localDeadline is invariant 4 of the design: t0 was read before the
// statement was sent and the server stamped now() after receiving it, so t0
// plus the time the server granted falls before the true expiry; the margin
// covers clock-rate drift between the two hosts.
func localDeadline(t0, expires, serverNow time.Time, ttl time.Duration) time.Time {
	return t0.Add(expires.Sub(serverNow) - safetyMargin(ttl))
}

// NodeID returns the leased node ID.
func (l *Lease) NodeID() int64 { return l.key.NodeID }

// Epoch returns the fencing epoch of this claim: it is larger than the epoch
// of every earlier claim of the node ID. Pass it to external resources that
// must reject stale holders.
func (l *Lease) Epoch() int64 { return l.key.Epoch }

// Owner returns the holder name recorded in the database.
func (l *Lease) Owner() string { return l.key.Owner }

// PreviousHorizon returns, in unix milliseconds, the horizon left by the
// previous holder of the node ID: IDs minted under this lease must be
// stamped strictly after it.
func (l *Lease) PreviousHorizon() int64 { return l.prev }

// Lost returns a channel that is closed exactly once, when the lease ends:
// taken over, expired (the local deadline passed without a successful
// renewal), or released. Err then says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns nil while the lease is held; after that an error matching
// ErrLeaseLost and one of ErrTakenOver, ErrExpired or ErrReleased.
func (l *Lease) Err() error {
	f := l.fence.Load()
	if f.err == nil && l.passed(f) {
		return l.expiredErr
	}
	return f.err
}

// Deadline returns the local deadline: the monotonic time after which the
// holder must not mint, because the database may consider the lease
// expired. Each successful renewal moves it forward.
func (l *Lease) Deadline() time.Time { return l.deadline(l.fence.Load()) }

// Check reports whether an ID stamped with unix millisecond ms may be minted
// at time now (read with time.Now, so that it carries the monotonic clock):
// nil while the lease is held, now is before the deadline and ms is not
// after the horizon recorded in the database; otherwise the reason. It takes
// no lock and does not allocate. Generators call it, or CheckSince, for
// every ID.
func (l *Lease) Check(now time.Time, ms int64) error {
	return l.CheckSince(now.Sub(l.base), ms)
}

// Base returns the monotonic origin of CheckSince: a time read with
// time.Now before the lease was claimed.
func (l *Lease) Base() time.Time { return l.base }

// CheckSince is Check at time Base() + d, for d read as time.Since(Base()):
// it spares a generator building a time.Time for every ID.
func (l *Lease) CheckSince(d time.Duration, ms int64) error {
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

// Bind registers the seal function of the generator that mints under the
// lease. Release calls it after the lease has stopped admitting IDs; it must
// stop the generator for good and return the latest unix millisecond it
// stamped (or any earlier value if it stamped none). Release then records
// that exact horizon, so that the node ID can be reused without waiting.
// Bind declares that every ID minted under the lease comes from that one
// generator, so a lease takes one Bind only: two generators on one lease
// would mint the same IDs. Without a bound generator, Release keeps the
// horizon recorded at the last renewal, which is always safe. Bind fails once
// the lease is lost.
func (l *Lease) Bind(seal func() int64) error {
	if seal == nil {
		return errors.New("nodeid: Bind: the seal function is nil")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fence.Load().err; err != nil {
		return err
	}
	if l.sealer != nil {
		return fmt.Errorf("nodeid: node ID %d (epoch %d) already has a generator: two on one lease would mint the same IDs; share the first",
			l.key.NodeID, l.key.Epoch)
	}
	l.sealer = seal
	return nil
}

// Release stops renewing, makes every generator of the lease refuse to mint,
// and frees the node ID for immediate claim, recording the horizon. The row
// and its epoch stay. It is bounded by ReleaseTimeout even if ctx has no
// deadline, and idempotent: later calls return the first call's result.
// After a takeover it changes nothing and returns the loss; after a local
// expiry it still frees the row if the database holds it for this lease.
func (l *Lease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() { l.releaseErr = l.release(ctx) })
	return l.releaseErr
}

func (l *Lease) release(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer l.reg.forget(l)
	l.cancel()
	<-l.done

	l.mu.Lock()
	if l.passed(l.fence.Load()) {
		l.loseLocked(ErrExpired) // the deadline passed before its timer fired
	}
	prior := l.fence.Load().err
	l.loseLocked(ErrReleased)
	horizon, exact := l.prev, l.sealer != nil
	if exact {
		horizon = max(horizon, l.sealer())
	}
	l.mu.Unlock()
	if prior != nil && !errors.Is(prior, ErrExpired) {
		return prior // taken over or evicted: the row is not ours to free
	}

	ctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
	defer cancel()
	for attempt, delay := 0, retryBase(l.ttl); ; attempt, delay = attempt+1, min(2*delay, time.Second) {
		o, err := l.reg.st.Release(ctx, l.key, horizon, exact)
		switch {
		case err == nil && o.OK:
			l.log.Debug("nodeid: released", "horizon_ms", o.Horizon, "exact", exact)
			return nil
		case err == nil && attempt > 0 && o.Epoch == l.key.Epoch && o.Owner == "":
			// An earlier attempt that seemed to fail did release the row.
			return nil
		case err == nil:
			return &LostError{NodeID: l.key.NodeID, Epoch: l.key.Epoch, Cause: l.causeOf(o)}
		case !postgres.Retryable(err) || !sleepCtx(ctx, jitter(delay)):
			l.log.Warn("nodeid: release failed; the node ID frees up when its lease expires", "err", err)
			return err
		}
	}
}

// sleepCtx sleeps for d; it reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// causeOf explains a renewal or release that changed nothing.
func (l *Lease) causeOf(o store.Outcome) error {
	switch {
	case !o.Exists || o.Epoch != l.key.Epoch:
		return ErrTakenOver
	case o.Owner == "":
		return ErrReleased // evicted by an operator
	case o.Owner != l.key.Owner:
		return ErrTakenOver
	}
	return ErrExpired
}

// lose ends the lease with cause, unless it has ended already.
func (l *Lease) lose(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(cause)
}

func (l *Lease) loseLocked(cause error) {
	f := l.fence.Load()
	if f.err != nil {
		return
	}
	err := error(&LostError{NodeID: l.key.NodeID, Epoch: l.key.Epoch, Cause: cause})
	if cause == ErrExpired {
		err = l.expiredErr
	}
	lost := *f
	lost.err = err
	l.fence.Store(&lost)
	l.timer.Stop()
	close(l.lost)
	if cause == ErrReleased {
		l.log.Debug("nodeid: lease ended", "err", err)
	} else {
		l.log.Error("nodeid: lease lost", "err", err)
	}
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
		l.loseLocked(ErrExpired)
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
	l.loseLocked(ErrExpired)
}
