// Package benchtest holds what the tests of the bench packages share: a
// target on a test database, a progress writer into the test's log, and
// the check that a run dropped its scratch tables. Only tests import it.
package benchtest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

// Target is the test database at dsn as a benchmark's target.
func Target(t *testing.T, dsn string) session.Target {
	t.Helper()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return session.Target{Conn: cc, Where: "the test database"}
}

// Log writes progress lines to the test's log.
type Log struct{ T *testing.T }

func (l Log) Write(p []byte) (int, error) {
	l.T.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// AssertDropped fails the test unless the run recorded its scratch tables
// as dropped and none of them, nor their lease functions, is left in db.
func AssertDropped(t *testing.T, db *sql.DB, res *report.Results) {
	t.Helper()
	if !res.Env.Dropped || len(res.Env.Tables) == 0 {
		t.Errorf("tables %v, dropped %v", res.Env.Tables, res.Env.Dropped)
	}
	var left []string
	rows, err := db.QueryContext(context.Background(), `SELECT relname FROM pg_class WHERE relname LIKE 'nodeid\_bench\_%'
		UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE 'nodeid\_bench\_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		left = append(left, n)
	}
	if len(left) > 0 {
		t.Errorf("scratch relations left behind: %v", left)
	}
}
