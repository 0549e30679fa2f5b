package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the results for a terminal: the environment, each
// scenario's figures, and the targets met and missed.
func WriteText(w io.Writer, res *Results) error {
	ew := &errWriter{w: w}
	e := res.Env
	ew.printf("command:    %s\n", res.Command)
	ew.printf("machine:    %s, %d cores (GOMAXPROCS %d), %s, %s\n", e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.GoVersion)
	ew.printf("load:       %s at the start, %s at the end (1, 5, 15 min)\n", e.LoadStart, e.LoadEnd)
	ew.printf("elapsed:    %s\n", time.Duration(e.Elapsed))
	if res.Floor == nil { // the floor's servers are described with their tables
		ew.printf("server:     %s\n", e.Server)
		ew.printf("where:      %s\n", e.Where)
		ew.printf("pgbench:    %s\n", orDash(e.Pgbench))
		ew.printf("settings:   %s\n", settingsLine(e.Settings))
	}
	ew.printf("scratch:    %s (%s)\n", strings.Join(e.Tables, ", "), map[bool]string{true: "dropped", false: "NOT dropped"}[e.Dropped])
	for _, n := range e.Notes {
		ew.printf("note:       %s\n", n)
	}
	if h := res.Herd; h != nil {
		ew.printf("\nHerd start: %d concurrent Acquires, each on its own connection, %d node IDs (%d repetitions; median [min–max])\n", h.Claimers, h.IDs, repsOf(h.Runs))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  variant\tp50 ms\tp99 ms\tp99/p50\tall ok\tlock-wait samples\twaits seen")
		for _, s := range h.HerdSummary() {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%v\t%d of %d\t%s\n", s.Variant, s.P50.Format("%.1f"), s.P99.Format("%.1f"),
				s.Tail.Format("%.2f"), s.AllOK, s.LockSamples, s.Samples, strings.TrimSpace(strings.Trim(eventList(s.Events, "Lock:"), " ()")))
		}
		tw.Flush()
	}
	if o := res.Overhead; o != nil {
		ew.printf("\nLibrary overhead: Acquire+Release pairs/s vs pgbench running the same two statements (%s runs)\n", time.Duration(o.Duration))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  mode\tconcurrency\tlibrary/s\tstore/s\tpgbench/s\tlibrary/pgbench\tstore/pgbench\tfloor/s (2 UPDATEs)\tclaim SQL/floor\tlibrary, history emptied/s")
		for _, s := range o.Summary() {
			fmt.Fprintf(tw, "  %s (-M %s)\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Mode, s.PgbenchMode, s.Concurrency, s.Library.Format("%.0f"),
				s.Store.Format("%.0f"), s.Pgbench.Format("%.0f"), s.Ratio.Format("%.2f"), s.StoreRatio.Format("%.2f"),
				s.Floor.Format("%.0f"), s.SQLRatio.Format("%.2f"), s.Emptied.Format("%.0f"))
		}
		tw.Flush()
	}
	if sc := res.Scale; sc != nil {
		ew.printf("\nScale: Acquire latency against the fraction of node IDs held (%d samples each)\n", sc.Samples)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  node IDs\theld\tstate\tp50 ms\tp90 ms\tp99 ms\torder violations")
		for _, s := range sc.Summary() {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%d of %d\n", s.IDs, pct(s.Fraction), s.State, s.P50.Format("%.2f"),
				s.P90.Format("%.2f"), s.P99.Format("%.2f"), s.Violations, s.Checked)
		}
		tw.Flush()
	}
	if rt := res.RoundTrips; rt != nil {
		ew.printf("\nStatements and round trips per operation (%s mode)\n", rt.ExecMode)
		if !rt.Server {
			ew.printf("  server-side counts unavailable: %s\n", rt.ServerNote)
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  operation\tn\tserver: own statement\tserver: other\tclient statements\tround trips\tper operation (server, client, round trips)")
		for _, op := range append([]OpCount{rt.First}, rt.Ops...) {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%.3f, %.3f, %.3f\n", op.Op, op.N, op.OwnStatement, op.Other, op.Client, op.Writes,
				per(op.OwnStatement+op.Other, op.N), per(op.Client, op.N), per(op.Writes, op.N))
		}
		tw.Flush()
		for _, s := range rt.FirstStatements {
			ew.printf("  first Acquire ran %d× %s\n", s.Calls, s.Query)
		}
		if rt.Server {
			ew.printf("  history rows %d, claims executed %d\n", rt.HistoryRows, rt.Claims)
		}
	}
	if rn := res.Renewal; rn != nil {
		ew.printf("\nRenewal load: admin.Store.Renew over %d live leases (%s runs)\n", rn.IDs, time.Duration(rn.Duration))
		workers, rates, p99 := rn.RateSummary()
		for i, w := range workers {
			ew.printf("  %3d workers: %s renewals/s, p99 %s ms\n", w, rates[i].Format("%.0f"), p99[i].Format("%.1f"))
		}
		if c, w := rn.Capacity(); w > 0 {
			ew.printf("  capacity %.0f renewals/s (%d workers): a fleet of %d holders at TTL 10s, %d at TTL 60s (renewal every TTL/3)\n",
				c.Median, w, Fleet(c.Median, 10*time.Second), Fleet(c.Median, time.Minute))
		}
		writePooling(ew, rn)
	}
	if f := res.Floor; f != nil {
		writeFloor(ew, f)
	}
	if len(res.Failed) > 0 {
		ew.printf("\nFailed scenarios:\n")
		names := make([]string, 0, len(res.Failed))
		for n := range res.Failed {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			ew.printf("  %s: %s\n", n, res.Failed[n])
		}
	}
	if vs := res.Verdicts(); len(vs) > 0 {
		ew.printf("\nTargets:\n")
		for _, v := range vs {
			ew.printf("  [%s] %s: %s\n", map[bool]string{true: "met", false: "MISSED"}[v.Met], v.Target, v.Result)
		}
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// settingsLine lists the server's non-default settings as name=value.
func settingsLine(ss []Setting) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, s.Name+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

func pct(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", 100*f), "0"), ".") + "%"
}

func per(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func repsOf(runs []HerdRun) int {
	n := 0
	for _, r := range runs {
		n = max(n, r.Rep)
	}
	return n
}

// writePooling writes the renewal load through PgBouncer against the same
// directly, or why it was skipped.
func writePooling(ew *errWriter, rn *RenewalResult) {
	if rn.PoolerSkipped != "" {
		ew.printf("  through PgBouncer: skipped (target ≥ %g× the direct rate not judged): %s\n", TargetPooledRenewal, rn.PoolerSkipped)
		return
	}
	rows := rn.Pooling()
	if len(rows) == 0 {
		return
	}
	ew.printf("\nRenewal load through PgBouncer against directly, side by side: %s, exec mode; directly in %s\n", rn.Pooler, rn.ExecMode)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  workers\tdirect/s\tpooled/s\tpooled/direct\tserver µs/renewal direct\tpooled\tpooled/direct\tof it planning µs: direct\tpooled\tPgBouncer CPU µs/renewal\tof a core\tclient CPU µs/renewal: direct\tpooled\tserver CPU µs/renewal: direct\tpooled\tpooled/direct\tCPU bound")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Workers, r.Direct.Format("%.0f"), r.Pooled.Format("%.0f"), r.Ratio.Format("%.2f"),
			r.ServerDirect.Format("%.0f"), r.ServerPooled.Format("%.0f"), r.ServerRatio.Format("%.2f"),
			r.PlanDirect.Format("%.1f"), r.PlanPooled.Format("%.1f"),
			r.PoolerCPU.Format("%.0f"), r.PoolerShare.Format("%.2f"), r.ClientDirect.Format("%.0f"), r.ClientPooled.Format("%.0f"),
			r.BackendDirect.Format("%.0f"), r.BackendPooled.Format("%.0f"), r.BackendRatio.Format("%.2f"), r.Bound.Format("%.2f"))
	}
	tw.Flush()
	for _, r := range rows {
		ew.printf("  %d workers: %s\n", r.Workers, r.Verdict())
	}
	if rn.ServerNote != "" {
		ew.printf("  note: %s\n", rn.ServerNote)
	}
}

// Verdict says whether the pooled renewals met their target: the rate
// ≥ TargetPooledRenewal× the direct rate, or else, where PgBouncer's own
// CPU is what binds, the server's time per renewal ≤
// TargetPooledServerTime× its time directly, with PgBouncer's CPU shown.
func (r PoolingRow) Verdict() string {
	rate := fmt.Sprintf("pooled at %.2f× the direct rate, target ≥ %g×", r.Ratio.Median, TargetPooledRenewal)
	if r.Met {
		return rate + " (met)"
	}
	if r.ServerRatio.N == 0 {
		return rate + " (missed); no server time to judge the server-time form by"
	}
	v := fmt.Sprintf("%s (missed); server time per renewal pooled at %.2f× direct, target ≤ %g× where PgBouncer's CPU binds", rate, r.ServerRatio.Median, TargetPooledServerTime)
	if r.PoolerCPU.N > 0 {
		v += fmt.Sprintf(" (PgBouncer spent %.0f µs of CPU per renewal, %.2f of a core)", r.PoolerCPU.Median, r.PoolerShare.Median)
	}
	v += map[bool]string{true: ": met", false: ": missed"}[r.ServerMet]
	if r.BackendRatio.N > 0 {
		v += fmt.Sprintf("; the server's CPU per renewal pooled at %.2f× direct", r.BackendRatio.Median)
	}
	if r.Bound.N > 0 {
		v += fmt.Sprintf("; where the CPU binds, this machine allows at most %.2f× the direct rate through PgBouncer", r.Bound.Median)
	}
	return v
}
