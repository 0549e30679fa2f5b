// Package nodeidtest runs nodeid Registries on a lease table held in
// memory, for the tests of a program that uses nodeid: they can take a
// lease, mint under it with package snowflake, and end it the ways a real
// table does (taken over, evicted, expired, lost in a failover, a database
// outage), without PostgreSQL.
//
// A lease learns of a fault the way it would from PostgreSQL: at its next
// renewal (every TTL/3), or at its local deadline when the table does not
// answer. In a testing/synctest bubble that takes no real time (a
// bubble's clock starts in 2000: a generator there needs a layout whose
// origin is earlier than the default's):
//
//	synctest.Test(t, func(t *testing.T) {
//		table := nodeidtest.NewTable(0, 3)
//		reg, _ := table.Registry(nodeid.WithTTL(30 * time.Second))
//		defer reg.Close()
//		lease, _ := reg.Acquire(t.Context())
//		table.Evict(lease.NodeID())
//		<-lease.Done() // at the next renewal, 10 s later in the bubble
//		// errors.Is(lease.Err(), nodeid.ErrEvicted)
//	})
//
// The table keeps the rules of the real one that a holder can see: the
// lowest claimable node ID is claimed, a node ID is claimable once its
// lease has expired and its previous holder's horizon has passed, every
// claim raises the epoch, and renewals and releases change only the live
// lease of their owner and epoch. It knows nothing of failovers, restores
// or quarantines beyond LoseClaim.
package nodeidtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
)

// Table is a lease table in memory. It is safe for concurrent use.
type Table struct {
	mu     sync.Mutex
	lo, hi int64
	rows   map[int64]*row
	down   error
}

type row struct {
	owner   string
	epoch   int64
	expires time.Time // zero: free
	horizon int64
	ended   admin.EndReason // of the claim of epoch, once it ended
}

// NewTable returns a table of node IDs lo to hi, inclusive, every one free.
// Its leases may be as long as nodeid.MaxTTL.
func NewTable(lo, hi int64) *Table {
	t := &Table{lo: lo, hi: hi, rows: map[int64]*row{}}
	for n := lo; n <= hi; n++ {
		t.rows[n] = &row{}
	}
	return t
}

// Registry returns a Registry on the table, configured by opts as
// nodeid.New configures one (WithTable and WithCreateTable change nothing
// here). Close it when done, as any Registry.
func (t *Table) Registry(opts ...nodeid.Option) (*nodeid.Registry, error) {
	return nodeid.NewOn((*stmts)(t), opts...)
}

// Row is a node ID's row, as the table holds it.
type Row struct {
	NodeID  int64
	Owner   string    // "" when no one holds it
	Epoch   int64     // raised by every claim
	Expires time.Time // zero for a free row
	Horizon int64     // unix ms: the next holder stamps after it
}

// Row returns node's row; false if the table has none.
func (t *Table) Row(node int64) (Row, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.rows[node]
	if !ok {
		return Row{}, false
	}
	return Row{NodeID: node, Owner: r.owner, Epoch: r.epoch, Expires: r.expires, Horizon: r.horizon}, true
}

// held applies change, a fault, to node's row under the table's lock if
// the row is held; else it says why not, naming what the fault does.
func (t *Table) held(node int64, what string, change func(r *row)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.rows[node]
	switch {
	case !ok:
		return fmt.Errorf("nodeidtest: %s node ID %d: the table holds node IDs %d-%d", what, node, t.lo, t.hi)
	case r.owner == "" || r.expires.Before(time.Now()):
		return fmt.Errorf("nodeidtest: %s node ID %d: it is not held", what, node)
	}
	change(r)
	return nil
}

// TakeOver makes another holder claim node at the next epoch, as after its
// lease expired in the database: the holder's next renewal ends its lease
// with nodeid.ErrTakenOver.
func (t *Table) TakeOver(node int64) error {
	return t.held(node, "take over", func(r *row) { r.owner, r.epoch, r.ended = "nodeidtest-takeover", r.epoch+1, "" })
}

// Evict evicts node's lease, as "nodeid evict" does: its holder's next
// renewal ends its lease with nodeid.ErrEvicted; the row keeps its expiry.
func (t *Table) Evict(node int64) error {
	return t.held(node, "evict", func(r *row) { r.owner, r.ended = "", admin.EndEvicted })
}

// Expire makes node's lease expire in the table, as when its holder paused
// past its TTL: the holder's next renewal ends its lease with
// nodeid.ErrExpired.
func (t *Table) Expire(node int64) error {
	return t.held(node, "expire", func(r *row) { r.expires = time.Now().Add(-time.Millisecond) })
}

// LoseClaim takes node's claim back, as a failover to a standby that lacked
// it does: its holder's next renewal ends its lease with nodeid.ErrFailover.
func (t *Table) LoseClaim(node int64) error {
	return t.held(node, "lose the claim of", func(r *row) { r.owner, r.epoch, r.expires, r.ended = "", r.epoch-1, time.Time{}, "" })
}

// Fail makes every statement fail with err until Fail(nil), as a database
// that does not answer: renewals are retried, and a lease ends at its local
// deadline (nodeid.ErrExpired) unless the table answers again before. Give
// an error that nodeid retries: a context.DeadlineExceeded, an io.EOF, a
// *net.OpError, or a PostgreSQL connection error.
func (t *Table) Fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = err
}

// stmts are the table's statements, as a Registry runs them: a Table
// converted, so that they are no part of its API.
type stmts Table

var _ admin.Statements = (*stmts)(nil)

func (t *stmts) answer(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.down
}

// Create changes nothing: the table exists.
func (t *stmts) Create(ctx context.Context, _ time.Duration) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return false, t.answer(ctx)
}

// ReadConfig returns the table's range, a maximum TTL of nodeid.MaxTTL and
// synchronous replication.
func (t *stmts) ReadConfig(ctx context.Context) (admin.TableConfig, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return admin.TableConfig{MinNode: t.lo, MaxNode: t.hi, MaxTTL: nodeid.MaxTTL, Replication: admin.Sync,
		Generation: 1}, t.answer(ctx)
}

// CheckSchema finds nothing missing.
func (t *stmts) CheckSchema(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answer(ctx)
}

// CheckReplication finds nothing refused.
func (t *stmts) CheckReplication(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answer(ctx)
}

// Claim claims the lowest claimable node ID of lo to hi.
func (t *stmts) Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (admin.ClaimResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.answer(ctx); err != nil {
		return admin.ClaimResult{}, err
	}
	now := time.Now()
	nowMs := now.UnixMilli()
	why := admin.Refusal{Now: now}
	for n := lo; n <= hi; n++ {
		r, ok := t.rows[n]
		switch {
		case !ok:
			continue
		case !r.expires.IsZero() && !r.expires.Before(now) && r.owner != "":
			why.Held++
			continue
		case !r.expires.IsZero() && !r.expires.Before(now) || r.horizon >= nowMs:
			until := max(r.horizon, r.expires.UnixMilli())
			if why.Cooling == 0 || until < why.Until {
				why.Soonest, why.Until, why.Evicted = n, until, r.owner == "" && !r.expires.Before(now)
			}
			why.Cooling++
			continue
		}
		prev := r.horizon
		r.owner, r.epoch, r.expires, r.ended = owner, r.epoch+1, now.Add(ttl), ""
		r.horizon = max(prev, min(horizonMs, nowMs+ttl.Milliseconds()))
		return admin.ClaimResult{OK: true, Claim: admin.Claim{Key: admin.Key{NodeID: n, Owner: owner, Epoch: r.epoch},
			Expires: r.expires, Now: now, PrevHorizon: prev, Horizon: r.horizon, Generation: 1}}, nil
	}
	return admin.ClaimResult{Refusal: why}, nil
}

// outcome describes r as a renewal or a release that changed nothing finds
// it.
func outcome(r *row, k admin.Key, now time.Time) admin.Outcome {
	o := admin.Outcome{Now: now, Exists: true, Owner: r.owner, Epoch: r.epoch}
	if r.epoch == k.Epoch {
		o.EndReason = r.ended
	}
	return o
}

// live reports whether r is the unexpired lease of k.
func live(r *row, k admin.Key, now time.Time) bool {
	return r.owner == k.Owner && r.epoch == k.Epoch && !r.expires.IsZero() && !r.expires.Before(now)
}

// Renew extends the live lease k by ttl and raises its horizon.
func (t *stmts) Renew(ctx context.Context, k admin.Key, ttl time.Duration, horizonMs int64) (admin.Outcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.answer(ctx); err != nil {
		return admin.Outcome{}, err
	}
	now := time.Now()
	r, ok := t.rows[k.NodeID]
	if !ok {
		return admin.Outcome{Now: now}, nil
	}
	if !live(r, k, now) {
		return outcome(r, k, now), nil
	}
	r.expires = now.Add(ttl)
	r.horizon = max(r.horizon, min(horizonMs, now.Add(ttl).UnixMilli()))
	o := outcome(r, k, now)
	o.OK, o.Expires, o.Horizon = true, r.expires, r.horizon
	return o, nil
}

// Release frees the live lease k, with its exact horizon unless exactMs is
// admin.NoHorizon.
func (t *stmts) Release(ctx context.Context, k admin.Key, exactMs int64) (admin.Outcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.answer(ctx); err != nil {
		return admin.Outcome{}, err
	}
	now := time.Now()
	r, ok := t.rows[k.NodeID]
	if !ok {
		return admin.Outcome{Now: now}, nil
	}
	if !live(r, k, now) {
		return outcome(r, k, now), nil
	}
	r.owner, r.expires, r.ended = "", time.Time{}, admin.EndReleased
	if exactMs != admin.NoHorizon {
		r.horizon = exactMs
	}
	o := outcome(r, k, now)
	o.OK, o.Horizon = true, r.horizon
	return o, nil
}
