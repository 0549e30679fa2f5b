package session

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// Session is one measurement's work on one server: Run's, or RunFloor's on
// each of its servers. Make it with New, then open its admin handle.
type Session struct {
	Target Target
	Res    *report.Results
	Admin  *sql.DB // setup, sampling and counting; no named statements
	// Progress receives a line per step, or nothing if nil.
	Progress io.Writer

	prefix string
	// statTop restricts StatSnapshot to the statements clients sent, where
	// pg_stat_statements tells them apart (PostgreSQL 14 and later).
	statTop string

	mu sync.Mutex
}

// New returns a session on target with empty results and a scratch-table
// prefix of its own; its Admin handle is not open yet.
func New(target Target, progress io.Writer) *Session {
	return &Session{Target: target, Progress: progress, Res: &report.Results{}, prefix: newPrefix()}
}

// Progressf writes a line of progress, after the time of day.
func (r *Session) Progressf(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// Note records a note of the run in its environment.
func (r *Session) Note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Res.Env.Notes = append(r.Res.Env.Notes, fmt.Sprintf(format, args...))
}

// WarmCycles are the untimed Acquire+Release cycles after each change of
// state: the plan is made again after ANALYZE, and a prepared statement
// switches to its generic plan after five executions.
const WarmCycles = 10

// BenchTTL is the TTL of leases that must not renew during a measurement.
const BenchTTL = 10 * time.Minute

// NodeRange is the options of a Registry that leases node IDs 0 to ids-1,
// with IDs whose node field holds them all (the default 10 bits, or more).
func NodeRange(ids int64) []nodeid.Option {
	return []nodeid.Option{nodeid.WithNodeRange(0, ids-1), nodeid.WithNodeBits(max(10, bits.Len64(uint64(ids-1))))}
}

// ServerEnvironment fills in the server's version and the settings that
// differ from the built-in defaults (from the command line, the
// configuration files or ALTER SYSTEM; not those a client session set).
func ServerEnvironment(ctx context.Context, db *sql.DB, env *report.Environment) error {
	if err := db.QueryRowContext(ctx, `SELECT version(), current_setting('server_version')`).Scan(&env.Server, &env.ServerVer); err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, `SELECT name, setting || coalesce(unit, ''), source FROM pg_settings
		WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s report.Setting
		if err := rows.Scan(&s.Name, &s.Value, &s.Source); err != nil {
			return err
		}
		env.Settings = append(env.Settings, s)
	}
	return rows.Err()
}
