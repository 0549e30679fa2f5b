package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/postgres"
)

// StatSnapshot maps pg_stat_statements entries of the current database
// (bar those reading pg_stat_statements) to their texts and call counts.
type StatSnapshot map[int64]report.StmtCalls

// StatSnapshot reads what pg_stat_statements has counted so far.
func (r *Session) StatSnapshot(ctx context.Context) (StatSnapshot, error) {
	// With pg_stat_statements.track = all (as the renewal load's server
	// time wants) the statements nested in the lease functions are counted
	// too, under toplevel = false (PostgreSQL 14 and later): they are no
	// statement the client sent.
	// r.statTop, set by EnableStatements, which reads the version before
	// any snapshot, so that no statement of its own falls between two.
	rows, err := r.Admin.QueryContext(ctx, `SELECT s.queryid, s.query, s.calls FROM pg_stat_statements s
		JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'`+r.statTop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snap := StatSnapshot{}
	for rows.Next() {
		var id int64
		var c report.StmtCalls
		if err := rows.Scan(&id, &c.Query, &c.Calls); err != nil {
			return nil, err
		}
		snap[id] = c
	}
	return snap, rows.Err()
}

// Since returns the statements executed between old and s.
func (s StatSnapshot) Since(old StatSnapshot) []report.StmtCalls {
	var out []report.StmtCalls
	for id, c := range s {
		if d := c.Calls - old[id].Calls; d > 0 {
			out = append(out, report.StmtCalls{Query: c.Query, Calls: d})
		}
	}
	return out
}

// EnableStatements makes pg_stat_statements usable, creating the extension
// only on a throwaway server. It returns why it is not usable, or "".
func (r *Session) EnableStatements(ctx context.Context) string {
	var installed bool
	if err := r.Admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&installed); err != nil {
		return err.Error()
	}
	if !installed && !r.Target.Throwaway {
		return "pg_stat_statements is not installed in this database (the benchmark installs nothing outside its scratch tables)"
	}
	if !installed {
		if _, err := r.Admin.ExecContext(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
			return "CREATE EXTENSION pg_stat_statements: " + err.Error()
		}
	}
	var n int64
	if err := r.Admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&n); err != nil {
		return "pg_stat_statements cannot be read (is it in shared_preload_libraries?): " + err.Error()
	}
	var version int
	if err := r.Admin.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return err.Error()
	}
	if version >= 140000 {
		r.statTop = " AND s.toplevel"
	}
	return ""
}

// Reserve returns a scratch table name, registered for dropping, that
// nobody has created yet.
func (r *Session) Reserve(ctx context.Context, suffix string) (string, error) {
	name := r.prefix + "_" + suffix
	if err := postgres.ValidateTable(name); err != nil {
		return "", err
	}
	var exists bool
	if err := r.Admin.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL OR to_regclass($2) IS NOT NULL`,
		name, name+"_history").Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return "", fmt.Errorf("scratch table %s exists already: the benchmark never works on a table it did not create", name)
	}
	r.mu.Lock()
	r.Res.Env.Tables = append(r.Res.Env.Tables, name)
	r.mu.Unlock()
	return name, nil
}

// SameStatement reports whether query, as pg_stat_statements shows it (its
// constants replaced by parameters), is the statement sent: the same first
// line, naming the same table. The benchmark's statements on one table
// differ in their first lines.
func SameStatement(query, sent string) bool {
	first := func(s string) string {
		s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
		return strings.TrimSpace(s)
	}
	return first(query) == first(sent) && tableOf(query) == tableOf(sent)
}

// tableOf returns the first word after the first "FROM " or "UPDATE ": the
// table the statement's first step reads.
func tableOf(q string) string {
	for i := range len(q) {
		for _, kw := range []string{"FROM ", "UPDATE "} {
			if strings.HasPrefix(q[i:], kw) {
				f := strings.Fields(q[i+len(kw):])
				if len(f) > 0 {
					return f[0]
				}
			}
		}
	}
	return ""
}

// Shorten returns the first line of a statement, cut to 80 characters.
func Shorten(q string) string {
	q, _, _ = strings.Cut(strings.TrimSpace(q), "\n")
	if len(q) > 80 {
		q = q[:77] + "..."
	}
	return q
}
