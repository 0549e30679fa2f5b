package report

import (
	"slices"
	"time"
)

// RenewalResult is the renewals per second one server sustains:
// admin.Store.Renew, the statement the library's background renewal
// sends, driven from Workers goroutines with a connection each, over IDs
// live leases; directly (Runs) and, side by side, through a PgBouncer in
// transaction mode in exec mode (Pooled).
type RenewalResult struct {
	IDs      int          `json:"ids"`
	Duration Duration     `json:"duration"`
	ExecMode string       `json:"exec_mode"`
	Runs     []RenewalRun `json:"runs"`
	// Pooler describes the PgBouncer of the Pooled runs, each taken in
	// turns with the direct run of the same repetition and workers;
	// PoolerSkipped says why there are none.
	Pooler        string       `json:"pooler,omitempty"`
	PoolerSkipped string       `json:"pooler_skipped,omitempty"`
	Pooled        []RenewalRun `json:"pooled,omitempty"`
	// ServerNote says why the runs have no server time, or what it lacks
	// (the statements nested in the functions, with
	// pg_stat_statements.track = top).
	ServerNote string `json:"server_note,omitempty"`
}

// RenewalRun is one repetition at one number of workers.
type RenewalRun struct {
	Rep     int     `json:"rep"`
	Workers int     `json:"workers"`
	Rate    float64 `json:"rate"` // successful renewals per second
	Renewed int64   `json:"renewed"`
	// Refused counts renewals that changed nothing: none should.
	Refused int64 `json:"refused"`
	Latency Dist  `json:"latency"`
	// Elapsed is the timed run's length; ClientCPU this process's CPU
	// time in it, PoolerCPU PgBouncer's (pooled runs, on Linux).
	Elapsed   Duration `json:"elapsed,omitempty"`
	ClientCPU Duration `json:"client_cpu,omitempty"`
	PoolerCPU Duration `json:"pooler_cpu,omitempty"`
	// BackendCPU is the CPU time of the server's backends in the run,
	// from /proc (a local server on Linux), or 0.
	BackendCPU Duration `json:"backend_cpu,omitempty"`
	// Server is the server's time in the renewals, from
	// pg_stat_statements, or nil.
	Server *ServerTime `json:"server,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// ServerTime is what pg_stat_statements counted during a run: the
// renewal's call as the client sent it (top level: its planning and its
// execution, which includes everything nested in the function) and,
// apart, the statements nested in the function (pg_stat_statements.track
// = all), whose planning shows whether the server connection kept their
// plans.
type ServerTime struct {
	Calls       int64   `json:"calls"`
	PlanMs      float64 `json:"plan_ms"`
	ExecMs      float64 `json:"exec_ms"`
	NestedCalls int64   `json:"nested_calls"`
	NestedPlan  float64 `json:"nested_plan_ms"`
	NestedExec  float64 `json:"nested_exec_ms"`
}

// PerCall returns the server's time per renewal, planning and execution,
// in microseconds; 0 without calls.
func (s *ServerTime) PerCall() float64 {
	if s == nil || s.Calls == 0 {
		return 0
	}
	return 1000 * (s.PlanMs + s.ExecMs) / float64(s.Calls)
}

// PlanPerCall returns the planning per renewal in microseconds, the
// call's own and its nested statements'.
func (s *ServerTime) PlanPerCall() float64 {
	if s == nil || s.Calls == 0 {
		return 0
	}
	return 1000 * (s.PlanMs + s.NestedPlan) / float64(s.Calls)
}

// Targets of the renewal load through PgBouncer.
const (
	// TargetPooledRenewal bounds the renewals per second through PgBouncer
	// from below, over the same server's directly.
	TargetPooledRenewal = 0.8
	// TargetPooledServerTime bounds the server's time per renewal through
	// PgBouncer over its time per renewal directly: the target where
	// PgBouncer's own CPU binds first on the machine.
	TargetPooledServerTime = 1.2
)

// PoolingRow compares renewals through PgBouncer with renewals directly at
// one number of workers: medians over the repetitions, each ratio of runs
// of the same repetition.
type PoolingRow struct {
	Workers int
	// Direct and Pooled are the renewals per second; Ratio Pooled over
	// Direct.
	Direct, Pooled, Ratio Spread
	// ServerDirect and ServerPooled are the server's microseconds per
	// renewal, ServerRatio pooled over direct; PlanDirect and PlanPooled
	// the planning in them. Zero without pg_stat_statements.
	ServerDirect, ServerPooled, ServerRatio Spread
	PlanDirect, PlanPooled                  Spread
	// PoolerCPU is PgBouncer's CPU microseconds per renewal, PoolerShare
	// its CPU over the run's time (1 is a core); ClientDirect and
	// ClientPooled this process's CPU microseconds per renewal.
	PoolerCPU, PoolerShare     Spread
	ClientDirect, ClientPooled Spread
	// BackendDirect and BackendPooled are the server's backends' CPU
	// microseconds per renewal, BackendRatio pooled over direct: the
	// server's work without its waits for a core.
	BackendDirect, BackendPooled, BackendRatio Spread
	// Bound is the pooled rate over the direct one that the machine's CPU
	// allows where it binds: the CPU per renewal of the client and the
	// server directly over that of the client, the server and PgBouncer
	// through it (all on one machine).
	Bound Spread
	// Met says the rate met TargetPooledRenewal; ServerMet that the server
	// time met TargetPooledServerTime.
	Met, ServerMet bool
}

// Pooling returns the comparison at each number of workers that has both
// a direct and a pooled run without error, in the order of the workers.
func (r *RenewalResult) Pooling() []PoolingRow {
	var out []PoolingRow
	for _, w := range r.workers() {
		var pr PoolingRow
		pr.Workers = w
		var d, p, q, sd, sp, sq, pd, pp, pc, ps, cd, cp, bd, bp, bq, lim []float64
		for _, a := range r.Runs {
			if a.Workers != w || a.Error != "" {
				continue
			}
			i := slices.IndexFunc(r.Pooled, func(b RenewalRun) bool { return b.Workers == w && b.Rep == a.Rep && b.Error == "" })
			if i < 0 {
				continue
			}
			b := r.Pooled[i]
			d, p, q = append(d, a.Rate), append(p, b.Rate), append(q, ratio(b.Rate, a.Rate))
			if x, y := a.Server.PerCall(), b.Server.PerCall(); x > 0 && y > 0 {
				sd, sp, sq = append(sd, x), append(sp, y), append(sq, y/x)
				pd, pp = append(pd, a.Server.PlanPerCall()), append(pp, b.Server.PlanPerCall())
			}
			if b.PoolerCPU > 0 && b.Renewed > 0 && b.Elapsed > 0 {
				pc = append(pc, perRenewal(b.PoolerCPU, b.Renewed))
				ps = append(ps, float64(b.PoolerCPU)/float64(b.Elapsed))
			}
			if a.ClientCPU > 0 && b.ClientCPU > 0 && a.Renewed > 0 && b.Renewed > 0 {
				cd, cp = append(cd, perRenewal(a.ClientCPU, a.Renewed)), append(cp, perRenewal(b.ClientCPU, b.Renewed))
			}
			if a.BackendCPU > 0 && b.BackendCPU > 0 && a.Renewed > 0 && b.Renewed > 0 {
				x, y := perRenewal(a.BackendCPU, a.Renewed), perRenewal(b.BackendCPU, b.Renewed)
				bd, bp, bq = append(bd, x), append(bp, y), append(bq, y/x)
				if a.ClientCPU > 0 && b.ClientCPU > 0 && b.PoolerCPU > 0 {
					direct := perRenewal(a.ClientCPU, a.Renewed) + x
					lim = append(lim, direct/(perRenewal(b.ClientCPU, b.Renewed)+y+perRenewal(b.PoolerCPU, b.Renewed)))
				}
			}
		}
		if len(q) == 0 {
			continue
		}
		pr.Direct, pr.Pooled, pr.Ratio = NewSpread(d), NewSpread(p), NewSpread(q)
		pr.ServerDirect, pr.ServerPooled, pr.ServerRatio = NewSpread(sd), NewSpread(sp), NewSpread(sq)
		pr.PlanDirect, pr.PlanPooled = NewSpread(pd), NewSpread(pp)
		pr.PoolerCPU, pr.PoolerShare = NewSpread(pc), NewSpread(ps)
		pr.ClientDirect, pr.ClientPooled = NewSpread(cd), NewSpread(cp)
		pr.BackendDirect, pr.BackendPooled, pr.BackendRatio = NewSpread(bd), NewSpread(bp), NewSpread(bq)
		pr.Bound = NewSpread(lim)
		pr.Met = pr.Ratio.Median >= TargetPooledRenewal
		pr.ServerMet = pr.ServerRatio.N > 0 && pr.ServerRatio.Median <= TargetPooledServerTime
		out = append(out, pr)
	}
	return out
}

// perRenewal returns cpu over n renewals in microseconds.
func perRenewal(cpu Duration, n int64) float64 {
	return float64(time.Duration(cpu).Microseconds()) / float64(n)
}
