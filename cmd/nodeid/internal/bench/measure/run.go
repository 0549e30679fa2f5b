package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

// Target is the database Run works on: see session.Target.
type Target = session.Target

// Pooler is a PgBouncer in front of a Target's server: see session.Pooler.
type Pooler = session.Pooler

// RoundTrips counts the round trips of connections: see
// session.RoundTrips.
type RoundTrips = session.RoundTrips

// runner is one run of Run: its session on the target and its settings.
type runner struct {
	*session.Session
	cfg Config
	tmp string // pgbench scripts
}

// Run measures the scenarios cfg selects on target and returns the results.
// It works only on scratch tables that it creates (nodeid_bench_*) and drops
// before it returns, also when ctx is cancelled. A scenario that fails is
// recorded in Results.Failed and the others still run; Run returns an error
// only when it cannot start or clean up.
func Run(ctx context.Context, target Target, cfg Config) (*report.Results, error) {
	if ctx == nil {
		return nil, errors.New("bench: nil context")
	}
	if target.Conn == nil {
		return nil, errors.New("bench: no connection configuration")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{Session: session.New(target, cfg.Progress), cfg: cfg}
	r.Res.Env = HostEnvironment()
	r.Res.Env.Where = target.Where
	r.Res.Env.Config = cfg.json()
	r.Admin = r.OpenDB(4, report.ModeExec, nil)
	defer r.Admin.Close()

	if err := session.ServerEnvironment(ctx, r.Admin, &r.Res.Env); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", target.Where, err)
	}
	if err := r.checkConnections(ctx); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "nodeid-bench-")
	if err != nil {
		return nil, err
	}
	r.tmp = tmp
	defer os.RemoveAll(tmp)
	if v := pgbenchVersion(ctx, cfg.Pgbench); v != "" {
		r.Res.Env.Pgbench = v
	}

	start := time.Now()
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{report.Herd, r.herd},
		{report.Overhead, r.overhead},
		{report.Scale, r.scale},
		{report.RoundTrips, r.roundTrips},
		{report.Renewal, r.renewal},
	}
	for _, s := range steps {
		if !cfg.runs(s.name) || ctx.Err() != nil {
			continue
		}
		r.Progressf("== %s", s.name)
		if err := s.run(ctx); err != nil {
			if r.Res.Failed == nil {
				r.Res.Failed = map[string]string{}
			}
			r.Res.Failed[s.name] = err.Error()
			r.Progressf("%s failed: %v", s.name, err)
		}
	}
	r.Res.Env.Elapsed = report.Duration(time.Since(start).Round(time.Second))
	r.Res.Env.LoadEnd = LoadAverage()
	dropErr := r.DropTables()
	if err := ctx.Err(); err != nil {
		return r.Res, errors.Join(err, dropErr)
	}
	return r.Res, dropErr
}

// checkConnections refuses a configuration that needs more connections than
// the server has free: the herd holds one per claimer.
func (r *runner) checkConnections(ctx context.Context) error {
	need := 0
	if r.cfg.runs(report.Herd) {
		need = max(need, r.cfg.HerdClaimers)
	}
	if r.cfg.runs(report.Overhead) {
		for _, c := range r.cfg.Concurrency {
			need = max(need, 3*c) // the library's pool, the Store's, pgbench's clients
		}
	}
	if r.cfg.runs(report.Renewal) {
		for _, c := range r.cfg.RenewWorkers {
			need = max(need, c)
		}
	}
	need += 6 // the admin pool, the sampler, a capture
	var maxConns, reserved, used int
	err := r.Admin.QueryRowContext(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int, (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`).
		Scan(&maxConns, &reserved, &used)
	if err != nil {
		return err
	}
	var super bool
	if err := r.Admin.QueryRowContext(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return err
	}
	free := maxConns - used
	if !super {
		free -= reserved
	}
	if need > free {
		return fmt.Errorf("the run needs %d connections (the largest of herd claimers, 3 × concurrency and renewal workers, plus 6) but the server has %d free (max_connections %d, %d in use, %d reserved for superusers): lower --herd, --concurrency or --renew-workers, or raise max_connections",
			need, free, maxConns, used, reserved)
	}
	return nil
}
