package admin_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// verifyStore returns a Store on a new table of node IDs lo to hi.
func verifyStore(t *testing.T, lo, hi int64) *admin.Store {
	t.Helper()
	st, _, _ := newStore(t, withNodes(lo, hi))
	if err := st.Apply(ctxT(t), time.Minute); err != nil {
		t.Fatal(err)
	}
	return st
}

func mustClaim(t *testing.T, st *admin.Store, owner string) admin.Claim {
	t.Helper()
	c, err := st.Claim(ctxT(t), st.Config().MinNode, st.Config().MaxNode, owner, 30*time.Second, 0)
	ok, why := c.OK, c.Refusal
	if err != nil || !ok {
		t.Fatalf("claim for %s: ok=%v %+v %v", owner, ok, why, err)
	}
	return c.Claim
}

func mustExec(t *testing.T, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, query string, args ...any) {
	t.Helper()
	if _, err := q.ExecContext(ctxT(t), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func showIdle(t *testing.T, q admin.Querier) string {
	t.Helper()
	var s string
	if err := q.QueryRowContext(ctxT(t), "SHOW idle_in_transaction_session_timeout").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A held lease verifies in a transaction, which then has an idle timeout
// of at most the time left to the expiry; the setting is the
// transaction's only.
func TestVerifyHeld(t *testing.T) {
	t.Parallel()
	st := verifyStore(t, 0, 3)
	ctx := ctxT(t)
	c := mustClaim(t, st, "a")
	conn, err := st.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := showIdle(t, conn)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	v, err := admin.Verify(ctx, tx, st.Config(), c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Held || v.Cause != "" || !v.Expires.Equal(c.Expires) || !v.Exists || v.Owner != "a" || v.Epoch != c.Epoch {
		t.Fatalf("verdict of a held lease = %+v, claim %+v", v, c)
	}
	if left := v.Expires.Sub(v.Now); v.IdleTimeout <= 0 || v.IdleTimeout > left || v.IdleTimeout < left-time.Millisecond {
		t.Errorf("idle timeout %s, want the %s left to the expiry", v.IdleTimeout, left)
	}
	var ms int64
	if err := tx.QueryRowContext(ctx, `SELECT setting::bigint FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'`).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	if ms != v.IdleTimeout.Milliseconds() {
		t.Errorf("the transaction's idle timeout is %d ms, the verdict says %s", ms, v.IdleTimeout)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if after := showIdle(t, conn); after != before {
		t.Errorf("idle timeout after the transaction = %q, before %q: the setting outlived it", after, before)
	}
	// Outside a transaction it is a point check: nothing is left after it,
	// on the connection, and the row is not locked.
	if v, err := admin.Verify(ctx, conn, st.Config(), c.Key); err != nil || !v.Held {
		t.Fatalf("verify on the *sql.Conn = %+v, %v", v, err)
	}
	if got := showIdle(t, conn); got != before {
		t.Errorf("idle timeout after a point check = %q, want %q", got, before)
	}
	if o, err := st.Release(ctx, c.Key, 0); err != nil || !o.OK {
		t.Fatalf("release: %+v %v", o, err)
	}
	if cl, err := st.Claim(ctx, 0, 0, "b", 30*time.Second, 0); err != nil || !cl.OK || cl.NodeID != 0 {
		t.Fatalf("a claim after a point check: %+v %v; the row was left locked", cl, err)
	}
}

// A shorter idle timeout already in effect is kept, in whatever unit
// PostgreSQL shows it; a longer one or none is lowered to the time left.
func TestVerifyKeepsShorterIdleTimeout(t *testing.T) {
	t.Parallel()
	st := verifyStore(t, 0, 0)
	ctx := ctxT(t)
	c := mustClaim(t, st, "a") // 30s
	for _, tc := range []struct {
		set  string
		want time.Duration // 0: the time left
	}{
		{"0", 0}, {"1500ms", 1500 * time.Millisecond}, {"10s", 10 * time.Second}, {"5min", 0}, {"2h", 0}, {"1d", 0},
	} {
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx, "SET LOCAL idle_in_transaction_session_timeout = '"+tc.set+"'")
		v, err := admin.Verify(ctx, tx, st.Config(), c.Key)
		_ = tx.Rollback()
		if err != nil {
			t.Fatalf("with %s: %v", tc.set, err)
		}
		want := tc.want
		if want == 0 {
			want = v.Expires.Sub(v.Now).Truncate(time.Millisecond)
		}
		if v.IdleTimeout != want {
			t.Errorf("with %s set: idle timeout %s, want %s", tc.set, v.IdleTimeout, want)
		}
	}
}

// Every way a lease ends gives its cause, locks nothing and sets nothing.
func TestVerifyCauses(t *testing.T) {
	t.Parallel()
	const table = "snowflake_nodes"
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key
		want string
	}{
		{"released", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			if o, err := st.Release(ctxT(t), c.Key, admin.NoHorizon); err != nil || !o.OK {
				t.Fatalf("release: %+v %v", o, err)
			}
			return c.Key
		}, admin.CauseReleased},
		{"evicted", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			if ev, err := st.Evict(ctxT(t), c.NodeID, c.Epoch); err != nil || !ev.OK {
				t.Fatalf("evict: %+v %v", ev, err)
			}
			return c.Key
		}, admin.CauseEvicted},
		{"expired", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			mustExec(t, st.DB(), "UPDATE "+table+" SET expires_at = statement_timestamp() - interval '1 ms' WHERE node_id = $1", c.NodeID)
			return c.Key
		}, admin.CauseExpired},
		{"evicted after it lapsed", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			mustExec(t, st.DB(), "UPDATE "+table+" SET expires_at = statement_timestamp() - interval '1 ms' WHERE node_id = $1", c.NodeID)
			if ev, err := st.Evict(ctxT(t), c.NodeID, c.Epoch); err != nil || !ev.OK {
				t.Fatalf("evict: %+v %v", ev, err)
			}
			return c.Key
		}, admin.CauseExpired},
		{"taken over", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			if ev, err := st.Evict(ctxT(t), c.NodeID, c.Epoch); err != nil || !ev.OK {
				t.Fatalf("evict: %+v %v", ev, err)
			}
			// The evicted lease expires, its horizon passes: b may claim.
			mustExec(t, st.DB(), "UPDATE "+table+" SET expires_at = statement_timestamp() - interval '1 ms', horizon_ms = 0 WHERE node_id = $1", c.NodeID)
			if b := mustClaim(t, st, "b"); b.NodeID != c.NodeID || b.Epoch != c.Epoch+1 {
				t.Fatalf("the takeover claimed %+v", b)
			}
			return c.Key
		}, admin.CauseTakenOver},
		{"another owner", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			k := c.Key
			k.Owner = "someone else"
			return k
		}, admin.CauseTakenOver},
		{"lost in a failover", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			k := c.Key
			k.Epoch++
			return k
		}, admin.CauseFailover},
		{"no row", func(t *testing.T, st *admin.Store, c admin.Claim) admin.Key {
			k := c.Key
			k.NodeID = 999
			return k
		}, admin.CauseNoRow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := verifyStore(t, 0, 0)
			ctx := ctxT(t)
			k := tc.end(t, st, mustClaim(t, st, "a"))
			tx, err := st.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			before := showIdle(t, tx)
			v, err := admin.Verify(ctx, tx, st.Config(), k)
			if err != nil {
				t.Fatal(err)
			}
			if v.Held || v.Cause != tc.want || v.IdleTimeout != 0 {
				t.Errorf("verdict = %+v, want cause %s", v, tc.want)
			}
			if got := showIdle(t, tx); got != before {
				t.Errorf("a failed verification set the idle timeout to %s", got)
			}
			// A failed verification locks nothing: a claim takes a free or
			// lapsed row at once (an evicted one once the lease expires).
			if tc.want == admin.CauseEvicted {
				mustExec(t, st.DB(), "UPDATE "+table+" SET expires_at = statement_timestamp() - interval '1 ms' WHERE node_id = 0")
			}
			if tc.want == admin.CauseReleased || tc.want == admin.CauseEvicted || tc.want == admin.CauseExpired {
				if res, err := st.Claim(ctx, 0, 0, "c", 30*time.Second, 0); err != nil || !res.OK {
					t.Errorf("a claim after a failed verification, in its open transaction: %+v %v", res, err)
				}
			}
		})
	}
}

// The two phases of the lock: while a verified transaction is open the
// holder's renewals and its release go through, and a claim passes over
// the row; once the transaction ends the claim takes it.
func TestVerifyLockLetsRenewalsThroughAndKeepsClaimsOff(t *testing.T) {
	t.Parallel()
	st := verifyStore(t, 0, 1)
	ctx := ctxT(t)
	c := mustClaim(t, st, "a")
	tx, err := st.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if v, err := admin.Verify(ctx, tx, st.Config(), c.Key); err != nil || !v.Held {
		t.Fatalf("verify: %+v %v", v, err)
	}
	// Were the holder's statements to wait for the transaction, they
	// would run into this bound instead.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	o, err := st.Renew(wctx, c.Key, 30*time.Second, 0)
	if err != nil || !o.OK || !o.Expires.After(c.Expires) {
		t.Fatalf("renewal while a verified transaction is open: %+v %v", o, err)
	}
	// A second verification in the transaction sees the renewal.
	if v, err := admin.Verify(ctx, tx, st.Config(), c.Key); err != nil || !v.Held || !v.Expires.Equal(o.Expires) {
		t.Fatalf("verify after the renewal: %+v %v, renewed to %s", v, err, o.Expires)
	}
	if o, err := st.Release(wctx, c.Key, 0); err != nil || !o.OK {
		t.Fatalf("release while a verified transaction is open: %+v %v", o, err)
	}
	b, err := st.Claim(ctx, 0, 1, "b", 30*time.Second, 0)
	ok, why := b.OK, b.Refusal
	if err != nil || !ok || b.NodeID != 1 {
		t.Fatalf("claim while the released row is locked = node %d ok=%v %+v %v, want node 1", b.NodeID, ok, why, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if cl, err := st.Claim(ctx, 0, 1, "c", 30*time.Second, 0); err != nil || !cl.OK || cl.NodeID != 0 || cl.Epoch != c.Epoch+1 {
		t.Fatalf("claim after the transaction = %+v %v, want node 0, epoch %d", cl, err, c.Epoch+1)
	}
}

// Under REPEATABLE READ and SERIALIZABLE: with Verify first, a renewal
// committed since the snapshot does not fail the next verification (the
// lock does not conflict with it) and the row is still held; an eviction
// or a takeover committed since the snapshot of a transaction that did not
// verify first fails with a serialization error, never with a verdict of
// held; the holder's own release is not seen, but the row stays locked.
func TestVerifyRepeatableRead(t *testing.T) {
	t.Parallel()
	for _, level := range []sql.IsolationLevel{sql.LevelRepeatableRead, sql.LevelSerializable} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			st := verifyStore(t, 0, 0)
			ctx := ctxT(t)
			c := mustClaim(t, st, "a")

			tx, err := st.DB().BeginTx(ctx, &sql.TxOptions{Isolation: level})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if v, err := admin.Verify(ctx, tx, st.Config(), c.Key); err != nil || !v.Held {
				t.Fatalf("verify first: %+v %v", v, err)
			}
			if o, err := st.Renew(ctx, c.Key, 30*time.Second, 0); err != nil || !o.OK {
				t.Fatalf("renewal: %+v %v", o, err)
			}
			if v, err := admin.Verify(ctx, tx, st.Config(), c.Key); err != nil || !v.Held {
				t.Fatalf("verify again after a renewal since the snapshot: %+v %v", v, err)
			}
			_ = tx.Rollback()

			// A transaction whose snapshot predates Verify: a takeover or an
			// eviction since the snapshot is a serialization failure.
			lapse := func(t *testing.T, k admin.Key) {
				mustExec(t, st.DB(), `UPDATE snowflake_nodes SET expires_at = statement_timestamp() - interval '1 ms', horizon_ms = 0
					WHERE node_id = $1`, k.NodeID)
			}
			evict := func(t *testing.T, k admin.Key) {
				if ev, err := st.Evict(ctx, k.NodeID, k.Epoch); err != nil || !ev.OK {
					t.Fatalf("evict: %+v %v", ev, err)
				}
			}
			// free makes the row claimable again, whoever holds it.
			free := func(t *testing.T) {
				var epoch int64
				if err := st.DB().QueryRowContext(ctx, `SELECT epoch FROM snowflake_nodes WHERE node_id = 0`).Scan(&epoch); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Evict(ctx, 0, epoch); err != nil {
					t.Fatal(err)
				}
				mustExec(t, st.DB(), `UPDATE snowflake_nodes SET horizon_ms = 0, expires_at = '-infinity' WHERE node_id = 0`)
			}
			for _, ending := range []struct {
				name string
				end  func(t *testing.T, k admin.Key)
			}{
				{"evicted", evict},
				{"evicted and taken over", func(t *testing.T, k admin.Key) { evict(t, k); lapse(t, k); mustClaim(t, st, "b") }},
				{"lapsed and taken over", func(t *testing.T, k admin.Key) { lapse(t, k); mustClaim(t, st, "b") }},
			} {
				free(t)
				c = mustClaim(t, st, "a")
				stale, err := st.DB().BeginTx(ctx, &sql.TxOptions{Isolation: level})
				if err != nil {
					t.Fatal(err)
				}
				mustExec(t, stale, "SELECT 1") // takes the snapshot
				ending.end(t, c.Key)
				v, err := admin.Verify(ctx, stale, st.Config(), c.Key)
				_ = stale.Rollback()
				if postgres.SQLSTATE(err) != "40001" || !postgres.Retryable(err) {
					t.Fatalf("%s since the snapshot: verify = %+v, %v; want a Retryable SQLSTATE 40001", ending.name, v, err)
				}
			}

			// The holder's own release since the snapshot is not seen, but
			// the row stays locked: no claim takes it before the
			// transaction ends.
			free(t)
			c = mustClaim(t, st, "a")
			stale, err := st.DB().BeginTx(ctx, &sql.TxOptions{Isolation: level})
			if err != nil {
				t.Fatal(err)
			}
			defer stale.Rollback()
			mustExec(t, stale, "SELECT 1")
			if o, err := st.Release(ctx, c.Key, 0); err != nil || !o.OK {
				t.Fatalf("release: %+v %v", o, err)
			}
			if v, err := admin.Verify(ctx, stale, st.Config(), c.Key); err != nil || !v.Held {
				t.Fatalf("verify in a snapshot older than the release: %+v %v", v, err)
			}
			if res, err := st.Claim(ctx, 0, 0, "b", 30*time.Second, 0); err != nil || res.OK {
				t.Fatalf("a claim took the row of an open verified transaction: %+v %v", res, err)
			}
			_ = stale.Rollback()
			if res, err := st.Claim(ctx, 0, 0, "b", 30*time.Second, 0); err != nil || !res.OK {
				t.Fatalf("a claim after the transaction: %+v %v", res, err)
			}
		})
	}
}

func TestVerifyNilQuerier(t *testing.T) {
	_, err := admin.Verify(context.Background(), nil, admin.DefaultConfig(), admin.Key{})
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("verify with a nil Querier = %v", err)
	}
}
