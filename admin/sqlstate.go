package admin

// The PostgreSQL error code (SQLSTATE) of an error, and the failures of a
// connection pooler, for the classification of errors (classify.go) and the
// nodeid command's messages. The codes are github.com/jackc/pgerrcode's
// names, never literals.

import (
	"errors"
	"strings"

	"github.com/jackc/pgerrcode"
)

// SQLState returns the SQLSTATE carried by err (by pgx's *pgconn.PgError, or any
// error in its chain with a SQLState method, as lib/pq's and nodeid's own),
// or "".
func SQLState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// PoolerHint is the advice for a connection pooler that rejects named
// prepared statements.
const PoolerHint = "a connection pooler in transaction mode cannot keep named prepared statements: " +
	"open the database with default_query_exec_mode=exec (or simple_protocol) in the DSN"

// Pooler recognises the errors PgBouncer and the driver produce when named
// prepared statements meet transaction pooling.
func Pooler(err error) bool {
	if err == nil {
		return false
	}
	if code := SQLState(err); code == pgerrcode.InvalidSQLStatementName || code == pgerrcode.DuplicatePreparedStatement {
		return true
	}
	m := err.Error()
	return strings.Contains(m, "prepared statement") &&
		(strings.Contains(m, "does not exist") || strings.Contains(m, "already exists"))
}
