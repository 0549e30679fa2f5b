package nodeid

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// leaseStore is the SQL a Registry runs: an *admin.Store, the renewal
// rules' fake in the unit tests, or package nodeidtest's table in memory.
type leaseStore = admin.Statements

// Registry leases node IDs from one PostgreSQL table. It is safe for
// concurrent use.
type Registry struct {
	cfg config
	st  leaseStore

	// ensureMu serialises the one-off check of the table: a lock its
	// waiters can give up on when their context ends (lockEnsure), so that
	// an Acquire returns within its context while another holds it.
	ensureMu chan struct{}
	ensured  bool
	lo, hi   int64 // the node range claimed from, once ensured
	tableLo  int64 // the table's recorded node range, once ensured
	tableHi  int64
	ranged   atomic.Bool // lo and hi are set, for readers without ensureMu

	metrics metrics
	// quarantineUntil is the end, in unix milliseconds, of the quarantine
	// that refused the latest claim; 0 if none did (recordClaim).
	quarantineUntil atomic.Int64

	// bg counts the goroutines that run statements on behalf of callers
	// who stopped waiting for them (see bounded).
	bg sync.WaitGroup
	// stop ends, when Close cuts them, the claims that go on after their
	// callers stopped waiting (see bounded) and the releases of what they
	// claimed; halt cancels it.
	stop context.Context
	halt context.CancelFunc

	mu     sync.Mutex
	closed bool
	leases map[*Lease]struct{}
}

// New returns a Registry that leases node IDs from the table of db. It
// validates every option and returns an error naming the first bad one; it
// does not touch the database (the first Acquire does). The caller keeps
// ownership of db: Close does not close it.
func New(db *sql.DB, opts ...Option) (*Registry, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	st, err := admin.New(db, cfg.table)
	if err != nil {
		return nil, err
	}
	return newRegistry(cfg, st), nil
}

// NewOn returns a Registry, configured by opts as New configures one, that
// runs its statements through st instead of a database of its own: package
// nodeidtest's table in memory is one. WithTable and WithCreateTable change
// nothing here.
func NewOn(st admin.Statements, opts ...Option) (*Registry, error) {
	if st == nil {
		return nil, invalid("NewOn: the statements are nil")
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	return newRegistry(cfg, st), nil
}

// configure applies opts to the defaults, validating each.
func configure(opts []Option) (config, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return cfg, invalid("option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	if cfg.owner == "" {
		cfg.owner = defaultOwner()
	}
	if cfg.rangeSet {
		if err := cfg.checkRange(cfg.table.MinNode, cfg.table.MaxNode, "the"); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func newRegistry(cfg config, st leaseStore) *Registry {
	r := &Registry{cfg: cfg, st: st, leases: map[*Lease]struct{}{}, ensureMu: make(chan struct{}, 1)}
	r.stop, r.halt = context.WithCancel(context.Background())
	r.metrics = newMetrics(r, cfg.meters)
	return r
}

// Owner returns the holder name this Registry records on its leases.
func (r *Registry) Owner() string { return r.cfg.owner }

// TTL returns the lease TTL.
func (r *Registry) TTL() time.Duration { return r.cfg.ttl }

// CheckSchema verifies, read-only, that the lease, history and configuration
// tables exist with the expected columns and their SQL functions, and that
// the role has the privileges the leases need: EXECUTE on the client
// functions and SELECT on the tables (postgres.GrantSQL). A failure
// is alert-worthy: postgres.Fatal reports true for it. Call it at start-up
// where a migration tool provisions the tables.
func (r *Registry) CheckSchema(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	return r.st.CheckSchema(ctx)
}

var errNilContext = errors.New("nodeid: nil context")

// Acquire claims the lowest claimable node ID of the range and starts
// renewing it in the background, waiting (polling with jittered backoff)
// while no node ID is claimable, until ctx ends; TryAcquire does not wait.
// A node ID is claimable when it is not held and its previous holder's
// horizon has passed, so that the new holder can mint at once. ctx bounds
// the wait for the claim only, not the lease: Acquire returns when ctx ends
// even if the database or the driver does not answer, with an error
// matching ErrNoNodeIDAvailable (an *UnavailableError) if it was waiting
// for a node ID. The end of ctx does not cut a claim in flight, which the
// server might commit all the same: the claim goes on in the background for
// up to ReleaseTimeout/2 more, and a node ID it claims is released at once.
// Only a claim cut after that, or by Close, may leave its node ID held
// until the lease expires, if the server commits it nevertheless. A table
// waiting for a restore to be declared gives ErrRestorePending at once.
//
// The first Acquire of a Registry checks the Registry's options against
// the table's recorded configuration (creating the tables first with
// WithCreateTable): a range outside the table's, a TTL above its maximum or
// a range wider than the node bits is an error, and nothing is claimed. It
// makes those checks in the statement of its claim, and reads the
// configuration apart only when that claims nothing. Acquire may be called
// more than once: each lease is independent.
func (r *Registry) Acquire(ctx context.Context) (*Lease, error) {
	return r.acquireTimed(ctx, true)
}

// TryAcquire is Acquire without the wait: when no node ID is claimable it
// returns at once an *UnavailableError, which matches ErrNoNodeIDAvailable
// and says how many node IDs are held, how many are not claimable yet, and
// when the first of those becomes claimable.
func (r *Registry) TryAcquire(ctx context.Context) (*Lease, error) {
	return r.acquireTimed(ctx, false)
}

func (r *Registry) acquireTimed(ctx context.Context, wait bool) (*Lease, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	start := time.Now()
	l, err := r.acquire(ctx, wait)
	r.recordAcquire(ctx, time.Since(start), err)
	return l, err
}

func (r *Registry) acquire(ctx context.Context, wait bool) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if l, err := r.claimFirst(ctx); l != nil || err != nil {
		return l, err
	}
	if err := r.ensure(ctx); err != nil {
		return nil, err
	}
	poll := admin.Backoff{Next: waitMin, Max: waitMax}
	waiting := false
	defer func() {
		if waiting {
			r.metrics.waiting.Add(ctx, -1, r.attrs())
		}
	}()
	for {
		l, err := r.claim(ctx)
		if !wait || !errors.Is(err, ErrNoNodeIDAvailable) {
			return l, err
		}
		if !waiting {
			waiting = true
			r.metrics.waiting.Add(ctx, 1, r.attrs())
		}
		if !poll.Wait(ctx) {
			return nil, fmt.Errorf("%w: stopped waiting: %w", err, context.Cause(ctx))
		}
	}
}

// firstClaimer is a store that can make a first claim in one statement
// (*admin.Store; a store in memory has no round trips to save).
type firstClaimer interface {
	ClaimFirst(ctx context.Context, lo, hi int64, given bool, maxNode int64, owner string, ttl time.Duration, horizonMs int64) (admin.FirstClaim, error)
	Replication() admin.Replication
}

// lockEnsure takes ensureMu, or returns the cause of ctx's end if that
// comes first.
func (r *Registry) lockEnsure(ctx context.Context) error {
	select {
	case r.ensureMu <- struct{}{}:
		return nil
	default:
	}
	select {
	case r.ensureMu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// unlockEnsure releases ensureMu.
func (r *Registry) unlockEnsure() { <-r.ensureMu }

// claimFirst is the first claim of a Registry that has not read the
// table's configuration, made in one statement with the checks that
// ensure makes (admin.ClaimFirst), so that a new process's first Acquire
// is one statement. It returns no lease and no error when that statement
// claimed nothing or failed: ensure then reads the configuration, which
// says why, and the claim is made as every later one. Only an error of the
// lease itself (the claim took longer than its TTL) is returned.
func (r *Registry) claimFirst(ctx context.Context) (*Lease, error) {
	st, ok := r.st.(firstClaimer)
	if !ok {
		return nil, nil
	}
	if r.lockEnsure(ctx) != nil {
		return nil, nil // ensure reports the context's end
	}
	defer r.unlockEnsure()
	if r.ensured || r.cfg.create || r.isClosed() || st.Replication() != "" {
		return nil, nil
	}
	t0 := time.Now()
	res, err := bounded(r, ctx, func(ctx context.Context) (admin.FirstClaim, error) {
		return st.ClaimFirst(ctx, r.cfg.table.MinNode, r.cfg.table.MaxNode, r.cfg.rangeSet, int64(1)<<r.cfg.nodeBits-1,
			r.cfg.owner, r.cfg.ttl, horizonFor(t0, r.cfg.ttl))
	}, func(res admin.FirstClaim, err error) { r.releaseLate(res.ClaimResult, err) })
	if err != nil || !res.OK {
		if err != nil {
			r.cfg.logger.Debug("nodeid: the first claim reads the table's configuration first", "error", err)
		}
		return nil, nil
	}
	r.tableLo, r.tableHi = res.TableMinNode, res.TableMaxNode
	r.lo, r.hi = r.tableLo, r.tableHi
	if r.cfg.rangeSet {
		r.lo, r.hi = r.cfg.table.MinNode, r.cfg.table.MaxNode
	}
	r.ensured = true
	r.ranged.Store(true)
	r.startAtZero()
	r.recordClaim(res.ClaimResult)
	return r.lease(ctx, res.ClaimResult, t0)
}

// ensure reads the table's configuration once and settles the node range.
func (r *Registry) ensure(ctx context.Context) error {
	if err := r.lockEnsure(ctx); err != nil {
		return err
	}
	defer r.unlockEnsure()
	if r.ensured {
		return nil
	}
	if r.cfg.create {
		if _, err := bounded(r, ctx, func(ctx context.Context) (bool, error) {
			return r.st.Create(ctx, max(postgres.DefaultMaxTTL, r.cfg.ttl))
		}, nil); err != nil {
			return err
		}
	}
	tc, err := bounded(r, ctx, r.st.ReadConfig, nil)
	if err != nil {
		return err
	}
	if err := r.checkReplication(ctx); err != nil {
		return err
	}
	lo, hi := tc.MinNode, tc.MaxNode
	if r.cfg.rangeSet {
		lo, hi = r.cfg.table.MinNode, r.cfg.table.MaxNode
	}
	mismatch := &TableConfigError{Table: r.cfg.table.Table, MinNode: lo, MaxNode: hi, TTL: r.cfg.ttl,
		TableMinNode: tc.MinNode, TableMaxNode: tc.MaxNode, MaxTTL: tc.MaxTTL}
	switch {
	case mismatch.rangeOutside() || r.cfg.ttl > tc.MaxTTL:
		return mismatch
	case !r.cfg.rangeSet:
		if err := r.cfg.checkRange(lo, hi, "table "+r.cfg.table.Table+"'s"); err != nil {
			return fmt.Errorf("%w, or lease a part of it with WithNodeRange", err)
		}
	}
	r.tableLo, r.tableHi = tc.MinNode, tc.MaxNode
	r.lo, r.hi, r.ensured = lo, hi, true
	r.ranged.Store(true)
	r.startAtZero()
	return nil
}

// checkReplication checks, within ctx, that the server allows what the
// table's replication mode needs.
func (r *Registry) checkReplication(ctx context.Context) error {
	_, err := bounded(r, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.st.CheckReplication(ctx)
	}, nil)
	return err
}

func (r *Registry) claim(ctx context.Context) (*Lease, error) { return r.claimOnce(ctx, false) }

// claimOnce claims a node ID; retried says it is the second try, after a
// pending creation was confirmed.
func (r *Registry) claimOnce(ctx context.Context, retried bool) (*Lease, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	t0 := time.Now()
	res, err := bounded(r, ctx, func(ctx context.Context) (admin.ClaimResult, error) {
		return r.st.Claim(ctx, r.lo, r.hi, r.cfg.owner, r.cfg.ttl, horizonFor(t0, r.cfg.ttl))
	}, r.releaseLate)
	if err != nil {
		return nil, err
	}
	r.recordClaim(res)
	if !res.OK && res.Refusal.CreationPending && !retried {
		// The table's creation waits for its standbys: confirm it, then
		// claim again.
		if err := r.settleCreation(ctx); err != nil {
			return nil, err
		}
		return r.claimOnce(ctx, true)
	}
	if !res.OK {
		return nil, r.refusal(res.Refusal)
	}
	return r.lease(ctx, res, t0)
}

// CreationWait bounds how long Acquire waits for the standbys to replay a
// table's pending creation (see ErrCreationPending).
const CreationWait = time.Minute

// creationSettler is a store whose table's creation may be pending
// (*admin.Store; a table in memory never is).
type creationSettler interface {
	SettleCreation(ctx context.Context, behind func(lsn string, sbs []admin.Standby)) error
}

// settleCreation confirms the table's pending creation once every standby
// has replayed it, within ctx and CreationWait, or says why it cannot.
func (r *Registry) settleCreation(ctx context.Context) error {
	table := r.cfg.table.Table
	st, ok := r.st.(creationSettler)
	if !ok {
		return fmt.Errorf("%w: table %s", ErrCreationPending, table)
	}
	wctx, cancel := context.WithTimeout(ctx, CreationWait)
	defer cancel()
	var behind atomic.Pointer[string] // the standbys the wait met behind, for the error
	_, err := bounded(r, wctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, st.SettleCreation(ctx, func(lsn string, sbs []admin.Standby) {
			labels := admin.Labels(sbs)
			behind.Store(&labels)
			r.cfg.logger.Info("nodeid: the table's creation waits for its standbys to replay it before any node ID is handed out",
				"table", table, "wal_position", lsn, "standbys", labels)
		})
	}, nil)
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("table %s was created asynchronously and hands out no node ID until every standby has replayed its creation", table)
	var hidden *admin.HiddenStandbyError
	switch {
	case errors.As(err, &hidden):
		return fmt.Errorf("%w: %s, and %w: grant that, or confirm the creation with nodeid init --table %s", ErrCreationPending, what, err, table)
	case errors.Is(err, admin.ErrServerChanged):
		// The standbys were read on a standby, twice (a pooler that sends
		// reads to one): their positions say nothing of the primary's.
		return fmt.Errorf("%w: %s, and %w; confirm the creation with nodeid init --table %s on a connection to the primary", ErrCreationPending, what, err, table)
	case wctx.Err() != nil:
		late := "the standbys"
		if b := behind.Load(); b != nil {
			late = *b
		}
		return fmt.Errorf("%w: %s; stopped waiting for %s, which have not replayed it (each a standby, or a replication slot kept for one, that may be promoted): %w",
			ErrCreationPending, what, late, context.Cause(wctx))
	}
	return err
}

// lateTimeout bounds each of the two steps of a claim whose caller stopped
// waiting for it (see bounded): the rest of the claim, then the release of
// what it claimed. Both together take no longer than ReleaseTimeout, about
// what Close waits for them before it cuts them, so that a Close that
// follows a failed Acquire cuts them only if both are that slow: a claim
// cut in flight may still commit, and its node ID then stays held until it
// expires.
const lateTimeout = ReleaseTimeout / 2

// releaseLate releases the claim res that committed after Acquire gave up
// on it: nothing was stamped under it, so the node ID's next holder may
// stamp right after the previous holder's horizon.
func (r *Registry) releaseLate(res admin.ClaimResult, err error) {
	if err == nil && res.OK {
		ctx, cancel := context.WithTimeout(r.stop, lateTimeout)
		defer cancel()
		if _, err := r.st.Release(ctx, res.Key, res.PrevHorizon); err != nil {
			r.cfg.logger.Warn("nodeid: the release of a claim whose Acquire gave up failed; the node ID frees up when its lease expires",
				"node_id", res.NodeID, "epoch", res.Epoch, "err", err)
		}
	}
}

// lease starts the lease of res, a claim sent at t0, and registers it.
func (r *Registry) lease(ctx context.Context, res admin.ClaimResult, t0 time.Time) (*Lease, error) {
	l := newLease(r, res.Claim, t0)
	r.metrics.held.Add(ctx, 1, r.attrs()) // until the lease ends (recordEnd)
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
	l.log.Debug("nodeid: acquired", "deadline_in", time.Until(l.Deadline()), "previous_horizon_ms", res.PrevHorizon,
		"generation", res.Generation)
	return l, nil
}

// refusal explains a claim that found no node ID.
func (r *Registry) refusal(why admin.Refusal) error {
	table := r.cfg.table.Table
	switch {
	case why.Unconfigured:
		return fmt.Errorf("nodeid: claim on table %s: %w", table, postgres.ErrUnconfigured)
	case why.RestorePending:
		return fmt.Errorf("%w: table %s is served by another server than the one it records (another system identifier: a dump restored elsewhere, an upgrade, a move), and no node ID is handed out until an operator declares the restore and the longest TTL any holder of the old history may hold: nodeid init --restored --max-ttl D --table %s",
			ErrRestorePending, table, table)
	case why.CreationPending:
		return fmt.Errorf("%w: table %s was created asynchronously and hands out no node ID until every standby has replayed its creation: nodeid init --table %s confirms it",
			ErrCreationPending, table, table)
	case why.TTLAbove: // the table's maximum was changed since ensure read it
		return &TableConfigError{Table: table, MinNode: r.lo, MaxNode: r.hi, TTL: r.cfg.ttl,
			TableMinNode: r.tableLo, TableMaxNode: r.tableHi, MaxTTL: why.MaxTTL}
	}
	e := &UnavailableError{Table: table, MinNode: r.lo, MaxNode: r.hi, Held: why.Held, NotYet: why.Cooling, Now: why.Now}
	if why.Cooling > 0 {
		e.Soonest, e.After, e.SetAt, e.Why = why.Soonest, time.UnixMilli(why.Until), why.SetAt, "horizon"
		switch {
		case why.Evicted:
			e.Why = "evicted"
		case why.Quarantined:
			e.Why = "quarantine"
		}
	}
	return e
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
// started and waits for them, within ReleaseTimeout in all. Claims in
// flight, those whose Acquire gave up and which go on in the background
// included, get until a tenth of ReleaseTimeout before that to finish and
// have what they claimed released, and are then cancelled. A statement
// still running in a driver that ignores its context after that is left to
// finish on its own, and reported in the error. Later Acquire calls return
// ErrClosed. It is idempotent; it returns the errors of releases that
// failed, not of leases that were already lost.
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

	ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
	defer cancel()
	errs := make([]error, len(leases)+1)
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() {
			if err := l.Release(ctx); !errors.Is(err, ErrLeaseLost) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	bgDone := make(chan struct{})
	go func() {
		r.bg.Wait()
		close(bgDone)
	}()
	deadline, _ := ctx.Deadline()
	cut := time.NewTimer(time.Until(deadline) - ReleaseTimeout/10)
	defer cut.Stop()
	select {
	case <-bgDone:
	case <-cut.C:
		// Late claims and their releases still running: cut them, and
		// leave them the rest of the time to return.
		r.halt()
		select {
		case <-bgDone:
		case <-ctx.Done():
			errs[len(leases)] = fmt.Errorf("nodeid: Close: statements still running in the driver after %s, which ignored their context", ReleaseTimeout)
		}
	}
	r.halt()
	r.metrics.unregister()
	return errors.Join(errs...)
}

// bounded runs f, a call into the driver, so that the caller waits no
// longer than ctx allows even if the driver ignores ctx. If ctx ends first,
// bounded returns at once with ctx's error, and f goes on in a goroutine
// that the Registry counts.
//
// abandoned is nil for a statement whose late commit leaves nothing for
// the Registry to undo: a read, the creation of the tables, a lease's
// renewal or release (which the lease's own Release settles). f then runs
// on ctx, whose end cuts it. Otherwise f is a claim, and
// abandoned gets its result when its caller stopped waiting, to release
// what it claimed. A claim must not be cut when ctx ends: the driver would
// drop the connection, and the server, which need not notice, would commit
// the claim all the same, leaving the node ID held for a TTL by a lease
// nobody has. So f runs on a context of its own, with ctx's values but not
// its end: once ctx has ended, f gets lateTimeout more, and Close may cut it
// sooner.
func bounded[T any](r *Registry, ctx context.Context, f func(context.Context) (T, error), abandoned func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if abandoned != nil {
		fctx, cancel = r.detach(ctx)
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		v, err := f(fctx)
		cancel()
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		if abandoned != nil {
			r.bg.Add(1)
			go func() {
				defer r.bg.Done()
				late := time.AfterFunc(lateTimeout, cancel)
				res := <-done
				late.Stop()
				abandoned(res.v, res.err)
			}()
		}
		var zero T
		return zero, context.Cause(ctx)
	}
}

// detach returns the context of a claim that must outlive ctx (see
// bounded): ctx's values, cancelled by cancel or by Close, not by ctx.
func (r *Registry) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(r.stop, cancel)
	return dctx, func() {
		unhook()
		cancel()
	}
}
