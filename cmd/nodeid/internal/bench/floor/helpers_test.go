package floor

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

func target(t *testing.T, dsn string) session.Target {
	t.Helper()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return session.Target{Conn: cc, Where: "the test database"}
}

// tlog writes progress lines to the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func assertDropped(t *testing.T, db *sql.DB, res *report.Results) {
	t.Helper()
	if !res.Env.Dropped || len(res.Env.Tables) == 0 {
		t.Errorf("tables %v, dropped %v", res.Env.Tables, res.Env.Dropped)
	}
	var left []string
	// The scratch tables' lease functions go with them.
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
