package nodeid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// ReleaseTimeout bounds Release when its context has no earlier deadline.
const ReleaseTimeout = 5 * time.Second

// Lease is one claim of a node ID. It is renewed in the background until it
// is released or lost. All methods are safe for concurrent use.
type Lease struct {
	reg  *Registry
	key  admin.Key
	prev int64 // the previous holder's horizon, unix ms
	ttl  time.Duration
	log  *slog.Logger

	// fence is what a generator checks on every ID (fence.go).
	fence atomic.Pointer[fenceState]
	base  time.Time // the monotonic origin of Fence.Check: t0 of the claim
	lost  chan struct{}
	ctx   context.Context         // Context: cancelled, with the lease's error, when lost closes
	end   context.CancelCauseFunc // cancels ctx

	// Preallocated so that Fence.Check never allocates.
	expiredErr, aheadErr error

	mu     sync.Mutex // guards timer, sealer and every change of fence
	timer  *time.Timer
	sealer func() int64 // of the generator bound to the lease, if any

	cancel context.CancelFunc // stops the renewal loop
	done   chan struct{}      // closed when the renewal loop has returned

	releaseOnce sync.Once
	releaseErr  error
}

func newLease(r *Registry, c admin.Claim, t0 time.Time) *Lease {
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
	l.ctx, l.end = context.WithCancelCause(context.Background())
	l.expiredErr = &EndError{NodeID: c.NodeID, Epoch: c.Epoch, Cause: ErrExpired}
	l.aheadErr = fmt.Errorf("%w: node ID %d, epoch %d", ErrClockAhead, c.NodeID, c.Epoch)
	l.setFence(localDeadline(t0, c.Expires, c.Now, l.ttl), c.Horizon, nil)
	return l
}

// NodeID returns the leased node ID.
func (l *Lease) NodeID() int64 { return l.key.NodeID }

// Epoch returns the fencing epoch of this claim: it is larger than the epoch
// of every earlier claim of the node ID. Pass it to external resources that
// must reject stale holders.
func (l *Lease) Epoch() int64 { return l.key.Epoch }

// Owner returns the holder name recorded in the database.
func (l *Lease) Owner() string { return l.key.Owner }

// Table returns the lease table the lease was claimed from.
func (l *Lease) Table() string { return l.reg.cfg.table.Table }

// NodeRange returns the node range the lease was claimed from: the
// Registry's (WithNodeRange), or the table's.
func (l *Lease) NodeRange() (lo, hi int64) { return l.reg.lo, l.reg.hi }

// PreviousHorizon returns, in unix milliseconds, the horizon left by the
// previous holder of the node ID: IDs minted under this lease must be
// stamped strictly after it.
func (l *Lease) PreviousHorizon() int64 { return l.prev }

// Horizon returns, in unix milliseconds, the horizon the lease holds: the
// latest millisecond it may stamp, recorded in the database by its claim or
// its last renewal. Fence.Check refuses a later stamp (ErrClockAhead); a
// program that stamps outside a generator bounds its stamps by it.
func (l *Lease) Horizon() int64 { return l.fence.Load().horizon }

// Done returns a channel that is closed exactly once, when the lease ends
// for any reason: taken over, expired (the local deadline passed without a
// successful renewal, or the database found the lease expired), evicted by
// an operator, lost in a database failover, or released. Err then says
// why: an error matching ErrLeaseLost for a loss, ErrReleased for your own
// release. Context is the same signal as a context.Context.
func (l *Lease) Done() <-chan struct{} { return l.lost }

// Context returns a context that is cancelled when the lease ends, by the
// time Done closes: taken over, expired, evicted, lost in a failover, or
// released. Its context.Cause is then the lease's error (Err), an *EndError
// that matches the cause, and ErrLeaseLost for a loss: errors.Is(
// context.Cause(ctx), ErrLeaseLost) is false after your own Release or
// Close. Pass it, or a
// context derived from it, to the work done under the lease (an errgroup,
// a request), so that the work stops with the lease. It has no deadline:
// a lease whose local deadline passes ends, and so cancels it, when its
// timer fires. Every call returns the same context, which holds no
// goroutine.
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns nil while the lease is held; after that an *EndError that
// matches its cause: ErrLeaseLost and one of ErrTakenOver, ErrExpired,
// ErrEvicted or ErrFailover for a loss, or ErrReleased (only) after Release
// or Close.
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

// Release stops renewing, makes every generator of the lease refuse to mint,
// and frees the node ID for immediate claim, recording the horizon: the
// latest millisecond the bound generator stamped (Fence.Bind), or, with
// none, the horizon recorded at the last renewal. The row and its epoch
// stay. It is bounded by ReleaseTimeout even if ctx has no deadline, and
// idempotent: later calls (of Release and ReleaseStamped) return the first
// call's result. After a takeover it changes nothing and returns the loss;
// after a local expiry it still frees the row if the database holds it for
// this lease.
func (l *Lease) Release(ctx context.Context) error { return l.releaseWith(ctx, admin.NoHorizon) }

// ReleaseStamped is Release for a lease whose IDs were stamped outside a
// generator bound to it: lastMs is the latest unix millisecond stamped
// under the lease (PreviousHorizon if none was), and the node ID's next
// holder may stamp right after it, without waiting for the horizon the
// lease recorded. With a bound generator the later of the two counts.
func (l *Lease) ReleaseStamped(ctx context.Context, lastMs int64) error {
	return l.releaseWith(ctx, max(lastMs, l.prev))
}

func (l *Lease) releaseWith(ctx context.Context, stamped int64) error {
	l.releaseOnce.Do(func() { l.releaseErr = l.release(ctx, stamped) })
	return l.releaseErr
}

// release releases the lease; stamped is the latest millisecond stamped
// outside a bound generator, or admin.NoHorizon.
func (l *Lease) release(ctx context.Context, stamped int64) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
	defer cancel()
	defer l.reg.forget(l)

	l.mu.Lock()
	if l.passed(l.fence.Load()) {
		l.deadlinePassedLocked() // before its timer fired
	}
	prior := l.fence.Load().err
	l.loseLocked(ErrReleased) // from here on nothing is minted, nor renewed
	exact := max(l.seal(), stamped)
	l.mu.Unlock()
	select { // the renewal loop returns at once: its statements are bounded
	case <-l.done:
	case <-ctx.Done():
	}
	if prior != nil && !errors.Is(prior, ErrExpired) {
		return prior // taken over or evicted: the row is not ours to free
	}

	again := admin.Backoff{Next: retryBase(l.ttl), Max: time.Second}
	for attempt := 0; ; attempt++ {
		o, err := bounded(l.reg, ctx, func(ctx context.Context) (admin.Outcome, error) {
			return l.reg.st.Release(ctx, l.key, exact)
		}, nil)
		switch {
		case err == nil && o.OK:
			l.log.Debug("nodeid: released", "horizon_ms", o.Horizon, "exact", exact != admin.NoHorizon)
			return nil
		case err == nil && attempt > 0 && o.EndReason == admin.EndReleased:
			// An earlier attempt that seemed to fail did release the row:
			// the history ends this claim so, and only its holder's release
			// does. The row may show another holder's claim by now.
			l.log.Debug("nodeid: released by an earlier attempt", "owner_now", o.Owner, "epoch_now", o.Epoch)
			return nil
		case err == nil:
			return &EndError{NodeID: l.key.NodeID, Epoch: l.key.Epoch, Cause: l.causeOf(o)}
		case !postgres.Retryable(err) || !again.Wait(ctx):
			l.log.Warn("nodeid: release failed; the node ID frees up when its lease expires", "err", err)
			return err
		}
	}
}

// causeOf explains a renewal or release that changed nothing, from the row
// as the statement that said why found it (admin.Outcome).
func (l *Lease) causeOf(o admin.Outcome) error {
	switch {
	case !o.Exists || o.Epoch > l.key.Epoch:
		return ErrTakenOver
	case o.Epoch < l.key.Epoch:
		return ErrFailover // the row never saw this claim
	case o.Owner == "" && o.EndReason == admin.EndReleased:
		return ErrReleased
	case o.Owner == "" && o.EndReason == admin.EndExpired:
		return ErrExpired // evicted after it had lapsed
	case o.Owner == "":
		return ErrEvicted
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

// loseLocked ends the lease with cause, unless it has ended already; l.mu
// is held.
func (l *Lease) loseLocked(cause error) { l.endLocked(cause, causeName(cause)) }

// deadlinePassedLocked ends the lease because its local deadline passed,
// unless it has ended already; l.mu is held. The error is ErrExpired, as
// for an expiry the database found; the metrics tell them apart.
func (l *Lease) deadlinePassedLocked() { l.endLocked(ErrExpired, causeDeadline) }

// endLocked ends the lease with cause, counted under label (attrCause),
// unless it has ended already; l.mu is held.
func (l *Lease) endLocked(cause error, label string) {
	f := l.fence.Load()
	if f.err != nil {
		return
	}
	err := error(&EndError{NodeID: l.key.NodeID, Epoch: l.key.Epoch, Cause: cause})
	if cause == ErrExpired {
		err = l.expiredErr
	}
	lost := *f
	lost.err = err
	l.fence.Store(&lost)
	l.timer.Stop()
	l.cancel()         // stops the renewal loop
	l.recordEnd(label) // counted by the time Done closes
	l.end(err)         // cancelled by the time Done closes
	close(l.lost)
	if cause == ErrReleased {
		l.log.Debug("nodeid: lease ended", "err", err)
	} else {
		l.log.Error("nodeid: lease lost", "err", err)
	}
}
