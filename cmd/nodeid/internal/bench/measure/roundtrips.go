package measure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/postgres"
)

// statSnapshot maps pg_stat_statements entries of the current database
// (bar those reading pg_stat_statements) to their texts and call counts.
type statSnapshot map[int64]report.StmtCalls

func (r *runner) statSnapshot(ctx context.Context) (statSnapshot, error) {
	// With pg_stat_statements.track = all (as the renewal load's server
	// time wants) the statements nested in the lease functions are counted
	// too, under toplevel = false (PostgreSQL 14 and later): they are no
	// statement the client sent.
	// r.statTop, set by enableStatements, which reads the version before
	// any snapshot, so that no statement of its own falls between two.
	rows, err := r.admin.QueryContext(ctx, `SELECT s.queryid, s.query, s.calls FROM pg_stat_statements s
		JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'`+r.statTop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snap := statSnapshot{}
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

// since returns the statements executed between old and s.
func (s statSnapshot) since(old statSnapshot) []report.StmtCalls {
	var out []report.StmtCalls
	for id, c := range s {
		if d := c.Calls - old[id].Calls; d > 0 {
			out = append(out, report.StmtCalls{Query: c.Query, Calls: d})
		}
	}
	return out
}

// enableStatements makes pg_stat_statements usable, creating the extension
// only on a throwaway server. It returns why it is not usable, or "".
func (r *runner) enableStatements(ctx context.Context) string {
	var installed bool
	if err := r.admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&installed); err != nil {
		return err.Error()
	}
	if !installed && !r.target.Throwaway {
		return "pg_stat_statements is not installed in this database (the benchmark installs nothing outside its scratch tables)"
	}
	if !installed {
		if _, err := r.admin.ExecContext(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
			return "CREATE EXTENSION pg_stat_statements: " + err.Error()
		}
	}
	var n int64
	if err := r.admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&n); err != nil {
		return "pg_stat_statements cannot be read (is it in shared_preload_libraries?): " + err.Error()
	}
	var version int
	if err := r.admin.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return err.Error()
	}
	if version >= 140000 {
		r.statTop = " AND s.toplevel"
	}
	return ""
}

// reserve returns a scratch table name, registered for dropping, that
// nobody has created yet.
func (r *runner) reserve(ctx context.Context, suffix string) (string, error) {
	name := r.prefix + "_" + suffix
	if err := postgres.ValidateTable(name); err != nil {
		return "", err
	}
	var exists bool
	if err := r.admin.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL OR to_regclass($2) IS NOT NULL`,
		name, name+"_history").Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return "", fmt.Errorf("scratch table %s exists already: the benchmark never works on a table it did not create", name)
	}
	r.mu.Lock()
	r.res.Env.Tables = append(r.res.Env.Tables, name)
	r.mu.Unlock()
	return name, nil
}

// idleLeases and idleTTL set the renewals on idle connections: single
// leases renewing every idleTTL/3 on a connection of their own, as one
// process with one lease does.
const (
	idleLeases = 8
	idleTTL    = 6 * time.Second
	idleRounds = 3
)

// busyTTL is the TTL of n leases renewing on one pool of 4 connections:
// at least nodeid.MinTTL, and long enough that they ask at most 100
// renewals a second (each renews every third of its TTL, and must within
// it), which a loaded 2-core machine running the race detector serves
// with room to spare. At 3 s, 1,000 leases asked 1,000 a second, and one
// lapsed on such a machine. The count per renewal does not depend on the
// TTL; only the wall time of the measurement does.
func busyTTL(n int) time.Duration {
	return max(nodeid.MinTTL, time.Duration(n)*10*time.Millisecond)
}

func (r *runner) roundTrips(ctx context.Context) error {
	cfg := r.cfg
	mode := cfg.ExecModes[0]
	ids := max(postgres.DefaultMaxNode+1, cfg.Ops)
	res := &report.RoundTripResult{ExecMode: mode, IDs: ids}
	r.res.RoundTrips = res
	res.ServerNote = r.enableStatements(ctx)
	res.Server = res.ServerNote == ""
	if !res.Server {
		r.note("round trips: no server-side counts: %s", res.ServerNote)
	}
	table, err := r.reserve(ctx, "rt")
	if err != nil {
		return err
	}
	ctr := &counter{}
	db := r.openDB(4, mode, ctr)
	defer db.Close()
	reg, err := nodeid.New(db, append(nodeRange(int64(ids)), nodeid.WithCreateTable(true), nodeid.WithTable(table),
		nodeid.WithTTL(benchTTL), nodeid.WithOwner("bench-rt"))...)
	if err != nil {
		return err
	}
	defer reg.Close()
	if err := warm(ctx, db, 4); err != nil {
		return err
	}

	r.progress("round trips: first Acquire of a new Registry on a new table")
	var first *nodeid.Lease
	res.First, res.FirstStatements, err = r.measure(ctx, ctr, res.Server, "", func() (int64, error) {
		first, err = reg.Acquire(ctx)
		return 1, err
	})
	if err != nil {
		return err
	}
	res.First.Op = "first acquire"
	if err := release(ctx, first); err != nil { // nothing was stamped: the node ID keeps no horizon of its own
		return err
	}
	for i := range res.FirstStatements {
		res.FirstStatements[i].Query = shorten(res.FirstStatements[i].Query)
	}
	st, err := admin.New(r.admin, admin.Config{Table: table, MinNode: 0, MaxNode: int64(ids) - 1})
	if err != nil {
		return err
	}
	stmts, err := r.captureSQL(ctx, st)
	if err != nil {
		return err
	}

	r.progress("round trips: %d Acquires, then %d Releases", cfg.Ops, cfg.Ops)
	leases := make([]*nodeid.Lease, cfg.Ops)
	acq, _, err := r.measure(ctx, ctr, res.Server, stmts.claim, func() (int64, error) {
		return int64(cfg.Ops), parallel(ctx, cfg.Ops, 4, func(ctx context.Context, i int) (err error) {
			leases[i], err = reg.Acquire(ctx)
			return err
		})
	})
	if err != nil {
		return err
	}
	acq.Op = "acquire"
	rel, _, err := r.measure(ctx, ctr, res.Server, stmts.release, func() (int64, error) {
		return int64(cfg.Ops), parallel(ctx, cfg.Ops, 4, func(ctx context.Context, i int) error {
			return release(ctx, leases[i])
		})
	})
	if err != nil {
		return err
	}
	rel.Op = "release"
	res.Ops = append(res.Ops, acq, rel)

	busy := min(cfg.Ops, 1000)
	ttl := busyTTL(busy)
	r.progress("round trips: %d renewals of %d leases with TTL %s on a pool of 4 connections", cfg.Ops, busy, ttl)
	ren, err := r.renewals(ctx, table, ids, mode, stmts.renew, 1, busy, ttl, int64(cfg.Ops))
	if err != nil {
		return err
	}
	ren.Op = "renewal"
	ren.Note = fmt.Sprintf("%d leases, TTL %s, on one pool of 4 connections", busy, ttl)
	res.Ops = append(res.Ops, ren)
	if cfg.Ops >= 1000 {
		r.progress("round trips: renewals of %d single leases, each on a connection of its own, TTL %s", idleLeases, idleTTL)
		idle, err := r.renewals(ctx, table, ids, mode, stmts.renew, idleLeases, 1, idleTTL, idleLeases*idleRounds)
		if err != nil {
			return err
		}
		idle.Op = "renewal (idle connection)"
		idle.Note = fmt.Sprintf("%d processes' worth of one lease each, TTL %s, each on a connection of its own that idles %s between renewals",
			idleLeases, idleTTL, idleTTL/3)
		res.Ops = append(res.Ops, idle)
	}

	if res.Server {
		all, err := r.statSnapshot(ctx)
		if err != nil {
			return err
		}
		for _, c := range all {
			if sameStatement(c.Query, stmts.claim) {
				res.Claims += c.Calls
			}
		}
	}
	return r.admin.QueryRowContext(ctx, `SELECT count(*) FROM `+table+`_history`).Scan(&res.HistoryRows)
}

// measure runs op, which returns how many operations it made, and counts
// what they cost: on the client through ctr, and on the server, if
// server, the executions of the statement own and of any other.
func (r *runner) measure(ctx context.Context, ctr *counter, server bool, own string, op func() (int64, error)) (report.OpCount, []report.StmtCalls, error) {
	var c report.OpCount
	var before statSnapshot
	var err error
	if server {
		if before, err = r.statSnapshot(ctx); err != nil {
			return c, nil, err
		}
	}
	s0, w0 := ctr.stmts.Load(), ctr.Operations()
	if c.N, err = op(); err != nil {
		return c, nil, err
	}
	s1, w1 := ctr.stmts.Load(), ctr.Operations()
	c.Client, c.Writes = s1-s0, w1-w0
	if !server {
		return c, nil, nil
	}
	after, err := r.statSnapshot(ctx)
	if err != nil {
		return c, nil, err
	}
	delta := after.since(before)
	for _, d := range delta {
		if own != "" && sameStatement(d.Query, own) {
			c.OwnStatement += d.Calls
		} else {
			c.Other += d.Calls
		}
	}
	return c, delta, nil
}

// renewals acquires perReg leases with the given TTL in each of regs
// Registries, each on a pool of its own (4 connections if perReg > 1, else
// 1), and counts the cost of the renewals until want were seen. The
// window is closed before the leases are released.
func (r *runner) renewals(ctx context.Context, table string, ids int, mode, renewSQL string, regs, perReg int, ttl time.Duration, want int64) (report.OpCount, error) {
	ctr := &counter{}
	conns := 1
	if perReg > 1 {
		conns = 4
	}
	var held []*nodeid.Lease
	for i := range regs {
		db := r.openDB(conns, mode, ctr)
		defer db.Close()
		reg, err := nodeid.New(db, append(nodeRange(int64(ids)), nodeid.WithCreateTable(true), nodeid.WithTable(table),
			nodeid.WithTTL(ttl), nodeid.WithOwner(fmt.Sprintf("bench-rt-renew-%d", i)))...)
		if err != nil {
			return report.OpCount{}, err
		}
		defer reg.Close()
		ls := make([]*nodeid.Lease, perReg)
		if err := parallel(ctx, perReg, conns, func(ctx context.Context, i int) (err error) {
			ls[i], err = reg.Acquire(ctx)
			return err
		}); err != nil {
			return report.OpCount{}, err
		}
		held = append(held, ls...)
	}
	timeout := 30*time.Second + time.Duration(want/int64(len(held))+1)*ttl
	c, _, err := r.measure(ctx, ctr, r.res.RoundTrips.Server, renewSQL, func() (int64, error) {
		return watchRenewals(ctx, held, want, timeout)
	})
	if err != nil {
		return c, err
	}
	for _, l := range held {
		if err := release(ctx, l); err != nil {
			return c, err
		}
	}
	return c, nil
}

// watchRenewals polls the deadlines of leases until want renewals were seen
// or timeout passed, and returns the renewals seen: each moves its lease's
// deadline. A lease lost is an error.
func watchRenewals(ctx context.Context, leases []*nodeid.Lease, want int64, timeout time.Duration) (int64, error) {
	last := make([]time.Time, len(leases))
	for i, l := range leases {
		last[i] = l.Deadline()
	}
	var seen int64
	end := time.Now().Add(timeout)
	for seen < want {
		if time.Now().After(end) {
			return seen, fmt.Errorf("saw %d renewals in %s, wanted %d", seen, timeout, want)
		}
		select {
		case <-ctx.Done():
			return seen, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		for i, l := range leases {
			if err := l.Err(); err != nil {
				return seen, fmt.Errorf("a lease was lost while renewing: %w", err)
			}
			if d := l.Deadline(); !d.Equal(last[i]) {
				last[i] = d
				seen++
			}
		}
	}
	return seen, nil
}

// sameStatement reports whether query, as pg_stat_statements shows it (its
// constants replaced by parameters), is the statement sent: the same first
// line, naming the same table. The benchmark's statements on one table
// differ in their first lines.
func sameStatement(query, sent string) bool {
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

// shorten returns the first line of a statement, cut to 80 characters.
func shorten(q string) string {
	q, _, _ = strings.Cut(strings.TrimSpace(q), "\n")
	if len(q) > 80 {
		q = q[:77] + "..."
	}
	return q
}
