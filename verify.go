package nodeid

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/nodeid/nodeid/admin"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn have in common: Verify runs
// its one statement through it.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Verify checks, in the caller's transaction, that the lease is still held:
// that its row in the lease table has this lease's owner and epoch and has
// not expired by the database's clock at the time of the statement
// (statement_timestamp(), not the transaction's start). It returns nil if
// so; otherwise the lease's loss, an error matching ErrLeaseLost and one of
// ErrTakenOver, ErrExpired, ErrReleased, ErrEvicted or ErrFailover, and the
// lease ends locally as well (Done closes, Err says why), so that its
// generator stops. A lease that has already ended locally gives its Err
// without a statement. Any other error (the database, the connection, a
// serialization failure) leaves the lease alone.
//
// Called with a *sql.Tx, a successful Verify holds the lease's row, until
// the transaction ends, so that no other holder can claim the node ID
// before then: the transaction's writes commit, if at all, while no one
// else can hold the node ID. Use it to fence writes keyed by the node ID's
// Snowflake IDs, or by anything else the process owns because it holds the
// node ID: Verify first, then write, then commit, and roll back if Verify
// fails. The lease's own renewals and its release do not wait for the
// transaction; an eviction ("nodeid evict --epoch") does. A claim passes
// over the row, so a long transaction delays a takeover instead of losing
// the lease; to bound that, Verify sets the transaction's
// idle_in_transaction_session_timeout to the time left to the lease's
// expiry in the database (at most the TTL; a shorter setting in effect is
// kept), so that the server ends the transaction of a holder that stops or
// hangs. A statement that runs for longer is bounded only by the
// statement_timeout. The setting and the lock are the transaction's only:
// the statement leaves no session state and works through PgBouncer in
// transaction pooling mode.
//
// Under REPEATABLE READ or SERIALIZABLE call Verify first in the
// transaction, so that its snapshot is the statement's: a takeover or an
// eviction committed after the snapshot makes Verify fail with a
// serialization failure (SQLSTATE 40001; postgres.Retryable reports true),
// on which the whole transaction is retried.
//
// With a *sql.DB (or a *sql.Conn outside a transaction) Verify is a point
// check that holds nothing: the lease may be lost the moment it returns.
//
// q must reach the database of the Registry's *sql.DB, as a role with
// EXECUTE on the table's verify function (postgres.GrantSQL gives it);
// Verify writes nothing. docs/verify.md has the statement for programs in
// other languages.
func (l *Lease) Verify(ctx context.Context, q Querier) error {
	if ctx == nil {
		return errNilContext
	}
	if isNilQuerier(q) {
		return errors.New("nodeid: Verify: the Querier is nil")
	}
	if err := l.Err(); err != nil {
		return err
	}
	v, err := admin.Verify(ctx, q, l.reg.cfg.table, l.key)
	if err != nil {
		return err
	}
	if !v.Held {
		cause := causeErr(v.Cause)
		if cause == nil {
			return fmt.Errorf("nodeid: Verify: table %s has no row for node ID %d: q does not reach the Registry's database",
				l.reg.cfg.table.Table, l.key.NodeID)
		}
		l.lose(cause)
		return l.Err()
	}
	// The row is held for the transaction whatever happens locally from
	// here, but a lease that ended meanwhile admits nothing.
	return l.Err()
}

// isNilQuerier reports whether q is nil, or a nil pointer of one of the
// types of database/sql, whose methods would panic.
func isNilQuerier(q Querier) bool {
	switch q := q.(type) {
	case nil:
		return true
	case *sql.DB:
		return q == nil
	case *sql.Tx:
		return q == nil
	case *sql.Conn:
		return q == nil
	}
	return false
}
