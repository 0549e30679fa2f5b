package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// A renewal or a release that waited for an eviction of its lease to
// commit changes nothing: its conditions are tested again on the row the
// eviction wrote, and the statement that says why finds the eviction. A
// renewal that tested them on the row as its snapshot had it would renew
// an evicted lease.
func TestRenewalAndReleaseWaitingForAnEvictionChangeNothing(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	s, err := New(db, Config{Table: "waits", MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	for node, op := range []string{"renew", "release"} {
		t.Run(op, func(t *testing.T) {
			c, err := s.Claim(ctx, int64(node), int64(node), "holder", time.Hour, time.Now().UnixMilli())
			if err != nil || !c.OK {
				t.Fatalf("claim of node %d: %+v, %v", node, c, err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var status string
			var horizon, expires, now any
			if err := tx.QueryRowContext(ctx, s.evictSQL, c.NodeID, c.Epoch, int64(5000)).Scan(&status, &horizon, &expires, &now); err != nil || status != "ok" {
				t.Fatalf("eviction in a transaction: %q, %v", status, err)
			}
			type result struct {
				o   Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				var r result
				if op == "renew" {
					r.o, r.err = s.Renew(ctx, c.Key, time.Hour, time.Now().UnixMilli())
				} else {
					r.o, r.err = s.Release(ctx, c.Key, NoHorizon)
				}
				done <- r
			}()
			testkit.Until(t, time.Minute, "the "+op+" waits for the eviction's row lock", func() error {
				var waiting int
				if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE query LIKE '-- nodeid `+op+`%' AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
					return testkit.Stop(err)
				}
				if waiting == 0 {
					return errors.New("no " + op + " waits on a lock")
				}
				return nil
			})
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.o.OK || !r.o.Exists || r.o.Owner != "" || r.o.Epoch != c.Epoch || r.o.EndReason != EndEvicted {
				t.Errorf("%s of an evicted lease: %+v, want not OK, the row of epoch %d with no owner, ended %q", op, r.o, c.Epoch, EndEvicted)
			}
		})
	}
}

// A renewal never lowers the expiry. A renewal whose attempt the holder
// gave up on may commit after a later attempt did, with the now() of its
// own transaction, which began first: setting the expiry from it would end
// the lease in the database before the deadline the holder keeps from the
// later renewal.
func TestALateRenewalLowersNoExpiry(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	s, err := New(db, Config{Table: "late", MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	const ttl = time.Minute
	c, err := s.Claim(ctx, 0, 0, "holder", ttl, time.Now().UnixMilli())
	if err != nil || !c.OK {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	// The first attempt's transaction begins: its now() is fixed.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var began time.Time
	if err := tx.QueryRowContext(ctx, `SELECT now()`).Scan(&began); err != nil {
		t.Fatal(err)
	}
	// The second attempt runs once the server's clock has moved on.
	for {
		var later bool
		if err := db.QueryRowContext(ctx, `SELECT clock_timestamp() > $1::timestamptz + interval '200 ms'`, began).Scan(&later); err != nil {
			t.Fatal(err)
		}
		if later {
			break
		}
	}
	second, err := s.Renew(ctx, c.Key, ttl, time.Now().UnixMilli())
	if err != nil || !second.OK {
		t.Fatalf("the second renewal: %+v, %v", second, err)
	}
	// The first attempt's statement runs now, in its old transaction.
	var expires time.Time
	var horizon int64
	var now time.Time
	if err := tx.QueryRowContext(ctx, `SELECT expires_at, until_ms, now FROM late_renew($1, $2, $3, $4, $5)`,
		c.NodeID, c.Owner, c.Epoch, ttl.Milliseconds(), time.Now().UnixMilli()).Scan(&expires, &horizon, &now); err != nil {
		t.Fatalf("the late renewal: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := db.QueryRowContext(ctx, `SELECT expires_at FROM late WHERE node_id = 0`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got.Before(second.Expires) {
		t.Errorf("the late renewal (begun %s) set the expiry to %s, %s before the later renewal's %s",
			began.Format(time.StampMilli), got.Format(time.StampMilli), second.Expires.Sub(got), second.Expires.Format(time.StampMilli))
	}
}
