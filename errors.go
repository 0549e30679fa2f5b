package nodeid

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// Sentinel errors. Match them with errors.Is: every error this package returns
// wraps at most one of them together with the detail that caused it.
var (
	// ErrNoNodeIDAvailable: no node ID of the range is claimable now: every
	// one is held, or not claimable yet (an *UnavailableError says which,
	// and when the first becomes claimable).
	ErrNoNodeIDAvailable = errors.New("nodeid: no node ID available")

	// ErrLeaseLost: the lease was lost; nothing may be minted under it any
	// more. Errors that match it also match exactly one of ErrTakenOver,
	// ErrExpired, ErrEvicted or ErrFailover, which say why. A lease you
	// released is not lost: its error matches ErrReleased only.
	ErrLeaseLost = errors.New("nodeid: lease lost")

	// ErrTakenOver: another holder claimed the node ID after the lease expired
	// in the database.
	ErrTakenOver = errors.New("nodeid: taken over by another holder")

	// ErrExpired: the local deadline passed before a renewal succeeded, or the
	// database found the lease expired.
	ErrExpired = errors.New("nodeid: lease expired")

	// ErrReleased: the lease was released by its holder.
	ErrReleased = errors.New("nodeid: lease released")

	// ErrEvicted: an operator evicted the lease ("nodeid evict --epoch").
	ErrEvicted = errors.New("nodeid: lease evicted by an operator")

	// ErrFailover: the database no longer has the claim the lease rests on:
	// it failed over to a server that lacked the latest commits.
	ErrFailover = errors.New("nodeid: claim lost in a database failover")

	// The clock errors: a stamp outside what the lease or the ID layout
	// allows. They live here, beside the lease whose horizons they guard,
	// so that every generator returns the same three: package snowflake,
	// one of another layout built on Fence, and the nodeid command's run.
	// Fence.Check returns ErrClockAhead itself.

	// ErrClockBehind: the wall clock is at or before the horizon left by an
	// earlier holder of the node ID, and did not pass it within the wait bound.
	ErrClockBehind = errors.New("nodeid: clock behind horizon")

	// ErrClockAhead: an ID would be stamped later than the horizon the lease
	// has recorded in the database, which happens only when a generator's
	// clock runs ahead of the registry's. It clears after the next renewal.
	ErrClockAhead = errors.New("nodeid: clock ahead of recorded horizon")

	// ErrTimeOverflow: the time to stamp is past the end of the ID layout's
	// time field. It does not clear by waiting: the layout is used up.
	ErrTimeOverflow = errors.New("nodeid: time beyond the end of the ID layout")

	// ErrRestorePending: the table is served by another server than the one
	// it records (another system identifier: a dump restored elsewhere, an
	// upgrade, a move), and hands out no node ID until an operator declares
	// the restore with the longest TTL any holder of the old history may
	// hold ("nodeid init --restored --max-ttl"). A copy cannot know how
	// stale it is. Acquire returns it at once, without waiting.
	ErrRestorePending = errors.New("nodeid: restore not declared")

	// ErrCreationPending: the table was created asynchronously, and hands
	// out no node ID until every standby the server has once the creation
	// has committed has replayed it (a failover to one that lacks it would lose
	// the table and every claim made in it). Acquire confirms the creation
	// itself, waiting for the standbys within its context and at most
	// CreationWait; it returns this error, at once, without waiting,
	// when it cannot: the role may not see the position of a standby that
	// streams without a replication slot (grant pg_read_all_stats, or
	// confirm it with "nodeid init"), or a standby has not replayed the
	// creation in time.
	ErrCreationPending = errors.New("nodeid: table creation not confirmed")

	// ErrInvalidOption: an option passed to New has a bad value.
	ErrInvalidOption = errors.New("nodeid: invalid option")

	// ErrClosed: the Registry was closed.
	ErrClosed = errors.New("nodeid: registry closed")
)

// EndError is the error of a lease that ended: its Err, and the cause of
// its Context. It matches its Cause (ErrTakenOver, ErrExpired, ErrEvicted,
// ErrFailover or ErrReleased) with errors.Is, and ErrLeaseLost unless the
// cause is ErrReleased: your own release is not a loss.
type EndError struct {
	NodeID int64 // the node ID of the lease
	Epoch  int64 // the epoch of the lease
	Cause  error // why it ended
}

// Error names the node ID, the epoch and the cause.
func (e *EndError) Error() string {
	verb := "lost"
	if e.Cause == ErrReleased {
		verb = "ended"
	}
	return fmt.Sprintf("nodeid: lease of node ID %d (epoch %d) %s: %s",
		e.NodeID, e.Epoch, verb, strings.TrimPrefix(e.Cause.Error(), "nodeid: "))
}

// Is reports whether target is ErrLeaseLost and the lease was lost, not
// released; the cause is matched through Unwrap.
func (e *EndError) Is(target error) bool { return target == ErrLeaseLost && e.Cause != ErrReleased }

// Unwrap returns the cause.
func (e *EndError) Unwrap() error { return e.Cause }

// causes are the ends of a lease: each cause's sentinel and its name, which
// the metrics (nodeid.cause), the statements (admin.Cause...) and Verify's
// verdicts share. The local deadline, which is ErrExpired too, is named
// "deadline" by the metrics.
var causes = []struct {
	err  error
	name string
}{
	{ErrTakenOver, admin.CauseTakenOver},
	{ErrExpired, admin.CauseExpired},
	{ErrReleased, admin.CauseReleased},
	{ErrEvicted, admin.CauseEvicted},
	{ErrFailover, admin.CauseFailover},
}

// causeName names a cause; causeErr is its inverse (nil for a name of none).
func causeName(cause error) string {
	for _, c := range causes {
		if c.err == cause {
			return c.name
		}
	}
	return admin.CauseExpired
}

func causeErr(name string) error {
	for _, c := range causes {
		if c.name == name {
			return c.err
		}
	}
	return nil
}

// UnavailableError is the error of a claim that found no node ID
// claimable: TryAcquire returns it, and Acquire while it waits for one. It
// matches ErrNoNodeIDAvailable.
type UnavailableError struct {
	Table            string
	MinNode, MaxNode int64 // the range claimed from
	// Held node IDs are leased; NotYet are not, but cannot be claimed yet:
	// their previous holder's horizon has not passed, or an evicted lease
	// has not expired, or a quarantine after a failover or a restore holds
	// them.
	Held, NotYet int64
	// Soonest is the node ID of NotYet that becomes claimable first, after
	// the instant After by the database's clock, for the reason Why:
	// "horizon", "evicted" or "quarantine". Zero when NotYet is 0.
	Soonest int64
	After   time.Time
	Why     string
	// SetAt is when the horizon Soonest waits for was set (for "horizon").
	SetAt time.Time
	// Now is the database's time of the claim.
	Now time.Time
}

// Error says how many node IDs are held, how many are not claimable yet,
// and when and why the first of those becomes claimable.
func (e *UnavailableError) Error() string {
	if e.NotYet == 0 {
		return fmt.Sprintf("%v: all of node IDs %d-%d are held", ErrNoNodeIDAvailable, e.MinNode, e.MaxNode)
	}
	wait := e.After.Add(time.Millisecond).Sub(e.Now).Round(time.Millisecond)
	var cause string
	switch e.Why {
	case "evicted":
		cause = fmt.Sprintf("the expiry of the lease an operator evicted, %s: its holder may mint until its deadline", exactTime(e.After))
	case "quarantine":
		cause = fmt.Sprintf("the quarantine of node IDs last claimed before the database failed over or was restored, until %s", exactTime(e.After))
	default:
		cause = fmt.Sprintf("its previous holder's horizon %s, set at %s", exactMs(e.After.UnixMilli()), exactTime(e.SetAt))
	}
	return fmt.Sprintf("%v: node IDs %d-%d: %d held, %d not claimable yet; node ID %d is the first to become claimable, in %s (%s)",
		ErrNoNodeIDAvailable, e.MinNode, e.MaxNode, e.Held, e.NotYet, e.Soonest, wait, cause)
}

// Is reports whether target is ErrNoNodeIDAvailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrNoNodeIDAvailable }

// TableConfigError is the error of a Registry that asks for more than its
// table records (the configuration that postgres.Schema.SQL, "nodeid init"
// or WithCreateTable set): a node range not within the table's, or a TTL
// above the table's maximum. Acquire returns it before any claim. It
// matches ErrInvalidOption. Only the table's DDL, applied by its owner,
// widens the table's range or raises its maximum.
type TableConfigError struct {
	Table string // the lease table

	// What the Registry asks for: its node range (WithNodeRange, else the
	// table's) and its TTL (WithTTL).
	MinNode, MaxNode int64
	TTL              time.Duration

	// What the table records: its node range and the longest TTL a lease
	// may take.
	TableMinNode, TableMaxNode int64
	MaxTTL                     time.Duration
}

// rangeOutside reports whether the Registry's node range is not within
// the table's.
func (e *TableConfigError) rangeOutside() bool {
	return e.MinNode < e.TableMinNode || e.MaxNode > e.TableMaxNode
}

// Error names both values, the table's rule and the options that change
// them.
func (e *TableConfigError) Error() string {
	if e.rangeOutside() {
		return fmt.Sprintf("%v: node range %d-%d is not within the range %d-%d recorded by table %s: a Registry leases only node IDs its table holds; lease a part of the table's range (WithNodeRange), or widen it with the table's DDL (postgres.Schema.SQL with MinNode and MaxNode), applied by its owner",
			ErrInvalidOption, e.MinNode, e.MaxNode, e.TableMinNode, e.TableMaxNode, e.Table)
	}
	return fmt.Sprintf("%v: TTL %s is above the maximum %s recorded by table %s: no lease of the table may be longer; lower WithTTL, or raise the maximum with the table's DDL (postgres.Schema.SQL with MaxTTL), applied by its owner",
		ErrInvalidOption, e.TTL, e.MaxTTL, e.Table)
}

// Is reports whether target is ErrInvalidOption.
func (e *TableConfigError) Is(target error) bool { return target == ErrInvalidOption }

// invalid returns an ErrInvalidOption error naming the bad value and the rule.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

// timeLayout is the layout of an exact time in nodeid's messages and the
// nodeid command's tables: UTC, to the millisecond.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// exactTime writes t in timeLayout, in UTC.
func exactTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// exactMs writes unix millisecond ms as the number and its time.
func exactMs(ms int64) string { return fmt.Sprintf("%d (%s)", ms, exactTime(time.UnixMilli(ms))) }
