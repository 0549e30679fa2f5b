package report

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// FloorResult is the claim at the floor, `nodeid bench
// --floor`: on each server, the round-trip floor (SELECT 1), the floor of
// a durable write (a one-row UPDATE ... RETURNING with synchronous_commit
// on, on a table of its own with the lease table's row width), and the
// library's Acquire and Release at two range sizes and in both exec
// modes, the items taking turns in one loop; then the claim with
// statistics never gathered against the same after ANALYZE, the drift of
// a claim repeated on one connection, and a new process's first Acquire.
type FloorResult struct {
	// Quick marks the smoke run (nodeid bench --floor --quick): smaller
	// sizes, and no verdicts.
	Quick bool `json:"quick"`
	// Iterations is the number of timed turns of the loop: each item runs
	// once per turn, in an order that rotates.
	Iterations int `json:"iterations"`
	// SmallIDs and LargeIDs are the sizes of the two ranges, each filled
	// with live leases of other owners (open history rows included) but
	// for Free node IDs, spread over the range, which the loop claims and
	// releases.
	SmallIDs int `json:"small_ids"`
	LargeIDs int `json:"large_ids"`
	Free     int `json:"free"`
	// PlanSamples is the number of claims timed on the table with stale
	// statistics, and again after ANALYZE; FirstSamples the number of new
	// processes' first Acquires.
	PlanSamples  int `json:"plan_samples"`
	FirstSamples int `json:"first_samples"`
	// Drift is the number of claims (each followed by its release) of the
	// drift measurement, DriftWindow the claims at its start and at its end
	// whose p50s are compared.
	Drift       int           `json:"drift"`
	DriftWindow int           `json:"drift_window"`
	Servers     []FloorServer `json:"servers"`
}

// The operations of the loop, as FloorItem.Op names them.
const (
	// FloorSelect1 is SELECT 1 on one connection: the round-trip floor.
	FloorSelect1 = "select1"
	// FloorUpdate is the one-row UPDATE ... RETURNING with
	// synchronous_commit on: a round trip and a WAL flush, the floor.
	FloorUpdate = "update"
	// FloorAcquire is Registry.Acquire through the public API.
	FloorAcquire = "acquire"
	// FloorRelease is Lease.Release of the lease just acquired.
	FloorRelease = "release"
)

// Targets of the claim at the floor: reported beside the figures, never enforced.
const (
	// TargetFloorClaim bounds Acquire's p50 over the floor's, on a server
	// whose floor is a durable write (fsync on): with fsync off the
	// floor's commit flushes nothing, and the ratio is printed unbound.
	TargetFloorClaim = 3.0
	// TargetFloorRelease bounds Release's p50 over the floor's, on the same
	// servers as TargetFloorClaim.
	TargetFloorRelease = 2.5
	// TargetPooledClaim and TargetPooledRelease bound Acquire's and
	// Release's p50 through PgBouncer (transaction mode, pgx's exec mode)
	// over the floor's UPDATE through the same PgBouncer, on the same
	// servers as TargetFloorClaim.
	TargetPooledClaim   = 2.5
	TargetPooledRelease = 2.0
	// TargetPlan bounds the claim's p50 with statistics never gathered
	// after the fill over its p50 after ANALYZE.
	TargetPlan = 1.5
	// TargetDrift bounds the p50 of the last claims of the drift run over
	// that of its first.
	TargetDrift = 1.2
	// TargetFirstRoundTrips bounds a new process's first Acquire's round
	// trips, and TargetFirstClaim its p50 over a steady claim's.
	TargetFirstRoundTrips = 3
	TargetFirstClaim      = 2.0
)

// FloorServer is the floor benchmark on one server.
type FloorServer struct {
	Where  string `json:"where"`  // how the server was reached, without secrets
	Server string `json:"server"` // version()
	// Fsync, SynchronousCommit and FullPageWrites are the server's
	// settings ("on" or "off"); the floor's connections set
	// synchronous_commit on for themselves.
	Fsync             string    `json:"fsync"`
	SynchronousCommit string    `json:"synchronous_commit"`
	FullPageWrites    string    `json:"full_page_writes"`
	Settings          []Setting `json:"settings,omitempty"`
	Elapsed           Duration  `json:"elapsed"`
	// Pooler describes the PgBouncer in transaction mode through which the
	// items of mode ModePooled ran; PoolerSkipped says why there was none
	// (then the exec mode's items ran directly).
	Pooler        string `json:"pooler,omitempty"`
	PoolerSkipped string `json:"pooler_skipped,omitempty"`
	// Items are the loop's items, in the order of the loop.
	Items []FloorItem `json:"items"`
	// Plans are the claim's EXPLAIN (ANALYZE, BUFFERS) on the large range
	// after the loop, custom and generic, run in a transaction that is
	// rolled back; the scratch table's name reads <table>.
	Plans []Plan      `json:"plans,omitempty"`
	Plan  *FloorPlan  `json:"plan,omitempty"`
	Drift *FloorDrift `json:"drift,omitempty"`
	First *FloorFirst `json:"first,omitempty"`
	Error string      `json:"error,omitempty"` // why the measurement stopped, if it did
	Notes []string    `json:"notes,omitempty"`
}

// FloorItem is one item of the loop: its latency and what it sent.
type FloorItem struct {
	Op   string `json:"op"`   // FloorSelect1, FloorUpdate, FloorAcquire or FloorRelease
	Mode string `json:"mode"` // the pgx exec mode of its connection (ModeCache, ModeExec), or ModePooled
	IDs  int    `json:"ids,omitempty"`
	// Latency is over the timed turns.
	Latency Dist `json:"latency"`
	// Statements and RoundTrips are the statements the client sent
	// (pgx's tracer) and the writes to its socket (one per round trip),
	// summed over the timed turns.
	Statements int64 `json:"statements"`
	RoundTrips int64 `json:"round_trips"`
}

// PerOp returns n per timed operation.
func (it FloorItem) PerOp(n int64) float64 {
	if it.Latency.N == 0 {
		return 0
	}
	return float64(n) / float64(it.Latency.N)
}

// FloorPlan is the claim at IDs node IDs on a table whose statistics were
// never gathered after it was filled (autovacuum off, no ANALYZE), and on
// the same table after ANALYZE: through a Registry whose connection
// claimed on the table before the fill (Stale, Analyzed: its prepared
// claim keeps the plan PostgreSQL cached for it until ANALYZE invalidates
// it), and through one whose connection was opened after the fill
// (StaleNew, AnalyzedNew); each turn also claims on a table analysed
// after its fill, as a control of the machine's load.
type FloorPlan struct {
	IDs             int  `json:"ids"`
	Stale           Dist `json:"stale"`
	Analyzed        Dist `json:"analyzed"`
	StaleNew        Dist `json:"stale_new"`
	AnalyzedNew     Dist `json:"analyzed_new"`
	ControlStale    Dist `json:"control_stale"`
	ControlAnalyzed Dist `json:"control_analyzed"`
	// Checks are the plan inspector's verdicts on the claim statement's
	// generic plan, on the same table: before the fill, after it, after
	// ANALYZE.
	Checks []FloorPlanCheck `json:"checks,omitempty"`
}

// FloorPlanCheck is the verdict on the claim's generic plan in one state
// of the history (plancheck.PlanInitial, PlanStale, PlanFresh): whether it
// reaches the history only through its primary key.
type FloorPlanCheck struct {
	State          string `json:"state"`
	OnlyPrimaryKey bool   `json:"only_primary_key"`
	Verdict        string `json:"verdict"`
	Error          string `json:"error,omitempty"`
}

// FloorDrift is Drift claims and releases of the same node ID on one
// connection, on a table with autovacuum off, each turn with the floor's
// UPDATE as a control of the machine's load.
type FloorDrift struct {
	IDs    int `json:"ids"`
	Claims int `json:"claims"`
	Window int `json:"window"`
	// First and Last are Acquire's latencies over the first and the last
	// Window claims; ReleaseFirst and ReleaseLast Release's; FloorFirst and
	// FloorLast the floor's in the same turns.
	First        Dist `json:"first"`
	Last         Dist `json:"last"`
	ReleaseFirst Dist `json:"release_first"`
	ReleaseLast  Dist `json:"release_last"`
	FloorFirst   Dist `json:"floor_first"`
	FloorLast    Dist `json:"floor_last"`
	// NodeIDs is how many distinct node IDs the claims got: one when they
	// all took the same.
	NodeIDs int `json:"node_ids"`
}

// FloorFirst is a new process's first Acquire: a new pool of one
// connection and a new Registry on the small range, the connection opened
// with db.PingContext (Setup), then Acquire timed and counted on the open
// connection.
type FloorFirst struct {
	Samples         int   `json:"samples"`
	Setup           Dist  `json:"setup"`
	SetupRoundTrips int64 `json:"setup_round_trips"` // summed over the samples
	Acquire         Dist  `json:"acquire"`
	// ColdFloor is the control of the same turns: the floor's UPDATE as
	// the first statement of a new connection opened the same way.
	ColdFloor Dist `json:"cold_floor"`
	// RoundTrips and Statements are summed over the samples;
	// MaxRoundTrips is the most one sample took.
	RoundTrips    int64 `json:"round_trips"`
	Statements    int64 `json:"statements"`
	MaxRoundTrips int64 `json:"max_round_trips"`
	// Sent are the first lines of the statements the first sample sent, in
	// order.
	Sent []string `json:"sent,omitempty"`
}

// FloorRow is one line of a server's table: an item's p50 and p99, its
// round trips, its ratio to what it is compared with, and the target.
type FloorRow struct {
	// Key names the row the same way on every server, e.g.
	// "acquire/1024/cache_statement", "plan-stale", "drift", "first".
	Key      string
	Label    string
	P50, P99 float64 // milliseconds
	// RoundTrips per operation; negative when not counted.
	RoundTrips float64
	// Ratio is P50 over BaseP50, the p50 of what the row is compared with,
	// named by Base ("the floor", "after ANALYZE", ...); 0 when none.
	Ratio   float64
	Base    string
	BaseP50 float64
	// Target is the bound, e.g. "≤ 3×", or "" when the row is reported
	// unbound; Met says whether the figure met it.
	Target string
	Met    bool
	// Note adds what the row's figure rests on (a control's ratio).
	Note string
	// Skipped says why a row with a target was not measured: it is
	// neither met nor missed.
	Skipped string
}

// Bound reports whether the row has a target and a figure to judge.
func (r FloorRow) Bound() bool { return r.Target != "" && r.Skipped == "" }

// Item returns the loop's item with the given operation, mode and range
// size (0 for the floor's items), and whether it was measured.
func (s *FloorServer) Item(op, mode string, ids int) (FloorItem, bool) {
	for _, it := range s.Items {
		if it.Op == op && it.Mode == mode && it.IDs == ids && it.Latency.N > 0 {
			return it, true
		}
	}
	return FloorItem{}, false
}

// Rows computes the server's table: the floor's items, Acquire and
// Release in cache mode (bound) at both sizes, through PgBouncer (bound,
// over the floor through PgBouncer) or else in exec mode directly
// (unbound), or a row saying why PgBouncer was skipped; the
// stale-statistics claim, the drift and a new process's first Acquire.
// Rows not measured are left out.
func (s *FloorServer) Rows(f *FloorResult) []FloorRow {
	var rows []FloorRow
	floor, haveFloor := s.Item(FloorUpdate, ModeCache, 0)
	floorP50 := Millis(floor.Latency.P50)
	overFloor := func(r FloorRow) FloorRow {
		if haveFloor && floorP50 > 0 {
			r.Ratio, r.Base, r.BaseP50 = r.P50/floorP50, "the floor", floorP50
		}
		return r
	}
	bound := func(r FloorRow, target float64) FloorRow {
		if r.Ratio > 0 {
			r.Target, r.Met = fmt.Sprintf("≤ %g×", target), r.Ratio <= target
		}
		return r
	}
	// The floor is a durable write only where the server flushes WAL.
	durable := s.Fsync != "off"
	item := func(key, label string, it FloorItem) FloorRow {
		return FloorRow{Key: key, Label: label, P50: Millis(it.Latency.P50), P99: Millis(it.Latency.P99), RoundTrips: it.PerOp(it.RoundTrips)}
	}
	if it, ok := s.Item(FloorSelect1, ModeCache, 0); ok {
		rows = append(rows, overFloor(item("select1", "SELECT 1 on one connection (the round-trip floor)", it)))
	}
	if haveFloor {
		rows = append(rows, overFloor(item("update", "one-row UPDATE ... RETURNING, synchronous_commit = on (THE FLOOR)", floor)))
	}
	if it, ok := s.Item(FloorUpdate, ModeExec, 0); ok {
		rows = append(rows, overFloor(item("update/exec", "the same UPDATE in exec mode", it)))
	}
	pooled, havePooled := s.Item(FloorUpdate, ModePooled, 0)
	pooledP50 := Millis(pooled.Latency.P50)
	if havePooled {
		r := overFloor(item("update/"+ModePooled, "the same UPDATE through PgBouncer, transaction mode, exec mode (THE POOLED FLOOR)", pooled))
		if s.SynchronousCommit != "" && s.SynchronousCommit != "on" {
			r.Note = "synchronous_commit=" + s.SynchronousCommit + " on the server: PgBouncer passes on no synchronous_commit of the client's, so the pooled floor waits for no WAL flush"
		}
		rows = append(rows, r)
	}
	// overPooled compares a pooled item with the pooled floor, and notes
	// its ratio to the direct floor.
	overPooled := func(r FloorRow) FloorRow {
		if havePooled && pooledP50 > 0 {
			if haveFloor && floorP50 > 0 {
				r.Note = fmt.Sprintf("over the floor without PgBouncer: %.2f×", r.P50/floorP50)
			}
			r.Ratio, r.Base, r.BaseP50 = r.P50/pooledP50, "the pooled floor", pooledP50
		}
		return r
	}
	for _, mode := range []string{ModeCache, ModeExec, ModePooled} {
		for _, ids := range []int{f.SmallIDs, f.LargeIDs} {
			// "exec mode (PgBouncer)": the mode a pooler needs, measured
			// without one (only when there was none).
			suffix := map[string]string{ModeExec: ", exec mode (PgBouncer)", ModePooled: ", through PgBouncer"}[mode]
			claim, release := TargetFloorClaim, TargetFloorRelease
			over := overFloor
			if mode == ModePooled {
				claim, release, over = TargetPooledClaim, TargetPooledRelease, overPooled
			}
			if it, ok := s.Item(FloorAcquire, mode, ids); ok {
				r := over(item(fmt.Sprintf("acquire/%d/%s", ids, mode), fmt.Sprintf("Registry.Acquire, %s node IDs%s", thousands(ids), suffix), it))
				if mode != ModeExec && durable {
					r = bound(r, claim)
				}
				rows = append(rows, r)
			}
			if it, ok := s.Item(FloorRelease, mode, ids); ok {
				r := over(item(fmt.Sprintf("release/%d/%s", ids, mode), fmt.Sprintf("Lease.Release, %s node IDs%s", thousands(ids), suffix), it))
				if mode != ModeExec && durable {
					r = bound(r, release)
				}
				rows = append(rows, r)
			}
		}
	}
	if s.PoolerSkipped != "" && !havePooled {
		r := FloorRow{Key: ModePooled, Label: "Registry.Acquire and Lease.Release through PgBouncer, transaction mode, exec mode",
			RoundTrips: -1, Skipped: s.PoolerSkipped}
		if durable {
			r.Target = fmt.Sprintf("≤ %g×, ≤ %g× the pooled floor", TargetPooledClaim, TargetPooledRelease)
		}
		r.Note = "skipped: " + s.PoolerSkipped
		rows = append(rows, r)
	}
	if p := s.Plan; p != nil && p.Stale.N > 0 && p.Analyzed.N > 0 {
		control := ""
		if c := ratio(float64(p.ControlStale.P50), float64(p.ControlAnalyzed.P50)); c > 0 {
			control = fmt.Sprintf("control, an analysed table's claims in the same turns: %.2f×", c)
		}
		stale := func(key, label string, before, after Dist) FloorRow {
			r := FloorRow{Key: key, Label: fmt.Sprintf("Registry.Acquire, %s node IDs, statistics never gathered after the fill, %s", thousands(p.IDs), label),
				P50: Millis(before.P50), P99: Millis(before.P99), RoundTrips: -1,
				Ratio: ratio(Millis(before.P50), Millis(after.P50)), Base: "the same after ANALYZE", BaseP50: Millis(after.P50), Note: control}
			return bound(r, TargetPlan)
		}
		rows = append(rows, stale("plan-stale", "on a connection that claimed before the fill", p.Stale, p.Analyzed))
		if p.StaleNew.N > 0 && p.AnalyzedNew.N > 0 {
			r := stale("plan-stale-new", "on a connection opened after it", p.StaleNew, p.AnalyzedNew)
			r.Note = "" // the same turns as the row above
			rows = append(rows, r)
		}
		rows = append(rows, overFloor(FloorRow{Key: "plan-analyzed", Label: "the same table after ANALYZE, on the connection from before the fill",
			P50: Millis(p.Analyzed.P50), P99: Millis(p.Analyzed.P99), RoundTrips: -1}))
	}
	if d := s.Drift; d != nil && d.First.N > 0 && d.Last.N > 0 {
		r := FloorRow{Key: "drift", Label: fmt.Sprintf("Registry.Acquire of one node ID, claims %s–%s of %s on one connection, autovacuum off",
			thousands(d.Claims-d.Window+1), thousands(d.Claims), thousands(d.Claims)),
			P50: Millis(d.Last.P50), P99: Millis(d.Last.P99), RoundTrips: -1,
			Ratio: ratio(Millis(d.Last.P50), Millis(d.First.P50)), Base: fmt.Sprintf("claims 1–%s", thousands(d.Window)), BaseP50: Millis(d.First.P50)}
		r = bound(r, TargetDrift)
		r.Note = fmt.Sprintf("Release %.2f×, the floor in the same turns %.2f×", ratio(float64(d.ReleaseLast.P50), float64(d.ReleaseFirst.P50)),
			ratio(float64(d.FloorLast.P50), float64(d.FloorFirst.P50)))
		if d.NodeIDs != 1 {
			r.Note += fmt.Sprintf("; the claims got %d node IDs", d.NodeIDs)
		}
		rows = append(rows, r)
	}
	if fa := s.First; fa != nil && fa.Acquire.N > 0 {
		r := FloorRow{Key: "first", Label: "a new process's first Registry.Acquire, on an open pool",
			P50: Millis(fa.Acquire.P50), P99: Millis(fa.Acquire.P99), RoundTrips: per(fa.RoundTrips, int64(fa.Samples))}
		if steady, ok := s.Item(FloorAcquire, ModeCache, f.SmallIDs); ok && steady.Latency.P50 > 0 {
			r.Ratio, r.Base, r.BaseP50 = ratio(r.P50, Millis(steady.Latency.P50)), "a steady claim", Millis(steady.Latency.P50)
			r.Target = fmt.Sprintf("≤ %g×, ≤ %d round trips", TargetFirstClaim, TargetFirstRoundTrips)
			r.Met = r.Ratio <= TargetFirstClaim && fa.MaxRoundTrips <= TargetFirstRoundTrips
		}
		setup := overFloor(FloorRow{Key: "setup", Label: "its connection's own set-up (db.PingContext on a new pool)",
			P50: Millis(fa.Setup.P50), P99: Millis(fa.Setup.P99), RoundTrips: per(fa.SetupRoundTrips, int64(fa.Samples))})
		rows = append(rows, r, setup)
		if fa.ColdFloor.N > 0 {
			cold := overFloor(FloorRow{Key: "cold-floor", Label: "the floor's UPDATE as a new connection's first statement, on an open pool (the control)",
				P50: Millis(fa.ColdFloor.P50), P99: Millis(fa.ColdFloor.P99), RoundTrips: -1})
			cold.Note = fmt.Sprintf("the first Acquire over it: %.2f×", ratio(Millis(fa.Acquire.P50), Millis(fa.ColdFloor.P50)))
			if r.BaseP50 > 0 {
				c := ratio(cold.P50, r.BaseP50)
				cold.Note += fmt.Sprintf("; the control over a steady claim: %.2f×", c)
				if c > TargetFirstClaim {
					// What a new server process costs its first statement
					// alone is past the first Acquire's target.
					cold.Note += fmt.Sprintf(", past the first Acquire's ≤ %g× before any of the claim's own work", TargetFirstClaim)
				}
			}
			rows = append(rows, cold)
		}
	}
	return rows
}

// Label names the server by its durability settings, e.g. "fsync on".
func (s *FloorServer) Label() string {
	if s.Fsync == "" {
		return "server"
	}
	return "fsync " + s.Fsync
}

// FormatRatio writes a row's ratio with the p50 it is over, e.g. "7.08×
// the floor (0.115 ms)", or "–".
func (r FloorRow) FormatRatio() string {
	if r.Ratio <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f× %s (%.3f ms)", r.Ratio, r.Base, r.BaseP50)
}

// FormatTarget writes the target with its verdict, e.g. "≤ 3× (missed)";
// without the verdict when judge is false; "skipped" when not measured;
// "–" when unbound.
func (r FloorRow) FormatTarget(judge bool) string {
	if r.Skipped != "" {
		return "skipped"
	}
	if !r.Bound() {
		return "–"
	}
	if !judge {
		return r.Target
	}
	return r.Target + map[bool]string{true: " (met)", false: " (missed)"}[r.Met]
}

// FormatRoundTrips writes round trips per operation, or "–".
func (r FloorRow) FormatRoundTrips() string {
	if r.RoundTrips < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", r.RoundTrips)
}

// writeFloor writes the floor benchmark's tables, one per server.
func writeFloor(ew *errWriter, f *FloorResult) {
	judged := "targets reported, never enforced"
	if f.Quick {
		judged = "smoke run (--quick): sizes below the targets' conditions, nothing judged"
	}
	ew.printf("\nThe claim at the floor: %d turns of every item, the items taking turns; %s\n", f.Iterations, judged)
	for i := range f.Servers {
		s := &f.Servers[i]
		ew.printf("\n%s: %s\n", s.Label(), s.Where)
		ew.printf("  %s; fsync=%s, synchronous_commit=%s, full_page_writes=%s; measured in %s\n", s.Server, orDash(s.Fsync),
			orDash(s.SynchronousCommit), orDash(s.FullPageWrites), time.Duration(s.Elapsed))
		if s.Pooler != "" {
			ew.printf("  pooler: %s\n", s.Pooler)
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  item\tp50 ms\tp99 ms\tround trips\tratio (p50)\ttarget")
		rows := s.Rows(f)
		for _, r := range rows {
			if r.Skipped != "" {
				fmt.Fprintf(tw, "  %s\t–\t–\t–\t–\t%s\n", r.Label, r.FormatTarget(!f.Quick))
				continue
			}
			fmt.Fprintf(tw, "  %s\t%.3f\t%.3f\t%s\t%s\t%s\n", r.Label, r.P50, r.P99, r.FormatRoundTrips(), r.FormatRatio(), r.FormatTarget(!f.Quick))
		}
		tw.Flush()
		for _, r := range rows {
			if r.Note != "" {
				ew.printf("  %s: %s\n", r.Label, r.Note)
			}
		}
		if p := s.Plan; p != nil {
			for _, c := range p.Checks {
				v := c.Verdict
				if c.Error != "" {
					v = "could not inspect: " + c.Error
				}
				ew.printf("  the claim's generic plan reaches the history only through its primary key, %s: %s\n", c.State, v)
			}
		}
		if fa := s.First; fa != nil && len(fa.Sent) > 0 {
			ew.printf("  a new process's first Acquire sent %d statements: %s\n", len(fa.Sent), strings.Join(fa.Sent, "; "))
		}
		for _, n := range s.Notes {
			ew.printf("  note: %s\n", n)
		}
		if s.Error != "" {
			ew.printf("  FAILED: %s\n", s.Error)
		}
	}
}

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
