package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// A claim records acquired_at when it has locked its row, not when its
// transaction began: a release that commits in between must not appear to
// end after the next claim started. The claim runs here in a transaction
// that began well before, which autocommit makes a matter of microseconds.
func TestClaimAcquiredAtAfterRowLock(t *testing.T) {
	db, _ := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(db, Config{Table: DefaultTable, MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_sleep(0.2)"); err != nil {
		t.Fatal(err)
	}
	var (
		c                 Claim
		acquired, history time.Time
	)
	if err := tx.QueryRowContext(ctx, `SELECT node_id, epoch, expires_at, after_ms, until_ms, generation, now
		FROM snowflake_nodes_claim(owner => 'a', ttl_ms => 60000, lo => 0, hi => 0)`).
		Scan(&c.NodeID, &c.Epoch, &c.Expires, &c.PrevHorizon, &c.Horizon, &c.Generation, &c.Now); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT t.acquired_at, h.acquired_at FROM snowflake_nodes t
		JOIN snowflake_nodes_history h USING (node_id, epoch)`).Scan(&acquired, &history); err != nil {
		t.Fatal(err)
	}
	if lag := acquired.Sub(c.Now); lag < 150*time.Millisecond {
		t.Errorf("acquired_at is %s after the transaction start, want the time of the claim (>= 150ms)", lag)
	}
	if !history.Equal(acquired) {
		t.Errorf("history acquired_at %v differs from the row's %v", history, acquired)
	}
	if got := c.Expires.Sub(c.Now); got != time.Minute {
		t.Errorf("expiry is now() + %s, want now() + the TTL", got)
	}
}

// A privilege that CheckSchema finds missing is classified like the
// server's own error: Fatal, SQLSTATE 42501, naming the table and privilege.
func TestPrivilegeErrorIsFatal(t *testing.T) {
	s := &Store{cfg: DefaultConfig()}
	err := s.wrapErr("check schema", &privilegeError{kind: "table", table: "t", privilege: "UPDATE"})
	if !Fatal(err) || Retryable(err) || SQLState(err) != "42501" {
		t.Fatalf("%v: Fatal=%v Retryable=%v SQLSTATE=%q", err, Fatal(err), Retryable(err), SQLState(err))
	}
	if !strings.Contains(err.Error(), "UPDATE on table t") {
		t.Errorf("error %q does not name the privilege and the table", err)
	}
}

// A table that records synchronous replication and no server (its DDL ran
// where the WAL functions are refused) is trusted: a first claim, which
// does not know the mode, neither starts a generation nor waits for a
// restore's declaration there, and claims in generation 1.
func TestATrustedTableStartsNoGeneration(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	ddl, err := Schema{Table: "synct", MinNode: 0, MaxNode: 3, MaxTTL: time.Minute, Replication: Sync}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	// What the DDL records where the server refuses the WAL functions.
	if _, err := db.ExecContext(ctx, `UPDATE synct_config SET server_id = NULL, wal_timeline = NULL, creation_pending = NULL`); err != nil {
		t.Fatal(err)
	}
	config := func() string {
		var c string
		if err := db.QueryRowContext(ctx, `SELECT concat_ws(' ', generation, quarantine_until_ms, server_id, wal_timeline) FROM synct_config`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := config()
	st, err := New(db, Config{Table: "synct", MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.ClaimFirst(ctx, 0, 3, false, 1023, "a", 10*time.Second, time.Now().UnixMilli())
	if err != nil || !f.OK || f.Generation != 1 || f.Epoch != 1 {
		t.Fatalf("the first claim on a trusted table: %+v, %v; want node ID 0 in generation 1 at epoch 1", f, err)
	}
	if after := config(); after != before {
		t.Fatalf("the first claim changed the configuration of a trusted table: %q, was %q", after, before)
	}
	if st.Replication() != Sync {
		t.Fatalf("the first claim learnt mode %q, want sync", st.Replication())
	}
}
