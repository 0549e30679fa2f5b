package nodeid

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// A claim that the server commits after Acquire stopped waiting for it is
// released in the background, the first claim of a Registry (one statement
// with the configuration's checks) as every later one: the node ID is not
// held for a TTL by a lease nobody has. The claim waits in the server for
// a lock while its caller gives up, and the Registry reaches the server
// through a proxy that holds the traffic meanwhile, so that the server
// commits the claim before it can learn of anything the client did.
func TestAbandonedClaimIsReleased(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		first bool // the Registry's first claim
	}{
		{"first claim", true},
		{"later claim", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			ep := connect(t, "direct")
			db := ep.db
			proxy, err := pgtest.NewProxy(ep.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			viaProxy, err := sql.Open("pgx", pgtest.WithAddr(ep.dsn, proxy.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer viaProxy.Close()

			const node = 4
			opts := []Option{WithNodeRange(node, node), WithTTL(30 * time.Second), WithOwner("late-claimer")}
			var r *Registry
			if c.first {
				if err := newTestRegistry(t, db, WithNodeRange(node, node)).ensure(ctx); err != nil {
					t.Fatal(err)
				}
				r = newTestRegistry(t, viaProxy, append(opts, WithCreateTable(false))...)
			} else {
				r = newTestRegistry(t, viaProxy, opts...)
				if err := r.ensure(ctx); err != nil {
					t.Fatal(err)
				}
			}
			epoch := readRow(t, db, node).epoch

			// An uncommitted history row of the claim's epoch makes the
			// claim's insert into the history wait for this transaction.
			blocker, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Rollback()
			if _, err := blocker.ExecContext(ctx, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, generation)
				SELECT node_id, epoch + 1, 'blocker', now(), 0, claim_generation FROM snowflake_nodes WHERE node_id = $1`, node); err != nil {
				t.Fatal(err)
			}

			actx, cancel := context.WithCancel(ctx)
			defer cancel()
			type result struct {
				l   *Lease
				err error
			}
			done := make(chan result, 1)
			go func() {
				l, err := r.TryAcquire(actx)
				done <- result{l, err}
			}()
			testkit.Until(t, time.Minute, "the claim waits for the blocker's lock", testkit.True(func() bool {
				var n int
				err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
				return err == nil && n > 0
			}))
			proxy.Blackhole()
			cancel() // the caller gives up while the claim waits in the server
			var got result
			select {
			case got = <-done:
			case <-time.After(time.Minute):
				t.Fatal("TryAcquire did not return when its context ended")
			}
			if got.l != nil || !errors.Is(got.err, context.Canceled) {
				t.Fatalf("TryAcquire = %v, %v; want no lease and the context's error", got.l, got.err)
			}
			if err := blocker.Rollback(); err != nil { // the claim goes on and commits
				t.Fatal(err)
			}
			testkit.Until(t, time.Minute, fmt.Sprintf("the claim commits (epoch %d)", epoch+1), func() error {
				if row := readRow(t, db, node); row.epoch <= epoch {
					return fmt.Errorf("the row is %+v", row)
				}
				return nil
			})
			proxy.Restore()

			testkit.Until(t, time.Minute, fmt.Sprintf("the late claim (epoch %d) is released", epoch+1), func() error {
				if row := readRow(t, db, node); row.owner != "" || !row.free {
					return fmt.Errorf("the row is %+v", row)
				}
				return nil
			})
			var reason string
			if err := db.QueryRowContext(ctx, `SELECT owner || ' ' || end_reason FROM snowflake_nodes_history
				WHERE node_id = $1 AND epoch = $2`, node, epoch+1).Scan(&reason); err != nil {
				t.Fatal(err)
			}
			if reason != "late-claimer released" {
				t.Errorf("the late claim's history ended as %q, want %q", reason, "late-claimer released")
			}
			if err := r.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
}

// lostAnswer is the real store, except that the first release commits and
// then, before its answer comes back, runs meanwhile (another holder takes
// the node ID) and loses the answer, as a dropped connection would.
type lostAnswer struct {
	*admin.Store
	meanwhile func()
	releases  atomic.Int32
}

func (s *lostAnswer) Release(ctx context.Context, k admin.Key, exactMs int64) (admin.Outcome, error) {
	if s.releases.Add(1) > 1 {
		return s.Store.Release(ctx, k, exactMs)
	}
	if o, err := s.Store.Release(ctx, k, exactMs); err != nil || !o.OK {
		return o, err
	}
	s.meanwhile()
	return admin.Outcome{}, io.ErrUnexpectedEOF
}

// A release whose first attempt committed but whose answer was lost is a
// success, even when another holder has claimed the node ID before the
// retry: the history says the claim ended by its holder's release, whatever
// the row shows now.
func TestReleaseRetryAfterTakeoverOfReleasedNode(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	db, _ := pgtest.Shared(t).NewDB(t)
	const node = 6
	opts := []Option{WithCreateTable(true), WithNodeRange(node, node), WithTTL(30 * time.Second), WithOwner("releaser")}
	cfg, err := configure(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := admin.New(db, cfg.table)
	if err != nil {
		t.Fatal(err)
	}
	next := newTestRegistry(t, db, WithNodeRange(node, node), WithTTL(30*time.Second), WithOwner("next-holder"))
	if err := next.ensure(ctx); err != nil { // its claim is then one statement
		t.Fatal(err)
	}
	var taken *Lease
	wrapped := &lostAnswer{Store: st, meanwhile: func() {
		var err error
		if taken, err = next.TryAcquire(ctx); err != nil {
			t.Errorf("the next holder's claim after the release: %v", err)
		}
	}}
	r := newRegistry(cfg, wrapped)
	t.Cleanup(func() { _ = r.Close() })

	l := acquire(t, r)
	unused(t, l)
	err = l.Release(ctx)
	if n := wrapped.releases.Load(); n != 2 {
		t.Fatalf("%d release attempts, want 2: one whose answer was lost, and its retry", n)
	}
	if taken == nil {
		t.Fatal("the next holder claimed nothing")
	}
	if err != nil {
		t.Errorf("Release = %v; want nil: its first attempt released the lease", err)
	}
	if !errors.Is(l.Err(), ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased", l.Err())
	}
	if row := readRow(t, db, node); row.owner != "next-holder" || row.epoch != taken.Epoch() || taken.Epoch() <= l.Epoch() {
		t.Errorf("row %+v, next holder's epoch %d; want the next holder's claim above epoch %d", row, taken.Epoch(), l.Epoch())
	}
	var reason string
	if err := db.QueryRowContext(ctx, `SELECT end_reason FROM snowflake_nodes_history WHERE node_id = $1 AND epoch = $2`,
		node, l.Epoch()).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if reason != string(admin.EndReleased) {
		t.Errorf("the released claim's history ended as %q, want %q", reason, admin.EndReleased)
	}
	if err := taken.Err(); err != nil {
		t.Errorf("the next holder's lease: %v", err)
	}
}

// A claim whose caller stopped waiting goes on for lateTimeout more and is
// then cancelled; Close cuts, a tenth of ReleaseTimeout before its own
// bound, a claim still running for a caller who waits on, and leaves no
// goroutine behind.
func TestLateClaimBoundedAndCutByClose(t *testing.T) {
	for _, c := range []struct {
		name     string
		giveUp   time.Duration // when the caller stops waiting; 0: never
		closeAt  time.Duration // when Close is called
		cutAfter time.Duration // from the start, when the claim's context ends
	}{
		{"the caller gives up", time.Second, time.Second, time.Second + lateTimeout},
		{"Close cuts it", 0, time.Second, time.Second + ReleaseTimeout - ReleaseTimeout/10},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newFakeStore(0, 0)
				r := fakeRegistry(t, st)
				start := time.Now()
				var cutAfter time.Duration
				st.set(func() {
					st.claimHook = func(ctx context.Context) (admin.Claim, bool, error) {
						<-ctx.Done() // the server never answers; the driver honours ctx
						cutAfter = time.Since(start)
						return admin.Claim{}, false, ctx.Err()
					}
				})
				ctx := context.Background()
				if c.giveUp > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.giveUp)
					defer cancel()
				}
				acquired := make(chan error, 1)
				go func() {
					_, err := r.Acquire(ctx)
					acquired <- err
				}()
				time.Sleep(c.closeAt)
				synctest.Wait()
				closed := time.Now()
				if err := r.Close(); err != nil {
					t.Errorf("Close = %v", err)
				}
				if err := <-acquired; err == nil {
					t.Error("Acquire succeeded")
				}
				if cutAfter != c.cutAfter || time.Since(start) != c.cutAfter {
					t.Errorf("the claim was cut after %s and Close returned after %s (called after %s); want both after %s",
						cutAfter, time.Since(start), closed.Sub(start), c.cutAfter)
				}
				if n := len(st.callsOf("release")); n != 0 {
					t.Errorf("%d releases of a claim that claimed nothing", n)
				}
				// synctest.Test fails if any goroutine of the bubble is left.
			})
		})
	}
}
