package nodeid

import (
	"context"
	"sync"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// fakeStore models the lease table's statements in memory, with the bubble's
// clock (testing/synctest) as the server clock. Hooks replace a statement to
// inject failures and delays.
type fakeStore struct {
	mu      sync.Mutex
	rows    map[int64]*fakeRow
	lo, hi  int64
	latency time.Duration // added before every statement answers

	claimHook   func(ctx context.Context) (admin.Claim, bool, error)
	maxTTL      time.Duration // recorded; 0 means the maximum
	quarantine  time.Time     // rows not held are not claimable before it, as after a failover
	renewHook   func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error)
	releaseHook func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error)

	calls []fakeCall
}

type fakeRow struct {
	owner   string
	epoch   int64
	expires time.Time // zero: free
	horizon int64
	ended   string // the end reason of the claim of epoch, if it ended
}

type fakeCall struct {
	op      string
	at      time.Time // when the statement was sent
	key     admin.Key
	horizon int64
	exact   bool
}

func newFakeStore(lo, hi int64) *fakeStore {
	f := &fakeStore{rows: map[int64]*fakeRow{}, lo: lo, hi: hi}
	for n := lo; n <= hi; n++ {
		f.rows[n] = &fakeRow{}
	}
	return f
}

// set changes the store's hooks or fields while its users run.
func (f *fakeStore) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
}

func (f *fakeStore) hooks() (
	func(context.Context) (admin.Claim, bool, error),
	func(context.Context, admin.Key, int) (admin.Outcome, error),
	func(context.Context, admin.Key, int) (admin.Outcome, error),
) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claimHook, f.renewHook, f.releaseHook
}

func (f *fakeStore) record(op string, k admin.Key, horizon int64, exact bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{op: op, at: time.Now(), key: k, horizon: horizon, exact: exact})
	n := 0
	for _, c := range f.calls {
		if c.op == op {
			n++
		}
	}
	return n
}

func (f *fakeStore) callsOf(op string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeStore) wait(ctx context.Context) error {
	f.mu.Lock()
	latency := f.latency
	f.mu.Unlock()
	if latency == 0 {
		return nil
	}
	select {
	case <-time.After(latency):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeStore) Create(ctx context.Context, maxTTL time.Duration) (bool, error) {
	f.record("create", admin.Key{}, maxTTL.Milliseconds(), false)
	return false, f.wait(ctx)
}

func (f *fakeStore) ReadConfig(ctx context.Context) (admin.TableConfig, error) {
	f.record("config", admin.Key{}, 0, false)
	if err := f.wait(ctx); err != nil {
		return admin.TableConfig{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	maxTTL := f.maxTTL
	if maxTTL == 0 {
		maxTTL = MaxTTL
	}
	return admin.TableConfig{MinNode: f.lo, MaxNode: f.hi, MaxTTL: maxTTL, Replication: admin.Async, Generation: 1}, nil
}

func (f *fakeStore) CheckReplication(ctx context.Context) error { return nil }

func (f *fakeStore) CheckSchema(ctx context.Context) error {
	f.record("check", admin.Key{}, 0, false)
	return nil
}

func (f *fakeStore) PruneHistory(ctx context.Context, olderThan time.Duration) (int64, error) {
	f.record("prune", admin.Key{}, olderThan.Milliseconds(), false)
	return 0, nil
}

func (f *fakeStore) Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (admin.ClaimResult, error) {
	f.record("claim", admin.Key{Owner: owner}, horizonMs, false)
	if hook, _, _ := f.hooks(); hook != nil {
		c, ok, err := hook(ctx)
		return admin.ClaimResult{Claim: c, OK: ok}, err
	}
	if err := f.wait(ctx); err != nil {
		return admin.ClaimResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	why := admin.Refusal{Now: now}
	for n := lo; n <= hi; n++ {
		r := f.rows[n]
		switch {
		case !r.expires.IsZero() && !r.expires.Before(now):
			why.Held++
		case r.horizon >= now.UnixMilli():
			why.Cooling++
		case now.Before(f.quarantine):
			if why.Cooling == 0 {
				why.Soonest, why.Until, why.Quarantined = n, f.quarantine.UnixMilli(), true
			}
			why.Cooling++
		default:
			prev := r.horizon
			r.owner, r.epoch, r.expires, r.ended = owner, r.epoch+1, now.Add(ttl), ""
			r.horizon = max(r.horizon, min(horizonMs, now.Add(ttl).UnixMilli()))
			return admin.ClaimResult{OK: true, Claim: admin.Claim{
				Key:     admin.Key{NodeID: n, Owner: owner, Epoch: r.epoch},
				Expires: r.expires, Now: now, PrevHorizon: prev, Horizon: r.horizon, Generation: 1,
			}}, nil
		}
	}
	return admin.ClaimResult{Refusal: why}, nil
}

func (f *fakeStore) Renew(ctx context.Context, k admin.Key, ttl time.Duration, horizonMs int64) (admin.Outcome, error) {
	n := f.record("renew", k, horizonMs, false)
	if _, hook, _ := f.hooks(); hook != nil {
		return hook(ctx, k, n)
	}
	if err := f.wait(ctx); err != nil {
		return admin.Outcome{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	r := f.rows[k.NodeID]
	o := admin.Outcome{Now: now, Exists: true, Owner: r.owner, Epoch: r.epoch}
	if r.owner == k.Owner && r.epoch == k.Epoch && !r.expires.IsZero() && !r.expires.Before(now) {
		r.expires, r.horizon = now.Add(ttl), max(r.horizon, min(horizonMs, now.Add(ttl).UnixMilli()))
		o.OK, o.Expires, o.Horizon = true, r.expires, r.horizon
	}
	return o, nil
}

func (f *fakeStore) Release(ctx context.Context, k admin.Key, exactMs int64) (admin.Outcome, error) {
	n := f.record("release", k, exactMs, exactMs != admin.NoHorizon)
	if _, _, hook := f.hooks(); hook != nil {
		return hook(ctx, k, n)
	}
	if err := f.wait(ctx); err != nil {
		return admin.Outcome{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	r := f.rows[k.NodeID]
	o := admin.Outcome{Now: now, Exists: true, Owner: r.owner, Epoch: r.epoch}
	if r.owner == k.Owner && r.epoch == k.Epoch && !r.expires.IsZero() && !r.expires.Before(now) {
		r.owner, r.expires, r.ended = "", time.Time{}, "released"
		if exactMs != admin.NoHorizon {
			r.horizon = exactMs
		}
		o.OK, o.Horizon = true, r.horizon
	}
	if r.epoch == k.Epoch {
		o.EndReason = admin.EndReason(r.ended)
	}
	return o, nil
}

// row returns a copy of node's row.
func (f *fakeStore) row(node int64) fakeRow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.rows[node]
}
