package nodeid

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Match them with errors.Is: every error this package returns
// wraps at most one of them together with the detail that caused it.
var (
	// ErrNoNodeIDAvailable: every node ID of the configured range is leased.
	ErrNoNodeIDAvailable = errors.New("nodeid: no node ID available")

	// ErrLeaseLost: the lease ended; nothing may be minted under it any more.
	// Errors that match it also match exactly one of ErrTakenOver,
	// ErrExpired, ErrReleased, ErrEvicted or ErrFailover, which say why.
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
	// one of another layout built on Minter, and the nodeid command's run.
	// Minter.Check returns ErrClockAhead itself.

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
	// stale it is. Acquire returns it at once, even with WithWait.
	ErrRestorePending = errors.New("nodeid: restore not declared")

	// ErrInvalidOption: an option passed to New has a bad value.
	ErrInvalidOption = errors.New("nodeid: invalid option")

	// ErrClosed: the Registry was closed.
	ErrClosed = errors.New("nodeid: registry closed")
)

// LostError is the error of a lost lease. It matches ErrLeaseLost and its
// Cause (ErrTakenOver, ErrExpired, ErrReleased, ErrEvicted or ErrFailover)
// with errors.Is.
type LostError struct {
	NodeID int64 // the node ID of the lost lease
	Epoch  int64 // the epoch of the lost lease
	Cause  error // why it was lost
}

// Error names the node ID, the epoch and the cause.
func (e *LostError) Error() string {
	return fmt.Sprintf("nodeid: lease of node ID %d (epoch %d) lost: %s",
		e.NodeID, e.Epoch, strings.TrimPrefix(e.Cause.Error(), "nodeid: "))
}

// Is reports whether target is ErrLeaseLost; the cause is matched through
// Unwrap.
func (e *LostError) Is(target error) bool { return target == ErrLeaseLost }

// Unwrap returns the cause.
func (e *LostError) Unwrap() error { return e.Cause }

// TableConfigError is the error of a Registry that asks for more than its
// table records (the configuration that postgres.SchemaSQL, "nodeid init"
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
		return fmt.Sprintf("%v: node range %d-%d is not within the range %d-%d recorded by table %s: a Registry leases only node IDs its table holds; lease a part of the table's range (WithNodeRange), or widen it with the table's DDL (postgres.SchemaSQL with postgres.WithNodeRange), applied by its owner",
			ErrInvalidOption, e.MinNode, e.MaxNode, e.TableMinNode, e.TableMaxNode, e.Table)
	}
	return fmt.Sprintf("%v: TTL %s is above the maximum %s recorded by table %s: no lease of the table may be longer; lower WithTTL, or raise the maximum with the table's DDL (postgres.SchemaSQL with postgres.WithMaxTTL), applied by its owner",
		ErrInvalidOption, e.TTL, e.MaxTTL, e.Table)
}

// Is reports whether target is ErrInvalidOption.
func (e *TableConfigError) Is(target error) bool { return target == ErrInvalidOption }

// invalid returns an ErrInvalidOption error naming the bad value and the rule.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}
