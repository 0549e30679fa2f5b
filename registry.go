package nodeid

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/store"
)

// leaseStore is the SQL a Registry runs. *store.Store implements it; the unit
// tests of the renewal rules use a fake.
type leaseStore interface {
	Ensure(ctx context.Context, create bool) error
	CheckSchema(ctx context.Context) error
	Claim(ctx context.Context, owner string, ttl time.Duration, horizonMs int64) (store.Claim, bool, error)
	Renew(ctx context.Context, k store.Key, ttl time.Duration, horizonMs int64) (store.Outcome, error)
	Release(ctx context.Context, k store.Key, horizonMs int64, exact bool) (store.Outcome, error)
	PruneHistory(ctx context.Context, olderThan time.Duration) (int64, error)
}

// Registry leases node IDs from one PostgreSQL table. It is safe for
// concurrent use.
type Registry struct {
	cfg config
	st  leaseStore

	ensureMu sync.Mutex // serialises the one-off table set-up
	ensured  bool

	mu     sync.Mutex
	closed bool
	leases map[*Lease]struct{}
}

// New returns a Registry that leases node IDs from the table of db. It
// validates every option and returns an error naming the first bad one; it
// does not touch the database (the first Acquire does). The caller keeps
// ownership of db: Close does not close it.
func New(db *sql.DB, opts ...Option) (*Registry, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.owner == "" {
		cfg.owner = defaultOwner()
	}
	st, err := store.New(db, cfg.table)
	if err != nil {
		return nil, err
	}
	return newRegistry(cfg, st), nil
}

func newRegistry(cfg config, st leaseStore) *Registry {
	return &Registry{cfg: cfg, st: st, leases: map[*Lease]struct{}{}}
}

// Owner returns the holder name this Registry records on its leases.
func (r *Registry) Owner() string { return r.cfg.owner }

// TTL returns the lease TTL.
func (r *Registry) TTL() time.Duration { return r.cfg.ttl }

// CheckSchema verifies, read-only, that the lease and history tables exist
// with the expected columns and that the role may SELECT, INSERT and UPDATE
// them. A failure is alert-worthy: postgres.Fatal reports true for it. Call
// it at start-up where a migration tool provisions the tables.
func (r *Registry) CheckSchema(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	return r.st.CheckSchema(ctx)
}

var errNilContext = errors.New("nodeid: nil context")

// PruneHistory deletes the history of claims that ended more than olderThan
// ago and returns how many it deleted; claims still open are kept. IDs minted
// under a pruned claim can no longer be traced to their holder. The role
// needs DELETE on the history table.
func (r *Registry) PruneHistory(ctx context.Context, olderThan time.Duration) (int64, error) {
	if ctx == nil {
		return 0, errNilContext
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("nodeid: prune history older than %s: the age must not be negative", olderThan)
	}
	return r.st.PruneHistory(ctx, olderThan)
}

// Acquire claims the lowest free node ID of the range and starts renewing
// it in the background. ctx bounds the claim only, not the lease. It returns
// an error matching ErrNoNodeIDAvailable when every node ID is held, unless
// WithWait is set, in which case it waits for one until ctx ends. The first
// Acquire of a Registry creates the tables if needed and pre-fills the range.
// Acquire may be called more than once: each lease is independent.
func (r *Registry) Acquire(ctx context.Context) (*Lease, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.ensure(ctx); err != nil {
		return nil, err
	}
	poll := backoff{next: waitMin, max: waitMax}
	for {
		l, err := r.claim(ctx)
		if !r.cfg.wait || !errors.Is(err, ErrNoNodeIDAvailable) {
			return l, err
		}
		if !poll.wait(ctx) {
			return nil, fmt.Errorf("%w: stopped waiting: %w", err, context.Cause(ctx))
		}
	}
}

func (r *Registry) ensure(ctx context.Context) error {
	r.ensureMu.Lock()
	defer r.ensureMu.Unlock()
	if r.ensured {
		return nil
	}
	if err := r.st.Ensure(ctx, r.cfg.create); err != nil {
		return err
	}
	r.ensured = true
	return nil
}

func (r *Registry) claim(ctx context.Context) (*Lease, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	t0 := time.Now()
	c, ok, err := r.st.Claim(ctx, r.cfg.owner, r.cfg.ttl, horizonFor(t0, r.cfg.ttl))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: all of node IDs %d-%d are held",
			ErrNoNodeIDAvailable, r.cfg.table.MinNode, r.cfg.table.MaxNode)
	}
	l := newLease(r, c, t0)
	l.start(t0)

	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.leases[l] = struct{}{}
	}
	r.mu.Unlock()
	if closed {
		_ = l.Release(context.Background())
		return nil, ErrClosed
	}
	if err := l.Err(); err != nil {
		_ = l.Release(context.Background())
		return nil, fmt.Errorf("nodeid: the claim took longer than the lease allows: %w", err)
	}
	l.log.Debug("nodeid: acquired", "deadline_in", time.Until(l.Deadline()), "previous_horizon_ms", c.PrevHorizon)
	return l, nil
}

func (r *Registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Registry) forget(l *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.leases, l)
}

// Close releases every lease of the Registry, stops every goroutine it
// started and waits for them. Later Acquire calls return ErrClosed. It is
// idempotent; it returns the errors of releases that failed, not of leases
// that were already lost.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	leases := make([]*Lease, 0, len(r.leases))
	for l := range r.leases {
		leases = append(leases, l)
	}
	r.mu.Unlock()

	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() {
			if err := l.Release(context.Background()); !errors.Is(err, ErrLeaseLost) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
