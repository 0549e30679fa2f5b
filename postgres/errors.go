package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnconfigured matches the error of a lease table that has no recorded
// configuration: one made by a version of nodeid that did not record it.
// Apply the DDL of SchemaSQL as the table's owner to record it.
var ErrUnconfigured = errors.New("the table has no recorded configuration")

// SQLSTATE returns the PostgreSQL error code carried by err, or "".
func SQLSTATE(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// Fatal reports whether err describes a deployment problem that will not go
// away without intervention: a missing table or column, a column of the
// wrong type, a missing privilege, a failed login, a missing database, a
// value the table's checks refuse, a table without a recorded configuration
// (ErrUnconfigured), or a connection pooler that rejects named prepared
// statements. It is the signal worth alerting on.
func Fatal(err error) bool {
	if err == nil {
		return false
	}
	if poolerError(err) || errors.Is(err, ErrUnconfigured) {
		return true
	}
	switch SQLSTATE(err) {
	case "42P01", // undefined_table
		"42703", // undefined_column
		"42883", // undefined_function
		"42804", // datatype_mismatch
		"42501", // insufficient_privilege
		"28000", // invalid_authorization_specification
		"28P01", // invalid_password
		"3D000", // invalid_catalog_name
		"3F000", // invalid_schema_name
		"23514": // check_violation: a value the table refuses, such as an owner too long
		return true
	}
	return false
}

// Retryable reports whether err is a transient condition expected to clear
// on its own: a dropped or refused connection, a server shutting down or
// starting, a serialization failure or deadlock, a statement that timed out
// or was cancelled, too many connections, a read-only server (a primary
// failing over). Retrying never implies that a lease is still held.
func Retryable(err error) bool {
	if err == nil || Fatal(err) {
		return false
	}
	if code := SQLSTATE(err); code != "" {
		switch {
		case strings.HasPrefix(code, "08"), // connection_exception
			strings.HasPrefix(code, "53"),  // insufficient_resources
			strings.HasPrefix(code, "57P"), // admin/crash shutdown, cannot connect now
			code == "40001",                // serialization_failure
			code == "40P01",                // deadlock_detected
			code == "55P03",                // lock_not_available
			code == "57014",                // query_canceled (statement_timeout)
			code == "25006":                // read_only_sql_transaction
			return true
		}
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		isConnectError(err)
}

func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// StatementError is the error of a statement on the lease tables. It names
// the operation and the table, keeps the driver's error for errors.Is/As,
// and adds a hint where the failure is one a deployment can fix.
type StatementError struct {
	Op    string // "claim", "renew", ...
	Table string // the lease table
	Err   error
}

// Error names the operation, the table and the driver's error, and adds
// the hint if there is one.
func (e *StatementError) Error() string {
	msg := fmt.Sprintf("nodeid: %s on table %s: %v", e.Op, e.Table, e.Err)
	if h := e.Hint(); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// Unwrap returns the driver's error.
func (e *StatementError) Unwrap() error { return e.Err }

// Hint returns advice for a failure a deployment can fix, or "".
func (e *StatementError) Hint() string {
	switch code := SQLSTATE(e.Err); {
	case code == "42P01":
		return "the lease tables do not exist: create them with the DDL of SchemaSQL, applied by their owner (or let nodeid.WithCreateTable create them), or check the table name"
	case code == "42703" || code == "42804":
		return "the table does not have the expected columns: bring it up to date with the DDL of SchemaSQL, applied by its owner"
	case code == "42501":
		return fmt.Sprintf("the role needs SELECT and UPDATE on %s and %s, and SELECT, INSERT and UPDATE on %s",
			e.Table, ConfigTable(e.Table), HistoryTable(e.Table))
	case code == "25006":
		return "the server is read-only: point the DSN at the primary"
	case poolerError(e.Err):
		return PoolerHint
	}
	return ""
}

// PoolerHint is the advice given when a pooler rejects named prepared
// statements.
const PoolerHint = "a connection pooler in transaction mode cannot keep named prepared statements: " +
	"open the database with default_query_exec_mode=exec (or simple_protocol) in the DSN"

// poolerError recognises the errors PgBouncer and the driver produce when
// named prepared statements meet transaction pooling.
func poolerError(err error) bool {
	if code := SQLSTATE(err); code == "26000" || code == "42P05" {
		return true
	}
	m := err.Error()
	return strings.Contains(m, "prepared statement") &&
		(strings.Contains(m, "does not exist") || strings.Contains(m, "already exists"))
}
