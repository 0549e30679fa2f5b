package nodeid

import (
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// fenceState is an immutable snapshot of what a lease permits, its fence. A
// generator reads it on every ID: one atomic load.
type fenceState struct {
	// until is the local deadline, as monotonic time since the lease's
	// base: nothing may be minted at or after it.
	until   time.Duration
	horizon int64 // unix ms recorded in the database: nothing may be stamped after it
	err     error // non-nil once the lease is lost
}

// setFence installs a new fence; l.mu is held, or l is not yet shared.
func (l *Lease) setFence(deadline time.Time, horizon int64, err error) {
	l.fence.Store(&fenceState{until: deadline.Sub(l.base), horizon: horizon, err: err})
}

// deadline returns the local deadline of f.
func (l *Lease) deadline(f *fenceState) time.Time { return l.base.Add(f.until) }

// passed reports whether the local deadline of f has passed.
func (l *Lease) passed(f *fenceState) bool { return time.Since(l.base) >= f.until }

// Fence is what an ID generator needs of a lease: the protocol between a
// Lease and the one generator that mints under it, which checks every ID
// against it. Package snowflake's Generator is built on it; a generator of
// another layout (sonyflake's, or one of your own) that keeps nodeid's
// guarantees must keep this contract:
//
//   - Base: read the monotonic clock as d := time.Since(m.Base()) for each
//     ID, before the ID's stamp is fixed; Base is a time read with time.Now
//     before the lease was claimed.
//   - Check: call m.Check(d, ms) for every ID, with that d and the unix
//     millisecond ms the ID is stamped with, and return no ID unless it
//     returns nil. It fails once the lease is lost, at and after the local
//     deadline, and for a stamp later than the horizon the lease has
//     recorded in the database (ErrClockAhead). Stamp only strictly after
//     Lease.PreviousHorizon: Check does not refuse earlier stamps.
//   - Bind: register the generator's seal function once, before minting.
//     Release calls it after the lease has stopped admitting IDs; it must
//     stop the generator for good and return the latest unix millisecond it
//     stamped, so that Release records that exact horizon.
//
// Such a generator reports its own clock failures with the package's clock
// errors, so that callers match one set: ErrClockBehind when the clock does
// not pass the previous horizon in time, ErrTimeOverflow when its layout's
// time field is used up.
//
// A Fence is a small value: copy it freely. The zero Fence has no lease:
// its Check and Bind return an error.
type Fence struct{ l *Lease }

// NewFence returns the Fence of l, for the generator that mints under it.
func NewFence(l *Lease) Fence { return Fence{l: l} }

var errNoLease = errors.New("nodeid: Fence: no lease (build it with NewFence)")

// Base returns the monotonic origin of Check: a time read with time.Now
// before the lease was claimed. The zero Fence's is the zero time.
func (m Fence) Base() time.Time {
	if m.l == nil {
		return time.Time{}
	}
	return m.l.base
}

// Check reports whether an ID stamped with unix millisecond ms may be
// minted at time Base() + d, for d read as time.Since(Base()): nil while the
// lease is held, d is before the deadline and ms is not after the horizon
// recorded in the database; otherwise the reason: the lease's error
// (matching ErrLeaseLost and the cause) or an error matching ErrClockAhead.
// It takes no lock and does not allocate. Generators call it for every ID.
func (m Fence) Check(d time.Duration, ms int64) error {
	if m.l == nil {
		return errNoLease
	}
	return m.l.check(d, ms)
}

// check is Fence.Check.
func (l *Lease) check(d time.Duration, ms int64) error {
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
// horizon recorded at the last renewal, which is always safe.
//
// A seal that returns 0 declares that nothing was stamped under the lease
// (Release records the previous holder's horizon, never less): a process
// that fails before it mints anything then does not make the node ID's next
// holder wait for this lease's horizon. Bind fails once the lease is lost.
func (m Fence) Bind(seal func() int64) error {
	if m.l == nil {
		return errNoLease
	}
	return m.l.bind(seal)
}

// bind is Fence.Bind.
func (l *Lease) bind(seal func() int64) error {
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

// seal stops the bound generator, if any, and returns the horizon Release
// records: the latest millisecond the generator stamped, or, with no
// generator, admin.NoHorizon: the row keeps the horizon recorded at the last
// renewal. l.mu is held, and the lease has stopped admitting IDs.
func (l *Lease) seal() (exactMs int64) {
	if l.sealer == nil {
		return admin.NoHorizon
	}
	return max(l.prev, l.sealer())
}
