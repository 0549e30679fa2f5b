package nodeid

// Unit tests of the timing rules of a lease, on a fake store inside
// testing/synctest bubbles: time is virtual, so the tests assert exact
// instants without sleeping.

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid/admin"
)

const testTTL = 30 * time.Second

func fakeRegistry(t *testing.T, st *fakeStore, opts ...Option) *Registry {
	t.Helper()
	cfg := defaultConfig()
	cfg.owner = "me"
	cfg.ttl = testTTL
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			t.Fatal(err)
		}
	}
	cfg.table.MinNode, cfg.table.MaxNode = st.lo, st.hi
	return newRegistry(cfg, st)
}

func mustAcquire(t *testing.T, r *Registry) *Lease {
	t.Helper()
	l, err := r.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Renewals start every TTL/3 from the start of the last successful one,
// record the horizon t0 + TTL, and set the deadline from the time read
// before the statement was sent (invariant 4), however slow the answer.
func TestRenewCadenceAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 9)
		st.latency = 700 * time.Millisecond
		r := fakeRegistry(t, st)
		defer r.Close()
		t0 := time.Now()
		l := mustAcquire(t, r)
		// The claim was sent at claimAt (after the set-up's latency) and
		// answered a latency later; the server granted the TTL from its
		// now(): the deadline counts from the sending.
		claimAt := st.callsOf("claim")[0].at
		if claimAt.Sub(t0) != st.latency || time.Since(claimAt) != st.latency {
			t.Fatalf("claim sent at t0%+v, answered at t0%+v", claimAt.Sub(t0), time.Since(t0))
		}
		if want := claimAt.Add(testTTL - testTTL/10); !l.Deadline().Equal(want) {
			t.Fatalf("deadline after claim = %v, want claim sent + TTL - TTL/10 = %v", l.Deadline(), want)
		}
		time.Sleep(95 * time.Second)
		synctest.Wait()
		renews := st.callsOf("renew")
		if len(renews) != 9 {
			t.Fatalf("%d renewals in 95s, want 9 (one every TTL/3 = 10s)", len(renews))
		}
		for i, c := range renews {
			want := claimAt.Add(time.Duration(i+1) * testTTL / 3)
			if !c.at.Equal(want) {
				t.Errorf("renewal %d at %v, want %v", i, c.at.Sub(t0), want.Sub(t0))
			}
			if wantH := c.at.UnixMilli() + testTTL.Milliseconds(); c.horizon != wantH {
				t.Errorf("renewal %d recorded horizon %d, want t0+TTL = %d", i, c.horizon, wantH)
			}
		}
		last := renews[len(renews)-1].at
		if want := last.Add(testTTL - testTTL/10); !l.Deadline().Equal(want) {
			t.Errorf("deadline = %v after the last renewal, want %v", l.Deadline().Sub(last), testTTL-testTTL/10)
		}
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// A failed renewal is retried after TTL/30 ±50% until one succeeds.
func TestRenewRetriesTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		failures := 4
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				if n <= failures {
					return admin.Outcome{}, io.ErrUnexpectedEOF
				}
				st.set(func() { st.renewHook = nil })
				return st.Renew(ctx, k, testTTL, 0)
			}
		})
		// The first renewal comes at TTL/3 and each retry within TTL/20, so
		// the success comes by TTL/3 + 4·TTL/20 < 0.6·TTL, and the next
		// renewal, TTL/3 after it, later than that.
		time.Sleep(testTTL * 6 / 10)
		synctest.Wait()
		renews := st.callsOf("renew")
		if len(renews) != failures+2 { // the hook re-enters Renew once
			t.Fatalf("%d renew calls, want %d failures and one success", len(renews), failures)
		}
		for i := 1; i < failures+1; i++ {
			gap := renews[i].at.Sub(renews[i-1].at)
			if lo, hi := testTTL/60, testTTL/20; gap < lo || gap >= hi {
				t.Errorf("retry %d after %s, want within [%s, %s)", i, gap, lo, hi)
			}
		}
		if l.Err() != nil {
			t.Fatalf("lease lost despite a successful retry: %v", l.Err())
		}
		if want := renews[failures].at.Add(testTTL - testTTL/10); !l.Deadline().Equal(want) {
			t.Errorf("deadline not moved by the successful retry")
		}
	})
}

// With a database that never answers (but honours cancellation), Lost
// closes exactly at the deadline; each attempt is abandoned after TTL/5.
func TestLostAtDeadlineWhenDatabaseHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		deadline := l.Deadline()
		var (
			mu    sync.Mutex
			ended []time.Duration
		)
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				start := time.Now()
				<-ctx.Done()
				mu.Lock()
				defer mu.Unlock()
				ended = append(ended, time.Since(start))
				return admin.Outcome{}, ctx.Err()
			}
		})
		<-l.Done()
		if !time.Now().Equal(deadline) {
			t.Fatalf("Lost closed at deadline%+v", time.Now().Sub(deadline))
		}
		if !errors.Is(l.Err(), ErrLeaseLost) || !errors.Is(l.Err(), ErrExpired) {
			t.Fatalf("Err = %v, want ErrLeaseLost and ErrExpired", l.Err())
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(ended) < 2 {
			t.Fatalf("%d attempts before the deadline, want at least 2", len(ended))
		}
		for i, d := range ended[:len(ended)-1] {
			if d != testTTL/5 {
				t.Errorf("attempt %d gave up after %s, want TTL/5 = %s", i, d, testTTL/5)
			}
		}
		if err := check(l, time.Now().Add(-time.Nanosecond), 0); !errors.Is(err, ErrExpired) {
			t.Errorf("Check after Lost = %v", err)
		}
	})
}

// A statement that ignores cancellation does not hold Lost open past the
// deadline, and its late success does not revive the lease.
func TestLostAtDeadlineEvenIfDriverIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		l := mustAcquire(t, r)
		deadline := l.Deadline()
		unblock := make(chan struct{})
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				<-unblock // deaf to ctx
				st.set(func() { st.renewHook = nil })
				return st.Renew(context.Background(), k, testTTL, 0)
			}
		})
		<-l.Done()
		if !time.Now().Equal(deadline) {
			t.Fatalf("Lost closed at deadline%+v", time.Now().Sub(deadline))
		}
		// The row has not expired in the database yet, so the late renewal
		// succeeds there; the lease must stay lost all the same.
		close(unblock)
		synctest.Wait()
		if !l.Deadline().Equal(deadline) {
			t.Errorf("a renewal after the deadline moved it by %s", l.Deadline().Sub(deadline))
		}
		if err := check(l, time.Now().Add(-time.Hour), 0); !errors.Is(err, ErrExpired) {
			t.Errorf("Check of a lapsed lease = %v, want ErrExpired", err)
		}
		if err := NewFence(l).Bind(func() int64 { return 0 }); !errors.Is(err, ErrExpired) {
			t.Errorf("Bind on a lapsed lease = %v", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A renewal that changes nothing ends the lease at once, with the cause the
// row shows.
func TestZeroRowsClosesLostAtOnceWithCause(t *testing.T) {
	for _, c := range []struct {
		name   string
		row    func(k admin.Key) admin.Outcome // what the renewal reports
		change func(r *fakeRow, now time.Time) // the same change to the fake's row, if any
		want   error
	}{
		{"taken over", func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: "other", Epoch: k.Epoch + 1}
		}, nil, ErrTakenOver},
		{"evicted", func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: "", Epoch: k.Epoch, EndReason: "evicted"}
		}, nil, ErrEvicted},
		{"evicted after it lapsed", func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: "", Epoch: k.Epoch, EndReason: "expired"}
		}, func(r *fakeRow, _ time.Time) { r.owner, r.expires, r.ended = "", time.Time{}, "expired" }, ErrExpired},
		{"expired", func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: k.Owner, Epoch: k.Epoch}
		}, func(r *fakeRow, now time.Time) { r.expires = now.Add(-time.Millisecond) }, ErrExpired},
		{"claim lost in a failover", func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: "", Epoch: k.Epoch - 1, EndReason: "released"}
		}, nil, ErrFailover},
		{"row gone", func(k admin.Key) admin.Outcome { return admin.Outcome{} }, nil, ErrTakenOver},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newFakeStore(0, 0)
				r := fakeRegistry(t, st)
				defer r.Close()
				l := mustAcquire(t, r)
				st.set(func() {
					st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
						o := c.row(k)
						o.Now = time.Now()
						if c.change != nil {
							st.set(func() { c.change(st.rows[k.NodeID], o.Now) })
						}
						return o, nil
					}
				})
				start := time.Now()
				<-l.Done()
				if got := time.Since(start); got != testTTL/3 {
					t.Errorf("Lost closed %s after the claim, want at the first renewal (%s)", got, testTTL/3)
				}
				if !errors.Is(l.Err(), ErrLeaseLost) || !errors.Is(l.Err(), c.want) {
					t.Errorf("Err = %v, want %v", l.Err(), c.want)
				}
				for _, other := range []error{ErrTakenOver, ErrReleased, ErrExpired, ErrEvicted, ErrFailover} {
					if other != c.want && errors.Is(l.Err(), other) {
						t.Errorf("Err = %v also matches %v", l.Err(), other)
					}
				}
				if err := l.Release(context.Background()); !errors.Is(err, c.want) {
					t.Errorf("Release = %v, want %v", err, c.want)
				}
				releases := len(st.callsOf("release"))
				if c.want == ErrExpired {
					if releases != 1 {
						t.Errorf("Release after an expiry made %d calls, want 1 (the row may still be ours)", releases)
					}
				} else if releases != 0 {
					t.Errorf("Release after %s touched the database", c.name)
				}
			})
		})
	}
}

func TestCheckRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		t0 := time.Now()
		l := mustAcquire(t, r)
		horizon := t0.UnixMilli() + testTTL.Milliseconds()
		d := l.Deadline()
		for _, c := range []struct {
			now  time.Time
			ms   int64
			want error
		}{
			{d.Add(-time.Nanosecond), horizon, nil},
			{d, horizon, ErrExpired},
			{d.Add(time.Hour), 0, ErrExpired},
			{t0, horizon + 1, ErrClockAhead},
		} {
			if err := check(l, c.now, c.ms); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("Check(deadline%+v, horizon%+d) = %v, want %v", c.now.Sub(d), c.ms-horizon, err, c.want)
			}
			// Fence.Check, the generator's form, draws the same line.
			if err := NewFence(l).Check(c.now.Sub(NewFence(l).Base()), c.ms); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("Check(deadline%+v, horizon%+d) = %v, want %v", c.now.Sub(d), c.ms-horizon, err, c.want)
			}
		}
		if b := NewFence(l).Base(); b.After(time.Now()) || b.Before(t0) {
			t.Errorf("Base %v is not the time of the claim (from %v)", b, t0)
		}
		// After a renewal the line moves with the deadline.
		time.Sleep(testTTL / 3)
		synctest.Wait()
		d2 := l.Deadline()
		if !d2.After(d) {
			t.Fatalf("the renewal did not move the deadline %v", d)
		}
		for _, at := range []time.Time{d, d2.Add(-time.Nanosecond)} {
			if err := NewFence(l).Check(at.Sub(NewFence(l).Base()), 0); err != nil {
				t.Errorf("Check(renewed deadline%+v) = %v, want nil", at.Sub(d2), err)
			}
		}
		if err := NewFence(l).Check(d2.Sub(NewFence(l).Base()), 0); !errors.Is(err, ErrExpired) {
			t.Errorf("Check(renewed deadline) = %v, want ErrExpired", err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			_ = check(l, t0, horizon)
			_ = check(l, d2, horizon)
			_ = check(l, t0, 1<<60)
			_ = NewFence(l).Check(0, horizon)
		})
		if allocs != 0 {
			t.Errorf("Check allocates %.1f times per call", allocs)
		}
	})
}

// Release closes the fence first, then seals every bound generator, and
// records the highest stamp (never below the previous horizon) as exact.
func TestReleaseSealsThenRecordsExactHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 1)
		st.rows[0].horizon = 1000 // left by an earlier holder
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		if l.PreviousHorizon() != 1000 {
			t.Fatalf("PreviousHorizon = %d", l.PreviousHorizon())
		}
		var sealedWhileOpen bool
		seal := func(ms int64) func() int64 {
			return func() int64 {
				if check(l, time.Now(), 0) == nil {
					sealedWhileOpen = true
				}
				return ms
			}
		}
		if err := NewFence(l).Bind(seal(9000)); err != nil {
			t.Fatal(err)
		}
		if err := NewFence(l).Bind(seal(12000)); err == nil || !strings.Contains(err.Error(), "already has a generator") {
			t.Fatalf("a second Bind on one lease = %v, want a refusal", err)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if sealedWhileOpen {
			t.Error("a generator was sealed while the lease still admitted IDs")
		}
		rel := st.callsOf("release")
		if len(rel) != 1 || !rel[0].exact || rel[0].horizon != 9000 {
			t.Fatalf("release calls = %+v, want one with exact horizon 9000", rel)
		}

		// The next holder starts after that horizon; if its generators
		// stamped nothing, its release keeps it.
		l2 := mustAcquire(t, r)
		if l2.PreviousHorizon() != 9000 {
			t.Fatalf("next holder's PreviousHorizon = %d, want 9000", l2.PreviousHorizon())
		}
		if err := NewFence(l2).Bind(func() int64 { return 0 }); err != nil {
			t.Fatal(err)
		}
		_ = l2.Release(context.Background())
		if rel := st.callsOf("release"); rel[1].horizon != 9000 || !rel[1].exact {
			t.Fatalf("release of an unused generator recorded %+v, want exact 9000", rel[1])
		}

		// Without a bound generator the horizon recorded at renewal stays.
		l3 := mustAcquire(t, r)
		_ = l3.Release(context.Background())
		if rel := st.callsOf("release"); rel[2].exact {
			t.Fatalf("release without generators claimed an exact horizon: %+v", rel[2])
		}
		if got := st.row(l3.NodeID()).horizon; got < time.Now().UnixMilli() {
			t.Errorf("row horizon %d lowered below the promise", got)
		}
	})
}

func TestReleaseStopsRenewalAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		time.Sleep(testTTL / 2) // one renewal
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := len(st.callsOf("renew"))
		time.Sleep(10 * testTTL)
		if got := len(st.callsOf("renew")); got != n {
			t.Errorf("%d renewals after Release", got-n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Errorf("second Release = %v", err)
		}
		if got := len(st.callsOf("release")); got != 1 {
			t.Errorf("%d release statements, want 1", got)
		}
		if !isClosed(l.Done()) || !errors.Is(l.Err(), ErrReleased) {
			t.Errorf("after Release: Done closed %v, Err %v", isClosed(l.Done()), l.Err())
		}
	})
}

// Release gives up after ReleaseTimeout even with a context that never ends,
// and retries a transient failure within that bound.
func TestReleaseBoundedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 1)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		st.set(func() {
			st.releaseHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				<-ctx.Done()
				return admin.Outcome{}, ctx.Err()
			}
		})
		start := time.Now()
		err := l.Release(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != ReleaseTimeout {
			t.Fatalf("hung Release returned %v after %s, want a timeout after %s", err, time.Since(start), ReleaseTimeout)
		}

		l2 := mustAcquire(t, r)
		st.set(func() {
			st.releaseHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				if n == 2 { // the first attempt for l2 fails, after releasing
					st.set(func() { st.releaseHook = nil })
					st.Release(ctx, k, admin.NoHorizon)
					return admin.Outcome{}, io.ErrUnexpectedEOF
				}
				return st.Release(ctx, k, admin.NoHorizon)
			}
		})
		if err := l2.Release(context.Background()); err != nil {
			t.Fatalf("Release after an ambiguous transient failure = %v, want nil", err)
		}
		if !st.row(l2.NodeID()).expires.IsZero() {
			t.Error("row not freed")
		}
	})
}

func TestCloseReleasesEveryLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 9)
		r := fakeRegistry(t, st)
		var leases []*Lease
		for range 5 {
			leases = append(leases, mustAcquire(t, r))
		}
		if err := leases[0].Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			if !isClosed(l.Done()) || !st.row(l.NodeID()).expires.IsZero() {
				t.Errorf("lease %d not released by Close", l.NodeID())
			}
		}
		if got := len(st.callsOf("release")); got != 5 {
			t.Errorf("%d release statements, want 5", got)
		}
		if err := r.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
		if _, err := r.Acquire(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("Acquire after Close = %v, want ErrClosed", err)
		}
		// synctest.Test fails if any goroutine of the bubble is left.
	})
}

func TestAcquireWaitsForAFreeNodeID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		holder := fakeRegistry(t, st)
		held := mustAcquire(t, holder)

		plain := fakeRegistry(t, st)
		if _, err := plain.TryAcquire(context.Background()); !errors.Is(err, ErrNoNodeIDAvailable) {
			t.Fatalf("Acquire on a full range = %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		waiting := fakeRegistry(t, st)
		_, err := waiting.Acquire(ctx)
		if !errors.Is(err, ErrNoNodeIDAvailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting Acquire past its context = %v, want both ErrNoNodeIDAvailable and the deadline", err)
		}

		released := time.Now().Add(7 * time.Second)
		go func() {
			time.Sleep(time.Until(released))
			NewFence(held).Bind(func() int64 { return 0 }) // nothing stamped: the horizon stays
			held.Release(context.Background())
		}()
		before := len(st.callsOf("claim"))
		l, err := waiting.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if late := time.Since(released); late > 3*waitMax/2 {
			t.Errorf("claimed %s after the release, want within the backoff cap", late)
		}
		claims := st.callsOf("claim")[before:]
		for i := 1; i < len(claims); i++ {
			if gap := claims[i].at.Sub(claims[i-1].at); gap > 3*waitMax/2 || gap < waitMin/2 {
				t.Errorf("poll %d after %s, outside [%s, %s]", i, gap, waitMin/2, 3*waitMax/2)
			}
		}
		if l.Epoch() != 2 {
			t.Errorf("epoch %d", l.Epoch())
		}
		for _, r := range []*Registry{holder, plain, waiting} {
			r.Close()
		}
	})
}

func TestAcquireChecksContextFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire with a cancelled context = %v", err)
		}
		if len(st.calls) != 0 {
			t.Errorf("a cancelled Acquire made %d statements", len(st.calls))
		}
	})
}

// A claim answered after its own deadline is useless: Acquire says so and
// releases the row.
func TestClaimSlowerThanTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		st.latency = testTTL
		r := fakeRegistry(t, st)
		defer r.Close()
		_, err := r.Acquire(context.Background())
		if !errors.Is(err, ErrExpired) {
			t.Fatalf("slow claim = %v, want ErrExpired", err)
		}
		if len(st.callsOf("release")) != 1 {
			t.Error("the row of a slow claim was not released")
		}
	})
}

// A Release after the deadline, before the deadline's timer has fired,
// reports the expiry, not a release.
func TestReleaseAfterDeadlineReportsExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				<-ctx.Done() // no renewal moves the deadline
				return admin.Outcome{}, ctx.Err()
			}
		})
		l.mu.Lock()
		l.timer.Stop() // the timer is late, as on an overloaded machine
		l.mu.Unlock()
		time.Sleep(time.Until(l.Deadline()) + time.Millisecond)
		if isClosed(l.Done()) {
			t.Fatal("Lost closed without its timer")
		}
		_ = l.Release(context.Background())
		if !errors.Is(l.Err(), ErrExpired) || errors.Is(l.Err(), ErrReleased) {
			t.Fatalf("Err = %v, want the expiry", l.Err())
		}
	})
}

// check is Fence.Check at time now, which carries the monotonic clock.
func check(l *Lease, now time.Time, ms int64) error {
	m := NewFence(l)
	return m.Check(now.Sub(m.Base()), ms)
}
