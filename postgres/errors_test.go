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
		{"undefined table", pg("42P01"), true, false},
		{"undefined column", pg("42703"), true, false},
		{"wrong column type", pg("42804"), true, false},
		{"no privilege", pg("42501"), true, false},
		{"bad password", pg("28P01"), true, false},
		{"no database", pg("3D000"), true, false},
		{"prepared statement gone (pooler)", pg("26000"), true, false},
		{"prepared statement exists (pooler)", pg("42P05"), true, false},
		{"connection failure", pg("08006"), false, true},
		{"admin shutdown", pg("57P01"), false, true},
		{"cannot connect now", pg("57P03"), false, true},
		{"too many connections", pg("53300"), false, true},
		{"serialization", pg("40001"), false, true},
		{"deadlock", pg("40P01"), false, true},
		{"statement timeout", pg("57014"), false, true},
		{"read only", pg("25006"), false, true},
		{"unique violation", pg("23505"), false, false},
		{"syntax error", pg("42601"), false, false},
		{"eof", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), false, true},
		{"bad conn", driver.ErrBadConn, false, true},
		{"deadline", context.DeadlineExceeded, false, true},
		{"net", &net.OpError{Op: "dial", Err: errors.New("refused")}, false, true},
		{"check violation", pg("23514"), true, false},
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
		&pgconn.PgError{Code: "26000", Message: `prepared statement "stmtcache_1" does not exist`},
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
