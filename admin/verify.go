package admin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// VerifySQL returns the call of {t}_verify for the table of c: $1 node,
// $2 owner, $3 epoch. Its row is whether the lease is held, the status,
// the expiry, the idle timeout it set, the row's holder and epoch, and the
// statement's timestamp.
func VerifySQL(c Config) string {
	return "-- nodeid verify\nSELECT status = 'ok' AS held, status, expires_at, idle_timeout_ms, holder, row_epoch, now FROM " + c.Table + "_verify($1, $2, $3)"
}

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
// (see {t}_verify).
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
		status  string
		expires sql.NullTime
		timeout sql.NullInt64
		owner   sql.NullString
		epoch   sql.NullInt64
	)
	err := q.QueryRowContext(ctx, query, k.NodeID, k.Owner, k.Epoch).Scan(new(bool), &status, &expires, &timeout, &owner, &epoch, &v.Now)
	if err != nil {
		return Verdict{}, &StatementError{Op: "verify", Table: c.Table, Err: err}
	}
	v.Held, v.Expires = status == "ok", expires.Time
	v.IdleTimeout = time.Duration(timeout.Int64) * time.Millisecond
	v.Owner, v.Epoch, v.Exists = owner.String, epoch.Int64, epoch.Valid
	switch status {
	case "ok":
		if !timeout.Valid {
			return Verdict{}, &StatementError{Op: "verify", Table: c.Table,
				Err: errors.New("the function held the row but did not bound the transaction's idle time")}
		}
	case "no_row":
		v.Cause = CauseNoRow
	case "epoch_mismatch":
		v.Cause = CauseTakenOver
		if v.Epoch < k.Epoch {
			v.Cause = CauseFailover
		}
	case "not_owner":
		v.Cause = CauseTakenOver
	case "released":
		v.Cause = CauseReleased
	case "evicted":
		v.Cause = CauseEvicted
	case "lapsed":
		v.Cause = CauseExpired
	default:
		return Verdict{}, &StatementError{Op: "verify", Table: c.Table, Err: fmt.Errorf("unknown status %q", status)}
	}
	return v, nil
}
