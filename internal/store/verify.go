package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn have in common: the
// verification runs its one statement through it, in the caller's
// transaction when it is a *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// The causes a verification names when the lease is not held, in the
// statement's cause column.
const (
	CauseTakenOver = "taken_over" // another claim of the node ID, of a later epoch or another owner
	CauseFailover  = "failover"   // the row has an earlier epoch: the database lost the claim
	CauseReleased  = "released"   // released by its holder
	CauseEvicted   = "evicted"    // evicted by an operator
	CauseExpired   = "expired"    // expired by the statement's time, or evicted after it had lapsed
	CauseNoRow     = "no_row"     // the table has no row for the node ID
)

// The verification checks, in the caller's transaction, that the lease of
// this node, owner and epoch is held: its row has this owner and epoch and
// has not expired by the statement's own time (statement_timestamp(), not
// now(), which is the transaction's start). If so, it locks the row FOR KEY
// SHARE until the transaction ends, and sets the transaction's
// idle_in_transaction_session_timeout (set_config(..., true): transaction
// local, so no session state outlives the transaction) to the time left to
// the row's expiry, or keeps a shorter one already in effect.
//
// The lock strength is the weakest that keeps claims off: a claim reads a
// row FOR UPDATE SKIP LOCKED, which conflicts with FOR KEY SHARE, so it
// passes over the row until the transaction ends; a renewal or a release
// updates only non-key columns, which locks the row FOR NO KEY UPDATE and
// does not conflict with FOR KEY SHARE, so the holder's own statements
// never wait for the transaction. An eviction reads FOR UPDATE: it waits for the
// transaction up to its lock timeout (LockTimeout), then gives up.
//
// When the lease is not held the statement locks nothing and changes
// nothing, and names the cause from the row and the history of the claim
// (a released and an evicted row look alike), in the order in which a
// renewal's Outcome is read: a later epoch is a takeover, an earlier one a
// failover, a freed row released, evicted or (evicted after it lapsed)
// expired, another owner a takeover, else an expiry. The row is read
// without a lock for that, so a cause found while a concurrent claim
// commits may be named from the row just before it; the lease is lost
// either way.
//
// It needs SELECT and UPDATE on the lease table (a row lock needs UPDATE)
// and SELECT on the history: it writes nothing.
//
// $1 node; $2 owner; $3 epoch.
const verifyTemplate = `-- nodeid verify
WITH held AS (
    SELECT t.expires_at,
        GREATEST(1, floor(extract(epoch FROM t.expires_at - statement_timestamp()) * 1000))::bigint AS left_ms
    FROM {t} AS t
    WHERE t.node_id = $1::integer AND t.owner = $2::text AND t.epoch = $3::bigint
      AND t.expires_at >= statement_timestamp()
    FOR KEY SHARE
), cur AS (
    SELECT t.owner, t.epoch,
        (SELECT h.end_reason FROM {h} AS h WHERE h.node_id = t.node_id AND h.epoch = $3::bigint) AS end_reason
    FROM {t} AS t WHERE t.node_id = $1::integer
), idle AS (
    SELECT (extract(epoch FROM current_setting('idle_in_transaction_session_timeout')::interval) * 1000)::bigint AS ms
), v AS (
    SELECT h.expires_at, cur.owner, cur.epoch,
        CASE WHEN h.expires_at IS NULL THEN NULL
            WHEN idle.ms > 0 AND idle.ms <= h.left_ms THEN idle.ms ELSE h.left_ms END AS timeout_ms,
        CASE WHEN h.expires_at IS NOT NULL THEN NULL
            WHEN cur.epoch IS NULL THEN 'no_row'
            WHEN cur.epoch > $3::bigint THEN 'taken_over'
            WHEN cur.epoch < $3::bigint THEN 'failover'
            WHEN cur.owner = '' AND cur.end_reason = 'released' THEN 'released'
            WHEN cur.owner = '' AND cur.end_reason = 'expired' THEN 'expired'
            WHEN cur.owner = '' THEN 'evicted'
            WHEN cur.owner <> $2::text THEN 'taken_over'
            ELSE 'expired' END AS cause
    FROM (SELECT 1) AS one LEFT JOIN cur ON true LEFT JOIN held AS h ON true, idle
)
SELECT v.expires_at IS NOT NULL AS held, v.cause, v.expires_at,
    CASE WHEN v.timeout_ms IS NOT NULL
        THEN set_config('idle_in_transaction_session_timeout', v.timeout_ms::text, true) END AS idle_timeout,
    v.timeout_ms AS idle_timeout_ms, v.owner, v.epoch, statement_timestamp() AS now
FROM v`

// VerifySQL returns the statement of Verify for the lease table of c, whose
// name must have been validated (Config.Validate). Its parameters are $1
// the node ID, $2 the owner and $3 the epoch; its one row has held
// (boolean), cause (text: NULL when held, else one of the Cause constants),
// expires_at (when held), idle_timeout and idle_timeout_ms (when held: the
// transaction's idle_in_transaction_session_timeout from then on, as
// set_config shows it and in milliseconds), owner and epoch (the row's,
// NULL if it has none) and now (the statement's timestamp).
func VerifySQL(c Config) string { return expand(verifyTemplate, c, Sync) }

// Verdict is the result of a verification.
type Verdict struct {
	Held bool
	// Cause is one of the Cause constants when the lease is not held.
	Cause string
	// Expires is the row's expiry, when held.
	Expires time.Time
	// IdleTimeout is the transaction's idle_in_transaction_session_timeout
	// from the statement on, when held.
	IdleTimeout time.Duration
	// Owner and Epoch are the row's; Exists is false if there is none.
	Owner  string
	Epoch  int64
	Exists bool
	// Now is the statement's timestamp.
	Now time.Time
}

// Verify runs the verification of key k of the lease table of c through q
// (see verifyTemplate).
func Verify(ctx context.Context, q Querier, c Config, k Key) (Verdict, error) {
	return verify(ctx, q, VerifySQL(c), c, k)
}

// verify runs query, the verification of the lease table of c, for k.
func verify(ctx context.Context, q Querier, query string, c Config, k Key) (Verdict, error) {
	if q == nil {
		return Verdict{}, errors.New("nodeid: verify: the Querier is nil")
	}
	var (
		v       Verdict
		cause   sql.NullString
		expires sql.NullTime
		set     sql.NullString
		timeout sql.NullInt64
		owner   sql.NullString
		epoch   sql.NullInt64
	)
	err := q.QueryRowContext(ctx, query, k.NodeID, k.Owner, k.Epoch).
		Scan(&v.Held, &cause, &expires, &set, &timeout, &owner, &epoch, &v.Now)
	if err != nil {
		return Verdict{}, &StatementError{Op: "verify", Table: c.Table, Err: err}
	}
	v.Cause, v.Expires = cause.String, expires.Time
	v.IdleTimeout = time.Duration(timeout.Int64) * time.Millisecond
	v.Owner, v.Epoch, v.Exists = owner.String, epoch.Int64, epoch.Valid
	if v.Held && !set.Valid {
		return Verdict{}, &StatementError{Op: "verify", Table: c.Table,
			Err: errors.New("the statement held the row but did not bound the transaction's idle time")}
	}
	return v, nil
}
