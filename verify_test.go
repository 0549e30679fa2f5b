package nodeid

// Tests of Lease.Verify against a real PostgreSQL, directly and through
// PgBouncer in transaction pooling mode.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// verifiedWrite is the pattern Verify is for: in one transaction, Verify,
// write, commit; roll back if Verify fails.
func verifiedWrite(ctx context.Context, db *sql.DB, l *Lease, value string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := l.Verify(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes (node_id, epoch, value) VALUES ($1, $2, $3)`,
		l.NodeID(), l.Epoch(), value); err != nil {
		return err
	}
	return tx.Commit()
}

// writesOf returns how many rows of value were committed.
func writesOf(t *testing.T, db *sql.DB, value string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(testContext(t), `SELECT count(*) FROM fenced_writes WHERE value = $1`, value).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// verifyEndpoint connects by via to a new database that has the lease
// table, with node IDs 0-1, and a table for the writes to fence.
func verifyEndpoint(t *testing.T, via string) endpoint {
	t.Helper()
	ep := connect(t, via)
	ctx := testContext(t)
	st, err := admin.New(ep.db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.db.ExecContext(ctx, `CREATE TABLE fenced_writes (node_id integer, epoch bigint, value text)`); err != nil {
		t.Fatal(err)
	}
	return ep
}

// lapse makes the row of node expire, and its horizon pass, as time would
// for a holder that stopped renewing; a plain UPDATE of non-key columns, it
// does not wait for a verified transaction.
func lapse(t *testing.T, db *sql.DB, node int64) {
	t.Helper()
	if _, err := db.ExecContext(testContext(t), `UPDATE snowflake_nodes
		SET expires_at = statement_timestamp() - interval '1 ms', horizon_ms = 0 WHERE node_id = $1`, node); err != nil {
		t.Fatal(err)
	}
}

// endedWith checks that l has ended, with cause.
func endedWith(t *testing.T, l *Lease, cause error) {
	t.Helper()
	select {
	case <-l.Done():
	default:
		t.Fatalf("the lease is still held after Verify found it lost (%v)", cause)
	}
	if err := l.Err(); errors.Is(err, ErrLeaseLost) != (cause != ErrReleased) || !errors.Is(err, cause) {
		t.Fatalf("Err() = %v, want %v", err, cause)
	}
}

// A verified transaction commits while the lease is held; once the lease
// has ended, however it ended, Verify gives the cause, ends the lease
// locally, and the transaction commits nothing.
func TestVerifyFencesWrites(t *testing.T) {
	t.Parallel()
	evict := func(t *testing.T, ep endpoint, l *Lease) {
		st, err := admin.New(ep.db, admin.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := st.Evict(testContext(t), l.NodeID(), l.Epoch()); err != nil || !ev.OK {
			t.Fatalf("evict node %d epoch %d: %+v %v", l.NodeID(), l.Epoch(), ev, err)
		}
	}
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name  string
				end   func(t *testing.T, ep endpoint, l *Lease)
				cause error
			}{
				{"held", nil, nil},
				{"released", func(t *testing.T, _ endpoint, l *Lease) {
					if err := l.Release(testContext(t)); err != nil {
						t.Fatal(err)
					}
				}, ErrReleased},
				{"evicted", evict, ErrEvicted},
				{"taken over", func(t *testing.T, ep endpoint, l *Lease) {
					// The row lapses, as it would for a stopped holder
					// (its horizon passed too), and another takes it.
					lapse(t, ep.db, l.NodeID())
					other := mustAcquire(t, newTestRegistry(t, ep.db, WithNodeRange(0, 0), WithOwner("other")))
					if other.NodeID() != l.NodeID() || other.Epoch() != l.Epoch()+1 {
						t.Fatalf("the takeover got node %d epoch %d", other.NodeID(), other.Epoch())
					}
				}, ErrTakenOver},
				{"expired", func(t *testing.T, ep endpoint, l *Lease) { lapse(t, ep.db, l.NodeID()) }, ErrExpired},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					ep := verifyEndpoint(t, via)
					// Renewals every 20s: none comes between the end
					// and Verify.
					l := mustAcquire(t, newTestRegistry(t, ep.db, WithNodeRange(0, 1), WithTTL(time.Minute)))
					if tc.end != nil {
						tc.end(t, ep, l)
					}
					err := verifiedWrite(testContext(t), ep.db, l, tc.name)
					n := writesOf(t, ep.db, tc.name)
					if tc.cause == nil {
						if err != nil || n != 1 {
							t.Fatalf("a verified write of a held lease: %v, %d rows committed", err, n)
						}
						if l.Err() != nil {
							t.Fatalf("the lease ended: %v", l.Err())
						}
						return
					}
					var lost *EndError
					if !errors.Is(err, tc.cause) || !errors.As(err, &lost) || lost.NodeID != l.NodeID() || lost.Epoch != l.Epoch() {
						t.Fatalf("Verify = %v, want an *EndError of node %d epoch %d matching %v", err, l.NodeID(), l.Epoch(), tc.cause)
					}
					if n != 0 {
						t.Fatalf("%d rows committed after Verify failed", n)
					}
					endedWith(t, l, tc.cause)
				})
			}
		})
	}
}

// heldUntil is cond for testkit.Until, which stops waiting if the lease is
// lost first.
func heldUntil(l *Lease, cond func() bool) func() error {
	return func() error {
		select {
		case <-l.Done():
			return testkit.Stop(fmt.Errorf("the lease was lost (%v)", l.Err()))
		default:
		}
		return testkit.True(cond)()
	}
}

// The two phases of the row lock, so that either can fail: while a
// verified transaction is open the holder's renewals go on (its deadline
// moves) and a second Verify in it passes; then the lease ends (released,
// or lapsed) with the transaction still open, and a claim passes over the
// row to the next node ID; once the transaction has ended, a claim takes
// the row.
func TestVerifyHoldsTheRowUntilTheTransactionEnds(t *testing.T) {
	t.Parallel()
	for _, via := range vias {
		for _, ending := range []string{"released", "lapsed"} {
			t.Run(via+"/"+ending, func(t *testing.T) {
				t.Parallel()
				ep := verifyEndpoint(t, via)
				ctx := testContext(t)
				// Renewed every 8 s, each attempt bounded by 4.8 s, so
				// that a server loaded by the race detector and other
				// work beside it still renews before the deadline (at a
				// 12 s TTL, a run of CI under a load of 20 lost it);
				// the transaction's idle bound is the time left to the
				// lease's expiry at each Verify, so the test verifies
				// again after each renewal, as a holder whose transaction
				// lasts across renewals must.
				reg := newTestRegistry(t, ep.db, WithNodeRange(0, 1), WithTTL(24*time.Second))
				l := mustAcquire(t, reg)
				if l.NodeID() != 0 {
					t.Fatalf("first lease on node %d", l.NodeID())
				}
				// Nothing was minted: the release records the previous
				// holder's horizon, and the row is claimable at once.
				if err := NewFence(l).Bind(func() int64 { return 0 }); err != nil {
					t.Fatal(err)
				}
				tx, err := ep.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if err := l.Verify(ctx, tx); err != nil {
					t.Fatal(err)
				}

				// Phase 1: renewals are not held up by the transaction.
				d0 := l.Deadline()
				for i := range 2 {
					testkit.Until(t, 2*time.Minute, fmt.Sprintf("renewal %d past deadline %s", i+1, d0), heldUntil(l, func() bool { return l.Deadline().After(d0) }))
					d0 = l.Deadline()
					if err := l.Verify(ctx, tx); err != nil {
						t.Fatalf("Verify again in the transaction after renewal %d: %v", i+1, err)
					}
				}

				// Phase 2: the lease ends; the transaction still holds
				// the row.
				switch ending {
				case "released":
					if err := l.Release(ctx); err != nil {
						t.Fatalf("release while a verified transaction is open: %v", err)
					}
				case "lapsed":
					lapse(t, ep.db, 0)
				}
				other := newTestRegistry(t, ep.db, WithNodeRange(0, 1), WithOwner("other"))
				if o := mustAcquire(t, other); o.NodeID() != 1 {
					t.Fatalf("a claim while the transaction is open got node %d, want 1: it did not pass over the row", o.NodeID())
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes VALUES (0, $1, 'in the transaction')`, l.Epoch()); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				o := mustAcquire(t, other)
				if o.NodeID() != 0 || o.Epoch() != l.Epoch()+1 {
					t.Fatalf("the claim after the transaction got node %d epoch %d, want node 0 epoch %d", o.NodeID(), o.Epoch(), l.Epoch()+1)
				}
				if ending == "lapsed" { // its next renewal finds it lapsed, or taken over
					testkit.Until(t, 2*time.Minute, "the lapsed lease to be lost", heldUntil(o, func() bool { return l.Err() != nil }))
					if err := l.Err(); !errors.Is(err, ErrExpired) && !errors.Is(err, ErrTakenOver) {
						t.Fatalf("the lapsed lease ended with %v", err)
					}
				}
			})
		}
	}
}

// A holder that stops with a verified transaction open does not keep the
// node ID: the server ends the transaction once it has been idle for the
// time that was left to the lease's expiry, and a waiting claim takes the
// row.
func TestVerifyIdleBoundEndsAStuckTransaction(t *testing.T) {
	t.Parallel()
	ep := verifyEndpoint(t, "direct")
	ctx := testContext(t)
	// 6 s, not the shortest TTL: on a loaded machine a 3 s lease can reach
	// its deadline between Acquire and Bind.
	l := mustAcquire(t, newTestRegistry(t, ep.db, WithNodeRange(0, 0), WithTTL(6*time.Second)))
	if err := NewFence(l).Bind(func() int64 { return 0 }); err != nil {
		t.Fatal(err)
	}
	tx, err := ep.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := l.Verify(ctx, tx); err != nil {
		t.Fatal(err)
	}
	// The holder stops: nothing more is sent in the transaction, and its
	// lease ends (here, released, so that only the transaction holds the
	// row).
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := newTestRegistry(t, ep.db, WithNodeRange(0, 0), WithOwner("other")).Acquire(ctx)
	if err != nil {
		t.Fatalf("the waiting claim: %v", err)
	}
	if o.NodeID() != 0 || o.Epoch() != l.Epoch()+1 {
		t.Fatalf("claimed node %d epoch %d", o.NodeID(), o.Epoch())
	}
	_, err = tx.ExecContext(ctx, `SELECT 1`)
	if code := postgres.SQLSTATE(err); code != "25P03" {
		t.Fatalf("the stuck transaction's next statement: %v (SQLSTATE %q), want the idle-in-transaction timeout 25P03", err, code)
	}
}

// Verify needs only EXECUTE on the table's verify function (nodeid init
// --grant); without it, whatever the role may do on the tables, it fails
// with the server's error and the lease stays held.
func TestVerifyPrivileges(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	su, dsn := srv.NewDB(t)
	ctx := testContext(t)
	l := mustAcquire(t, newTestRegistry(t, su))
	for _, tc := range []struct {
		grants string
		ok     bool
	}{
		{appGrants, true},
		{"GRANT ALL ON snowflake_nodes, snowflake_nodes_history TO ROLE", false},
	} {
		db, role := newRole(t, srv, su, dsn, tc.grants)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = l.Verify(ctx, tx)
		_ = tx.Rollback()
		switch {
		case tc.ok && err != nil:
			t.Errorf("Verify as %s (%s): %v", role, tc.grants, err)
		case !tc.ok && (postgres.SQLSTATE(err) != "42501" || !postgres.Fatal(err) || errors.Is(err, ErrLeaseLost)):
			t.Errorf("Verify as %s (%s) = %v, want a Fatal 42501 that is not a loss", role, tc.grants, err)
		}
		if l.Err() != nil {
			t.Fatalf("the lease ended: %v", l.Err())
		}
	}
}

// Misuse gives an error, not a panic, and leaves the lease alone.
func TestVerifyBadArguments(t *testing.T) {
	t.Parallel()
	ep := verifyEndpoint(t, "direct")
	l := mustAcquire(t, newTestRegistry(t, ep.db, WithNodeRange(0, 1)))
	var nilTx *sql.Tx
	var nilDB *sql.DB
	var nilConn *sql.Conn
	for i, q := range []Querier{nil, nilTx, nilDB, nilConn} {
		if err := l.Verify(testContext(t), q); err == nil {
			t.Errorf("Verify with nil Querier %d (%T) succeeded", i, q)
		}
	}
	var nilCtx context.Context
	if err := l.Verify(nilCtx, ep.db); !errors.Is(err, errNilContext) {
		t.Errorf("Verify with a nil context = %v", err)
	}
	// A database without the lease's row is not a loss of the lease.
	other, _ := pgtest.Shared(t).NewDB(t)
	st, err := admin.New(other, admin.Config{Table: postgres.DefaultTable, MinNode: 5, MaxNode: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(testContext(t), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(testContext(t), other); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Errorf("Verify on a database without the row = %v", err)
	}
	// Point checks on the *sql.DB pass while the lease is held.
	if err := l.Verify(testContext(t), ep.db); err != nil {
		t.Errorf("Verify on the *sql.DB: %v", err)
	}
	if l.Err() != nil {
		t.Fatalf("the lease ended: %v", l.Err())
	}
}
