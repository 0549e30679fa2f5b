package snowflake

// End-to-end tests of the generator on leases from a real PostgreSQL
// (internal/testkit/pgtest). Each test gets a fresh database.

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newRegistry returns a registry of node ID 5 alone, with the shortest TTL,
// whose Acquire waits for the node ID to become claimable.
func newRegistry(t *testing.T, db *sql.DB, owner string) *nodeid.Registry {
	t.Helper()
	r, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithNodeRange(5, 5), nodeid.WithTTL(nodeid.MinTTL),
		nodeid.WithOwner(owner))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func acquire(t *testing.T, r *nodeid.Registry) *nodeid.Lease {
	t.Helper()
	l, err := r.Acquire(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func recordedHorizon(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var h int64
	if err := db.QueryRowContext(testContext(t), `SELECT horizon_ms FROM snowflake_nodes WHERE node_id = 5`).Scan(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// Reuse with a slower clock: holder A mints and releases; Release records
// A's exact last stamp, and the node ID is claimable once the database's
// clock has passed it. Holder B, whose clock runs 2 s behind, claims the
// same node ID: with a max wait below the skew it gets ErrClockBehind at
// once; with the default it waits, and its first ID is greater than A's
// last.
func TestReuseWithSlowerClock(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := testContext(t)
	const skew = 2 * time.Second
	slow := WithClock(func() time.Time { return time.Now().Add(-skew) })

	la := acquire(t, newRegistry(t, db, "holder-a"))
	ga, err := New(la)
	if err != nil {
		t.Fatal(err)
	}
	var lastA bw.ID
	for range 10_000 {
		if lastA, err = ga.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ga.Generate(); errors.Is(err, nodeid.ErrLeaseLost) || !errors.Is(err, nodeid.ErrReleased) {
		t.Fatalf("Generate after Release: %v", err)
	}
	lastMs := DefaultLayout.Decode(lastA).Ms
	if h := recordedHorizon(t, db); h != lastMs {
		t.Fatalf("Release recorded horizon %d; want A's last stamp %d", h, lastMs)
	}

	regB := newRegistry(t, db, "holder-b")
	lb := acquire(t, regB)
	if lb.NodeID() != la.NodeID() || lb.PreviousHorizon() != lastMs {
		t.Fatalf("B claimed node ID %d after horizon %d; want node ID %d after %d", lb.NodeID(), lb.PreviousHorizon(), la.NodeID(), lastMs)
	}
	impatient, err := New(lb, slow, WithMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := impatient.Generate(); !errors.Is(err, nodeid.ErrClockBehind) {
		t.Fatalf("B with a max wait below the skew: %v; want ErrClockBehind", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := recordedHorizon(t, db); h != lastMs {
		t.Fatalf("a release that minted nothing moved the horizon from %d to %d", lastMs, h)
	}

	lb = acquire(t, regB)
	gb, err := New(lb, slow)
	if err != nil {
		t.Fatal(err)
	}
	first, err := gb.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if first <= lastA || DefaultLayout.Decode(first).Ms <= lastMs {
		t.Fatalf("B's first ID %d (%+v) is not after A's last %d (%+v)", first, DefaultLayout.Decode(first), lastA, DefaultLayout.Decode(lastA))
	}
	if lb.Epoch() != la.Epoch()+2 {
		t.Fatalf("B's second claim has epoch %d; want %d", lb.Epoch(), la.Epoch()+2)
	}
	lastB := first
	for range 1000 {
		if lastB, err = gb.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h, want := recordedHorizon(t, db), DefaultLayout.Decode(lastB).Ms; h != want {
		t.Fatalf("B's release recorded %d; want its last stamp %d", h, want)
	}
}

// A holder whose lease the database expires early keeps minting until it
// learns of the loss at its next renewal; another holder takes the node ID
// over once the old horizon has passed. Every ID the old holder minted is
// stamped at or before the horizon the new holder received, so the two
// holders' IDs never meet. From the loss on, every Generate fails.
func TestTakeoverFencedByHorizon(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := testContext(t)

	old := acquire(t, newRegistry(t, db, "old-holder"))
	gOld, err := New(old)
	if err != nil {
		t.Fatal(err)
	}
	var (
		oldIDs  []bw.ID
		lostErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		for {
			id, err := gOld.Generate()
			if err != nil {
				lostErr = err
				return
			}
			oldIDs = append(oldIDs, id)
			time.Sleep(50 * time.Microsecond)
		}
	})

	time.Sleep(100 * time.Millisecond)
	if _, err := db.ExecContext(ctx, `UPDATE snowflake_nodes SET expires_at = now() - interval '1 second' WHERE node_id = 5`); err != nil {
		t.Fatal(err)
	}
	newer := acquire(t, newRegistry(t, db, "new-holder"))
	if newer.Epoch() != old.Epoch()+1 {
		t.Fatalf("takeover epoch %d; want %d", newer.Epoch(), old.Epoch()+1)
	}
	gNew, err := New(newer)
	if err != nil {
		t.Fatal(err)
	}
	first, err := gNew.Generate() // waits for the old holder's horizon
	if err != nil {
		t.Fatal(err)
	}

	wg.Wait()
	// The renewal finds the row expired, or, if the new holder was quicker,
	// taken over.
	if !errors.Is(lostErr, nodeid.ErrLeaseLost) || !errors.Is(lostErr, nodeid.ErrExpired) && !errors.Is(lostErr, nodeid.ErrTakenOver) {
		t.Fatalf("the old holder stopped with %v; want ErrLeaseLost and ErrExpired or ErrTakenOver", lostErr)
	}
	if _, err := gOld.Generate(); !errors.Is(err, nodeid.ErrLeaseLost) {
		t.Fatalf("Generate after the loss: %v", err)
	}
	if len(oldIDs) == 0 {
		t.Fatal("the old holder minted nothing")
	}
	last := oldIDs[len(oldIDs)-1]
	for _, id := range oldIDs {
		if ms := DefaultLayout.Decode(id).Ms; ms > newer.PreviousHorizon() {
			t.Fatalf("the old holder stamped %d, after the horizon %d the new holder got", ms, newer.PreviousHorizon())
		}
	}
	if first <= last {
		t.Fatalf("the new holder's first ID %d is not after the old holder's last %d", first, last)
	}
}

// Release while goroutines mint: the generator is sealed after the lease
// stops admitting IDs, every call after that fails, and the horizon
// recorded is exactly the latest stamp of any ID returned.
func TestReleaseWhileMinting(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	l := acquire(t, newRegistry(t, db, "releaser"))
	g, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	var maxMs atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				id, err := g.Generate()
				if err != nil {
					if !errors.Is(err, nodeid.ErrReleased) {
						t.Errorf("Generate: %v; want ErrReleased", err)
					}
					return
				}
				ms := DefaultLayout.Decode(id).Ms
				for m := maxMs.Load(); ms > m && !maxMs.CompareAndSwap(m, ms); m = maxMs.Load() {
				}
			}
		})
	}
	for maxMs.Load() == 0 {
		runtime.Gosched()
	}
	if err := l.Release(testContext(t)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if h := recordedHorizon(t, db); h != maxMs.Load() {
		t.Fatalf("Release recorded horizon %d; the latest stamp returned is %d", h, maxMs.Load())
	}
}
