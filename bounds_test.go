package nodeid

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// deaf makes every statement of the fake wait for unblock, ignoring its
// context, as a driver that does not honour cancellation would; then it
// runs as the fake does.
type deaf struct {
	st      *fakeStore
	unblock chan struct{}
}

func newDeaf(st *fakeStore) *deaf { return &deaf{st: st, unblock: make(chan struct{})} }

func (d *deaf) claims(on bool) {
	d.st.set(func() {
		d.st.claimHook = nil
		if on {
			d.st.claimHook = func(ctx context.Context) (admin.Claim, bool, error) {
				<-d.unblock
				d.st.set(func() { d.st.claimHook = nil })
				c, err := d.st.Claim(context.Background(), d.st.lo, d.st.hi, "me", testTTL, 0)
				ok := c.OK
				return c.Claim, ok, err
			}
		}
	})
}

func (d *deaf) releases() {
	d.st.set(func() {
		d.st.releaseHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
			<-d.unblock
			d.st.set(func() { d.st.releaseHook = nil })
			return d.st.Release(context.Background(), k, admin.NoHorizon)
		}
		d.st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
			<-d.unblock
			return admin.Outcome{}, io.ErrUnexpectedEOF
		}
	})
}

// Acquire returns when its context ends, whatever the driver does; a claim
// that commits after that is released, not left held.
func TestAcquireBoundedWhenDriverIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		d := newDeaf(st)
		d.claims(true)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := r.Acquire(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 1500*time.Millisecond {
			t.Fatalf("Acquire = %v after %s; want the context's deadline after 1.5s", err, time.Since(start))
		}
		time.Sleep(time.Minute) // the driver answers much later: the claim commits
		close(d.unblock)
		synctest.Wait()
		if row := st.row(0); row.epoch != 1 || !row.expires.IsZero() {
			t.Fatalf("the late claim left the row %+v; want it claimed (epoch 1) and released", row)
		}
		if len(st.callsOf("release")) != 1 {
			t.Errorf("%d releases of the late claim, want 1", len(st.callsOf("release")))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// Release and Close return within their context or ReleaseTimeout, whichever
// is first, whatever the driver does, and a late answer revives nothing.
func TestReleaseAndCloseBoundedWhenDriverIgnoresContext(t *testing.T) {
	for _, c := range []struct {
		name  string
		ctx   time.Duration // 0: context.Background()
		close bool
		want  time.Duration
	}{
		{"Release, no deadline", 0, false, ReleaseTimeout},
		{"Release, shorter deadline", time.Second, false, time.Second},
		{"Close", 0, true, ReleaseTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newFakeStore(0, 0)
				r := fakeRegistry(t, st)
				l := mustAcquire(t, r)
				// The first renewal hangs too, so that Release meets a renewal
				// stuck in the driver.
				d := newDeaf(st)
				d.releases()
				time.Sleep(testTTL/3 + time.Millisecond)
				ctx := context.Background()
				if c.ctx > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.ctx)
					defer cancel()
				}
				start := time.Now()
				var err error
				if c.close {
					err = r.Close()
				} else {
					err = l.Release(ctx)
				}
				if took := time.Since(start); took != c.want || err == nil {
					t.Fatalf("returned %v after %s; want an error after %s", err, took, c.want)
				}
				if !errors.Is(l.Err(), ErrReleased) {
					t.Errorf("Err = %v; want ErrReleased: nothing may be minted after Release", l.Err())
				}
				close(d.unblock)
				synctest.Wait()
				if !errors.Is(l.Err(), ErrReleased) {
					t.Errorf("after the driver answered, Err = %v; want ErrReleased", l.Err())
				}
				_ = r.Close()
			})
		})
	}
}

// A release's retry that finds the row freed at its own epoch tells its own
// earlier release (success) from an operator's eviction (the loss).
func TestReleaseRetryTellsEvictionFromItsOwnRelease(t *testing.T) {
	for _, c := range []struct {
		name   string
		first  func(st *fakeStore, k admin.Key) // what happened before the first attempt's answer was lost
		want   error
		reason string
	}{
		{"its own release", func(st *fakeStore, k admin.Key) {
			st.Release(context.Background(), k, admin.NoHorizon)
		}, nil, "released"},
		{"an operator's eviction", func(st *fakeStore, k admin.Key) {
			st.set(func() {
				r := st.rows[k.NodeID]
				r.owner, r.expires, r.ended = "", time.Time{}, "evicted"
			})
		}, ErrEvicted, "evicted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newFakeStore(0, 0)
				r := fakeRegistry(t, st)
				defer r.Close()
				l := mustAcquire(t, r)
				st.set(func() {
					st.releaseHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
						st.set(func() { st.releaseHook = nil })
						c.first(st, k)
						return admin.Outcome{}, io.ErrUnexpectedEOF // the answer is lost
					}
				})
				err := l.Release(context.Background())
				if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
					t.Fatalf("Release = %v, want %v", err, c.want)
				}
				if got := st.row(0).ended; got != c.reason {
					t.Errorf("the claim ended as %q, want %q", got, c.reason)
				}
			})
		})
	}
}
