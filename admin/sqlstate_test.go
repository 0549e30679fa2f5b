package admin

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

type coded struct{ code string }

func (e coded) Error() string    { return "coded " + e.code }
func (e coded) SQLState() string { return e.code }

func TestSQLState(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), ""},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: pgerrcode.UndefinedTable}), "42P01"},
		{fmt.Errorf("wrapped: %w", coded{pgerrcode.InsufficientPrivilege}), "42501"},
	} {
		if got := SQLState(c.err); got != c.want {
			t.Errorf("SQLState(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestPooler(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&pgconn.PgError{Code: pgerrcode.InvalidSQLStatementName}, true},
		{fmt.Errorf("x: %w", &pgconn.PgError{Code: pgerrcode.DuplicatePreparedStatement}), true},
		{errors.New(`ERROR: prepared statement "stmtcache_9" already exists`), true},
		{errors.New(`prepared statement "s" does not exist`), true},
		{&pgconn.PgError{Code: pgerrcode.UndefinedTable, Message: "relation does not exist"}, false},
		{errors.New("prepared statement is fine"), false},
	} {
		if got := Pooler(c.err); got != c.want {
			t.Errorf("Pooler(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
