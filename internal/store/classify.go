package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnconfigured matches the error of a lease table that has no recorded
// configuration: one made by a version of nodeid that did not record it.
// Apply the DDL of SchemaSQL as the table's owner to record it.
var ErrUnconfigured = errors.New("the table has no recorded configuration")

// SQLSTATE returns the PostgreSQL error code carried by err, or "".
func SQLSTATE(err error) string { return SQLState(err) }

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
	if Pooler(err) || errors.Is(err, ErrUnconfigured) {
		return true
	}
	var marked interface{ Fatal() bool }
	if errors.As(err, &marked) {
		return marked.Fatal()
	}
	switch SQLState(err) {
	case pgerrcode.UndefinedTable,
		pgerrcode.UndefinedColumn,
		pgerrcode.UndefinedFunction,
		pgerrcode.DatatypeMismatch,
		pgerrcode.InsufficientPrivilege,
		pgerrcode.InvalidAuthorizationSpecification,
		pgerrcode.InvalidPassword,
		pgerrcode.InvalidCatalogName,
		pgerrcode.InvalidSchemaName,
		pgerrcode.CheckViolation: // a value the table refuses, such as an owner too long
		return true
	}
	return false
}

// Retryable reports whether err is a transient condition expected to clear
// on its own: a dropped or refused connection, a server shutting down or
// starting, a serialization failure or deadlock, a statement that timed out
// or was cancelled, too many connections, a read-only server or a standby
// (a primary failing over). Retrying never implies that a lease is still held.
func Retryable(err error) bool {
	if err == nil || Fatal(err) {
		return false
	}
	var marked interface{ Retryable() bool }
	if errors.As(err, &marked) {
		return marked.Retryable()
	}
	if code := SQLState(err); code != "" {
		switch {
		case pgerrcode.IsConnectionException(code),
			pgerrcode.IsInsufficientResources(code),
			code == pgerrcode.AdminShutdown,
			code == pgerrcode.CrashShutdown,
			code == pgerrcode.CannotConnectNow,
			code == pgerrcode.DatabaseDropped,
			code == pgerrcode.IdleSessionTimeout,
			code == pgerrcode.SerializationFailure,
			code == pgerrcode.DeadlockDetected,
			code == pgerrcode.LockNotAvailable,
			code == pgerrcode.QueryCanceled, // statement_timeout
			code == pgerrcode.ReadOnlySQLTransaction:
			return true
		case code == pgerrcode.ObjectNotInPrerequisiteState && strings.Contains(err.Error(), "recovery is in progress"):
			return true // a standby, during a failover
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
// and adds advice where the failure is one a deployment can fix.
type StatementError struct {
	Op    string // "claim", "renew", ...
	Table string // the lease table
	Err   error
}

// Error names the operation, the table and the driver's error, and adds
// advice for a failure a deployment can fix: the table's rule and the part
// of the schema (SchemaSQL) or the DSN that fixes it.
func (e *StatementError) Error() string {
	msg := fmt.Sprintf("nodeid: %s on table %s: %v", e.Op, e.Table, e.Err)
	if h := e.hint(); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// Unwrap returns the driver's error.
func (e *StatementError) Unwrap() error { return e.Err }

// hint returns advice for a failure a deployment can fix, or "".
func (e *StatementError) hint() string {
	switch code := SQLState(e.Err); {
	case code == pgerrcode.UndefinedTable:
		return "the lease tables do not exist: create them with the DDL of SchemaSQL, applied by their owner (or let nodeid.WithCreateTable create them), or check the table name"
	case code == pgerrcode.UndefinedColumn || code == pgerrcode.DatatypeMismatch:
		return "the table does not have the expected columns: bring it up to date with the DDL of SchemaSQL, applied by its owner"
	case code == pgerrcode.InsufficientPrivilege:
		return fmt.Sprintf("the role needs SELECT and UPDATE on %s and %s, and SELECT, INSERT and UPDATE on %s",
			e.Table, ConfigTable(e.Table), HistoryTable(e.Table))
	case code == pgerrcode.ReadOnlySQLTransaction:
		return "the server is read-only: point the DSN at the primary"
	case Pooler(e.Err):
		return PoolerHint
	}
	return ""
}
