package measure

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

func (r *runner) renewal(ctx context.Context) error {
	cfg := r.cfg
	mode := cfg.ExecModes[0]
	st, err := r.Scratch(ctx, "renew", cfg.RenewIDs)
	if err != nil {
		return err
	}
	t := st.Config().Table
	res := &report.RenewalResult{IDs: cfg.RenewIDs, Duration: report.Duration(cfg.Duration), ExecMode: mode}
	r.Res.Renewal = res
	// Every node ID held by a live lease, as a full fleet holds them.
	if _, err := r.Admin.ExecContext(ctx, `UPDATE `+t+` SET owner = 'bench-renew', epoch = epoch + 1, acquired_at = now(),
		expires_at = now() + interval '1 hour'`); err != nil {
		return err
	}
	if _, err := r.Admin.ExecContext(ctx, `VACUUM (ANALYZE) `+t); err != nil {
		return err
	}
	keys := make([]admin.Key, 0, cfg.RenewIDs)
	rows, err := r.Admin.QueryContext(ctx, `SELECT node_id, owner, epoch FROM `+t+` ORDER BY node_id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k admin.Key
		if err := rows.Scan(&k.NodeID, &k.Owner, &k.Epoch); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Through PgBouncer, side by side: each direct run is followed or
	// preceded (in turns) by a pooled run of the same workers.
	sides := []string{mode}
	if p := r.Target.Pooler; p != nil {
		res.Pooler = p.Where
		sides = append(sides, report.ModePooled)
	} else {
		res.PoolerSkipped = r.Target.NoPooler
	}
	server := r.EnableStatements(ctx)
	if server == "" {
		var track, planning string
		if err := r.Admin.QueryRowContext(ctx, `SELECT current_setting('pg_stat_statements.track'),
			current_setting('pg_stat_statements.track_planning')`).Scan(&track, &planning); err != nil {
			server = err.Error()
		} else if track != "all" || planning != "on" {
			res.ServerNote = fmt.Sprintf("pg_stat_statements.track = %s, track_planning = %s: the server time lacks the planning not tracked, and the nested statements apart (set track = all and track_planning = on for both)", track, planning)
		}
	}
	if server != "" {
		res.ServerNote = "no server time: " + server
	}
	for rep := range cfg.Repeat {
		for j := range cfg.RenewWorkers {
			w := cfg.RenewWorkers[(j+rep)%len(cfg.RenewWorkers)]
			for k := range sides {
				side := sides[(k+rep+j)%len(sides)]
				run, err := r.renewRate(ctx, st, keys, side, w, server == "")
				run.Rep, run.Workers = rep+1, w
				if err != nil {
					run.Error = err.Error()
				}
				via := "directly"
				if side == report.ModePooled {
					via = "through PgBouncer"
					res.Pooled = append(res.Pooled, run)
				} else {
					res.Runs = append(res.Runs, run)
				}
				r.Progressf("renewal: rep %d, %d workers, %s: %.0f renewals/s, p50 %s, p99 %s, server %.0f µs/renewal", rep+1, w, via,
					run.Rate, run.Latency.P50, run.Latency.P99, run.Server.PerCall())
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return nil
}

// serverTime reads what pg_stat_statements has counted so far in this
// database: the calls of st's renewal function as the client sent them,
// and the statements nested in any function.
func (r *runner) serverTime(ctx context.Context, st *admin.Store) (report.ServerTime, error) {
	var s report.ServerTime
	err := r.Admin.QueryRowContext(ctx, `SELECT
			coalesce(sum(s.calls) FILTER (WHERE s.toplevel AND s.query LIKE '%' || $1 || '(%'), 0),
			coalesce(sum(s.total_plan_time) FILTER (WHERE s.toplevel AND s.query LIKE '%' || $1 || '(%'), 0),
			coalesce(sum(s.total_exec_time) FILTER (WHERE s.toplevel AND s.query LIKE '%' || $1 || '(%'), 0),
			coalesce(sum(s.calls) FILTER (WHERE NOT s.toplevel), 0),
			coalesce(sum(s.total_plan_time) FILTER (WHERE NOT s.toplevel), 0),
			coalesce(sum(s.total_exec_time) FILTER (WHERE NOT s.toplevel), 0)
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()`,
		st.Config().Table+"_renew").Scan(&s.Calls, &s.PlanMs, &s.ExecMs, &s.NestedCalls, &s.NestedPlan, &s.NestedExec)
	return s, err
}

// backendCPU reads the CPU time of every client backend of the bench's
// database but the runner's own, by pid, from /proc: the server's work in
// the renewals, without the waits for a core that pg_stat_statements'
// times count. It fails where the server is not on this machine (or not on
// Linux).
func (r *runner) backendCPU(ctx context.Context) (map[int]time.Duration, error) {
	rows, err := r.Admin.QueryContext(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cpu := map[int]time.Duration{}
	var last error
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		c, err := session.PidCPU(pid)
		if err != nil {
			last = err // not local, or the backend ended since
			continue
		}
		cpu[pid] = c
	}
	if len(cpu) == 0 && last != nil {
		return nil, last
	}
	return cpu, rows.Err()
}

// renewRate renews keys in turn from w goroutines, each with a connection
// of its own, for the configured duration after a warm-up.
func (r *runner) renewRate(ctx context.Context, st *admin.Store, keys []admin.Key, mode string, w int, server bool) (report.RenewalRun, error) {
	var run report.RenewalRun
	var db *sql.DB
	if mode == report.ModePooled {
		db = r.OpenPooled(w, nil)
	} else {
		db = r.OpenDB(w, mode, nil)
	}
	defer db.Close()
	s, err := admin.New(db, st.Config())
	if err != nil {
		return run, err
	}
	if err := session.Warm(ctx, db, w); err != nil {
		return run, err
	}
	loop := func(d time.Duration) (renewed, refused int64, lat []time.Duration, elapsed time.Duration, err error) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		start := time.Now()
		end := start.Add(d)
		for g := range w {
			wg.Go(func() {
				var ok, no int64
				var mine []time.Duration
				var first error
				for i := g; time.Now().Before(end); i = (i + w) % len(keys) {
					t0 := time.Now()
					o, err := s.Renew(ctx, keys[i], time.Hour, t0.Add(time.Hour).UnixMilli())
					if err != nil {
						first = err
						break
					}
					mine = append(mine, time.Since(t0))
					if o.OK {
						ok++
					} else {
						no++
					}
				}
				mu.Lock()
				defer mu.Unlock()
				renewed, refused = renewed+ok, refused+no
				lat = append(lat, mine...)
				if first != nil && err == nil {
					err = first
				}
			})
		}
		wg.Wait()
		return renewed, refused, lat, time.Since(start), err
	}
	if _, _, _, _, err := loop(min(time.Second, r.cfg.Duration/4)); err != nil {
		return run, err
	}
	var before report.ServerTime
	if server {
		if before, err = r.serverTime(ctx, st); err != nil {
			return run, err
		}
	}
	pid := 0
	if p := r.Target.Pooler; p != nil && mode == report.ModePooled {
		pid = p.PID
	}
	var pooler0 time.Duration
	if pid > 0 {
		if pooler0, err = session.PidCPU(pid); err != nil {
			pid = 0
		}
	}
	backends0, _ := r.backendCPU(ctx) // nil where the server is not local
	client0 := session.ProcessCPU()
	renewed, refused, lat, elapsed, err := loop(r.cfg.Duration)
	run.ClientCPU = report.Duration(session.ProcessCPU() - client0)
	if backends0 != nil {
		if backends1, berr := r.backendCPU(ctx); berr == nil {
			// A backend that started during the run counts from zero; one
			// that ended is lost (PgBouncer keeps its server connections).
			for pid, c := range backends1 {
				run.BackendCPU += report.Duration(c - backends0[pid])
			}
		}
	}
	if pid > 0 {
		if c, cerr := session.PidCPU(pid); cerr == nil {
			run.PoolerCPU = report.Duration(c - pooler0)
		}
	}
	if server {
		after, serr := r.serverTime(ctx, st)
		if serr != nil && err == nil {
			err = serr
		}
		run.Server = &report.ServerTime{Calls: after.Calls - before.Calls, PlanMs: after.PlanMs - before.PlanMs, ExecMs: after.ExecMs - before.ExecMs,
			NestedCalls: after.NestedCalls - before.NestedCalls, NestedPlan: after.NestedPlan - before.NestedPlan, NestedExec: after.NestedExec - before.NestedExec}
	}
	run.Elapsed = report.Duration(elapsed)
	run.Renewed, run.Refused = renewed, refused
	run.Rate = float64(renewed) / elapsed.Seconds()
	run.Latency = report.NewDist(lat)
	if err == nil && refused > 0 {
		err = fmt.Errorf("%d renewals of live leases changed nothing", refused)
	}
	return run, err
}
