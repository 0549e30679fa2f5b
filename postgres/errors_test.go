package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestClassify(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	for _, c := range []struct {
		name             string
		err              error
		fatal, retryable bool
	}{
		{"nil", nil, false, false},
		{"undefined table", pg(pgerrcode.UndefinedTable), true, false},
		{"undefined column", pg(pgerrcode.UndefinedColumn), true, false},
		{"wrong column type", pg(pgerrcode.DatatypeMismatch), true, false},
		{"no privilege", pg(pgerrcode.InsufficientPrivilege), true, false},
		{"bad password", pg(pgerrcode.InvalidPassword), true, false},
		{"no database", pg(pgerrcode.InvalidCatalogName), true, false},
		{"prepared statement gone (pooler)", pg(pgerrcode.InvalidSQLStatementName), true, false},
		{"prepared statement exists (pooler)", pg(pgerrcode.DuplicatePreparedStatement), true, false},
		{"connection failure", pg(pgerrcode.ConnectionFailure), false, true},
		{"admin shutdown", pg(pgerrcode.AdminShutdown), false, true},
		{"cannot connect now", pg(pgerrcode.CannotConnectNow), false, true},
		{"crash shutdown", pg(pgerrcode.CrashShutdown), false, true},
		{"idle session timeout", pg(pgerrcode.IdleSessionTimeout), false, true},
		{"out of memory", pg(pgerrcode.OutOfMemory), false, true},
		{"lock not available", pg(pgerrcode.LockNotAvailable), false, true},
		{"too many connections", pg(pgerrcode.TooManyConnections), false, true},
		{"serialization", pg(pgerrcode.SerializationFailure), false, true},
		{"deadlock", pg(pgerrcode.DeadlockDetected), false, true},
		{"statement timeout", pg(pgerrcode.QueryCanceled), false, true},
		{"read only", pg(pgerrcode.ReadOnlySQLTransaction), false, true},
		{"unique violation", pg(pgerrcode.UniqueViolation), false, false},
		{"syntax error", pg(pgerrcode.SyntaxError), false, false},
		{"eof", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), false, true},
		{"bad conn", driver.ErrBadConn, false, true},
		{"deadline", context.DeadlineExceeded, false, true},
		{"net", &net.OpError{Op: "dial", Err: errors.New("refused")}, false, true},
		{"check violation", pg(pgerrcode.CheckViolation), true, false},
		{"plain", errors.New("something else"), false, false},
	} {
		if got := Fatal(c.err); got != c.fatal {
			t.Errorf("%s: Fatal = %v, want %v", c.name, got, c.fatal)
		}
		if got := Retryable(c.err); got != c.retryable {
			t.Errorf("%s: Retryable = %v, want %v", c.name, got, c.retryable)
		}
	}
}

func TestPoolerHint(t *testing.T) {
	for _, err := range []error{
		&pgconn.PgError{Code: pgerrcode.InvalidSQLStatementName, Message: `prepared statement "stmtcache_1" does not exist`},
		errors.New(`ERROR: prepared statement "stmtcache_9" already exists`),
	} {
		w := &StatementError{Op: "claim", Table: DefaultTable, Err: err}
		if !Fatal(w) || !errors.Is(w, err) {
			t.Errorf("%v: Fatal=%v, keeps cause=%v", err, Fatal(w), errors.Is(w, err))
		}
		if msg := w.Error(); !strings.Contains(msg, "default_query_exec_mode=exec") || !strings.Contains(msg, "snowflake_nodes") {
			t.Errorf("error %q lacks the pooler hint or the table", msg)
		}
	}
}
