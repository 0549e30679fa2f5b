package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// The types of this file are what report.md.tmpl renders: the figures of
// one run, computed, with the few derived strings the prose needs. A
// section's pointer is nil when its scenario did not run. Spreads
// (bench.Spread) are medians over the repetitions, with their Min, Max and
// N; the template writes them with spread.

// report is the whole page.
type report struct {
	Script  string // the command that regenerates the report
	Minutes string // how long it took: "a minute", "20 minutes"
	Command string // the nodeid bench command line of the run
	Env     environment
	Failed  []failure // scenarios that failed, by name
	Targets []target

	Herd       *herd
	Overhead   *overhead
	Scale      *scale
	RoundTrips *roundTrips
	Renewal    *renewal
	Generation generation
	Statements *statements   // nil when the statement layer's benchmarks did not run
	Floor      *floorSection // nil without the results of a floor run
	Missed     []missed      // the targets missed, in the order of Targets

	Summary summary // the three lines at the top, also for the README
}

// environment is where the figures were measured.
type environment struct {
	CPU                string
	Cores, GOMAXPROCS  int
	OS, Go, Server     string
	Where              string // how the server was reached
	Settings           string // non-default settings as `name=value`, comma-separated
	Pgbench            string // its version, or "–"
	LoadStart, LoadEnd string // load averages over 1, 5 and 15 minutes
	Elapsed            string // how long nodeid bench ran, e.g. "13m28s"
	Started            string // RFC 3339
	Notes              []string
}

// failure is a scenario that failed.
type failure struct{ Scenario, Error string }

// target is one row of the targets table: Reported rows have no target
// to meet and are only reported.
type target struct {
	Target, Result string
	Met, Reported  bool
}

// scenario is what each section says of the command that produced it.
type scenario struct {
	Command  string // the nodeid bench command line of the run
	Scenario string // the scenario's name, for nodeid bench --only
}

// herd is section 1.
type herd struct {
	scenario
	Claimers, IDs int
	Variants      []herdVariant // in the order of bench.HerdVariants
	// The variants by name; a variant that did not run is all zero.
	Library, SQL, NoSkip, Advisory herdVariant
	AdvisoryP99                    float64 // the advisory-lock variant's p99 over the library's
	MsPerClaim                     float64 // the library's herd time (until its last claim returned) per claimer
	Plot                           string  // the plot's path relative to the report, or ""
	LockWaits                      string  // the lock-wait diagnosis, or ""
	LockCmd                        string  // its command
}

// herdVariant is one row of the herd's table: bench.HerdVariantSummary's
// Variant, P50, P99, Tail (p99/p50), Wall (until the last claim returned),
// AllOK, Failed, LockSamples, Samples, MaxWaiters, and:
type herdVariant struct {
	bench.HerdVariantSummary
	P99Ratio  float64 // p99 over the library's
	Waits     string  // most waiters seen per heavyweight and lightweight lock, most first
	LockWaits string  // the same for heavyweight locks only
	// RowWaiters is the most claimers seen waiting at once on one kind of
	// row lock (Lock:tuple or Lock:transactionid): claimers queued behind
	// each other, unlike Lock:extend, the history table's growth.
	RowWaiters int
	RowWaits   string // the same per row lock
}

// overhead is section 2.
type overhead struct {
	scenario
	IDs             int
	Duration, Chunk string                  // per repetition and per turn, e.g. "6s", "2s"
	Rows            []bench.OverheadSummary // per mode and concurrency: Library, Store, Pgbench, Ratio, ... (spreads)
	PgbenchSeconds  int                     // pgbench's -T
	PgbenchVars     string                  // its -D flags
	Script, Floor   string                  // the two pgbench scripts

	// Reading is nil when no cache-mode ratio was measured.
	Reading *overheadReading

	// For the summary: the cache-mode ratios to pgbench, and the spread of
	// library / Store over them.
	CacheRatios []ratioAt
	LibStore    bench.Spread
}

// overheadReading are the figures the overhead's reading quotes: cache
// mode at the lowest and highest concurrency, and exec mode at the lowest.
type overheadReading struct {
	First, Last                 bench.OverheadSummary
	FirstLibStore, LastLibStore float64                // library / Store
	Exec                        *bench.OverheadSummary // nil without an exec-mode floor ratio
	// ExecEven says that the library and pgbench ran within TargetOverhead
	// of each other in exec mode (library / pgbench between 0.8 and 1/0.8),
	// so that the planning both pay is what binds them.
	ExecEven bool
}

// ratioAt is a ratio at one concurrency.
type ratioAt struct {
	Ratio       float64
	Concurrency int
}

// scale is section 3.
type scale struct {
	scenario
	Samples  int
	ExecMode string
	Rows     []scaleRow
	Plot     string
	Plans    []bench.Plan // their Text without trailing newlines
	Flat     []flatAt     // for the summary: p50 at 99.9% held over p50 at 0%
}

// scaleRow is one row of the scale table: bench.ScaleSummary's IDs,
// Fraction, State, Held, P50, P90, P99, Checked, Violations, and:
type scaleRow struct {
	bench.ScaleSummary
	Relative float64 // p50 over the p50 at 0% held of the same size
	HasBase  bool    // whether that was measured
}

// flatAt is the flat ratio of one range size.
type flatAt struct {
	Ratio float64
	IDs   int
}

// roundTrips is section 4.
type roundTrips struct {
	scenario
	Ops             int // Acquires, and Releases, counted
	ExecMode        string
	Server          bool
	ServerNote      string
	Rows            []opRow // the first Acquire, then the others
	Later           []opRow // the others
	FirstCalls      int64   // statements of the first Acquire
	FirstStatements string  // "N× query" lines, sorted
	HistoryRows     int64
	Claims          int64
	OneStatement    bool // every operation counted was one statement
}

// opRow is one operation's counts: bench.OpCount's Op, N, OwnStatement,
// Other, Client, Writes, Note, and:
type opRow struct {
	bench.OpCount
	StatementsPerOp, RoundTripsPerOp float64
}

// renewal is section 5.
type renewal struct {
	scenario
	IDs      int
	Duration string
	ExecMode string
	Rows     []renewalRow
	// Capacity is the best median rate, reached with CapacityWorkers; 0
	// workers when none was measured.
	Capacity        bench.Spread
	CapacityWorkers int
	TTL10, TTL60    fleet
}

// renewalRow is one number of workers.
type renewalRow struct {
	Workers int
	Rate    bench.Spread
	P99     bench.Spread // milliseconds
}

// fleet is what the renewal capacity carries at one TTL.
type fleet struct {
	PerHolder  float64 // renewals per holder per second
	Full, Half int     // holders at full and at half load
}

// generation is section 6.
type generation struct {
	Ran        bool // the snowflake package's benchmarks ran
	Command    string
	Benchstat  string // how benchstat was run
	SideBySide *sideBySideTable
	CapRows    []capRow
	CostRows   []costRow
	Stat       string // benchstat's summary, or ""
}

// sideBySideTable is BenchmarkSideBySide's figures, each formatted
// "median [min–max]" over the runs, "–" when absent.
type sideBySideTable struct {
	Runs int
	Rows []sideBySideRow
}

// sideBySideRow is one implementation.
type sideBySideRow struct{ Impl, Cap, NS1, Ratio1, NS8, Ratio8 string }

// capRow is BenchmarkCap of one implementation.
type capRow struct{ Impl, Fraction, NS, Relative string }

// costRow is a benchmark of one implementation at a time.
type costRow struct{ Benchmark, Impl, NS, Relative string }

// statements is the statement layer's Go benchmarks.
type statements struct {
	Command   string
	Benchstat string
	Rows      []statementRow
	Stat      string
}

// statementRow is one mode and operation.
type statementRow struct{ Mode, Op, Micros, Floor string }

// missed is a missed target and what explains it: Kind is one of
// "herd-lock-waits", "herd-tail", "overhead", "scale", "round-trips", or
// "" for a target without an explanation.
type missed struct {
	Target, Result, Kind string
	Overhead             *bench.OverheadSummary // for Kind "overhead", nil if not found
	ServerLog            bool                   // the herd's lock waits were read from the server's log
	// RowWaits and ExtendWaits: the library's herd waited on the update
	// chain of a row (Lock:transactionid, Lock:tuple), on the growth of
	// the history table (Lock:extend).
	RowWaits, ExtendWaits bool
}

// summary is what the three lines at the top need beyond the sections.
type summary struct {
	Herd       *herd
	Overhead   *overhead   // nil without cache-mode ratios
	Scale      *scale      // nil without flat ratios
	RoundTrips *roundTrips // nil without server-side counts
	Renewal    *renewal    // nil without a capacity
}

// newReport computes the report's data from its inputs.
func newReport(in *inputs) *report {
	res := in.res
	e := res.Env
	r := &report{
		Script:  in.script,
		Minutes: minutes(max(in.elapsed, time.Duration(e.Elapsed))),
		Command: res.Command,
		Env: environment{
			CPU: e.CPU, Cores: e.Cores, GOMAXPROCS: e.GOMAXPROCS, OS: e.OS, Go: e.GoVersion, Server: e.Server, Where: e.Where,
			Settings: settings(e.Settings), Pgbench: orDash(e.Pgbench), LoadStart: e.LoadStart, LoadEnd: e.LoadEnd,
			Elapsed: time.Duration(e.Elapsed).String(), Started: e.Started.Format(time.RFC3339), Notes: e.Notes,
		},
	}
	for name, err := range res.Failed {
		r.Failed = append(r.Failed, failure{name, err})
	}
	slices.SortFunc(r.Failed, func(a, b failure) int { return strings.Compare(a.Scenario, b.Scenario) })
	for _, v := range res.Verdicts() {
		r.Targets = append(r.Targets, target{Target: v.Target, Result: v.Result, Met: v.Met})
	}
	r.Targets = append(r.Targets, generationTargets(in.snowflake)...)

	r.Herd = newHerd(in)
	r.Overhead = newOverhead(res)
	r.Scale = newScale(res, in.plots["scale"])
	r.RoundTrips = newRoundTrips(res)
	r.Renewal = newRenewal(res)
	r.Generation = newGeneration(in)
	r.Statements = newStatements(in)
	if in.floor != nil {
		r.Floor = newFloor(in.floor)
	}
	for _, v := range res.Verdicts() {
		if !v.Met {
			r.Missed = append(r.Missed, newMissed(in, v))
		}
	}

	r.Summary.Herd = r.Herd
	if r.Overhead != nil && len(r.Overhead.CacheRatios) > 0 {
		r.Summary.Overhead = r.Overhead
	}
	if r.Scale != nil && len(r.Scale.Flat) > 0 {
		r.Summary.Scale = r.Scale
	}
	if r.RoundTrips != nil && r.RoundTrips.Server {
		r.Summary.RoundTrips = r.RoundTrips
	}
	if r.Renewal != nil && r.Renewal.CapacityWorkers > 0 {
		r.Summary.Renewal = r.Renewal
	}
	return r
}

func newHerd(in *inputs) *herd {
	h := in.res.Herd
	if h == nil {
		return nil
	}
	v := &herd{scenario: scenario{in.res.Command, bench.Herd}, Claimers: h.Claimers, IDs: h.IDs,
		Plot: in.plots["herd"], LockWaits: strings.TrimRight(in.lockWaits, "\n"), LockCmd: in.lockCmd}
	sums := h.HerdSummary()
	var lib bench.HerdVariantSummary
	for _, s := range sums {
		if s.Variant == bench.HerdLibrary {
			lib = s
		}
	}
	for _, s := range sums {
		row := herdVariant{HerdVariantSummary: s, P99Ratio: ratioOf(s.P99.Median, lib.P99.Median),
			Waits: waitsOf(s.Events, "Lock:", "LWLock:"), LockWaits: waitsOf(s.Events, "Lock:"),
			RowWaiters: max(s.Events["Lock:tuple"], s.Events["Lock:transactionid"]),
			RowWaits:   waitsOf(s.Events, "Lock:tuple", "Lock:transactionid")}
		v.Variants = append(v.Variants, row)
		switch s.Variant {
		case bench.HerdLibrary:
			v.Library = row
		case bench.HerdSQL:
			v.SQL = row
		case bench.HerdNoSkip:
			v.NoSkip = row
		case bench.HerdAdvisory:
			v.Advisory = row
		}
	}
	for _, row := range []*herdVariant{&v.Library, &v.SQL, &v.NoSkip, &v.Advisory} {
		if row.Variant == "" { // not run
			row.Waits, row.LockWaits, row.RowWaits = waitsOf(nil, "Lock:", "LWLock:"), waitsOf(nil, "Lock:"), waitsOf(nil, "Lock:tuple", "Lock:transactionid")
		}
	}
	v.AdvisoryP99 = ratioOf(v.Advisory.P99.Median, v.Library.P99.Median)
	v.MsPerClaim = v.Library.Wall.Median / float64(h.Claimers)
	return v
}

func newOverhead(res *bench.Results) *overhead {
	o := res.Overhead
	if o == nil {
		return nil
	}
	v := &overhead{scenario: scenario{res.Command, bench.Overhead}, IDs: o.IDs,
		Duration: time.Duration(o.Duration).String(), Chunk: time.Duration(o.Chunk).String(),
		Rows:           o.Summary(),
		PgbenchSeconds: int((time.Duration(o.Chunk) + time.Second - 1) / time.Second),
		PgbenchVars:    dflags(o.Vars),
		Script:         strings.TrimRight(o.Script, "\n"), Floor: strings.TrimRight(o.Floor, "\n")}
	var cache, exec []bench.OverheadSummary
	var libStore []float64
	for _, s := range v.Rows {
		switch s.Mode {
		case bench.ModeCache:
			cache = append(cache, s)
			if s.Ratio.N > 0 {
				v.CacheRatios = append(v.CacheRatios, ratioAt{s.Ratio.Median, s.Concurrency})
				if s.Store.Median > 0 {
					libStore = append(libStore, s.Library.Median/s.Store.Median)
				}
			}
		case bench.ModeExec:
			exec = append(exec, s)
		}
	}
	v.LibStore = bench.NewSpread(libStore)
	if len(cache) > 0 && cache[0].Ratio.N > 0 {
		first, last := cache[0], cache[len(cache)-1]
		v.Reading = &overheadReading{First: first, Last: last,
			FirstLibStore: ratioOf(first.Library.Median, first.Store.Median),
			LastLibStore:  ratioOf(last.Library.Median, last.Store.Median)}
		if len(exec) > 0 && exec[0].SQLRatio.N > 0 {
			e := exec[0]
			v.Reading.Exec = &e
			v.Reading.ExecEven = e.Ratio.N > 0 && e.Ratio.Median >= bench.TargetOverhead && e.Ratio.Median <= 1/bench.TargetOverhead
		}
	}
	return v
}

func newScale(res *bench.Results, plot string) *scale {
	sc := res.Scale
	if sc == nil {
		return nil
	}
	v := &scale{scenario: scenario{res.Command, bench.Scale}, Samples: sc.Samples, ExecMode: sc.ExecMode, Plot: plot}
	sums := sc.Summary()
	base := map[int]float64{}
	for _, s := range sums {
		if s.State == bench.StateHeld && s.Fraction == 0 {
			base[s.IDs] = s.P50.Median
		}
	}
	for _, s := range sums {
		row := scaleRow{ScaleSummary: s}
		if b := base[s.IDs]; b > 0 {
			row.Relative, row.HasBase = s.P50.Median/b, true
		}
		v.Rows = append(v.Rows, row)
	}
	for _, p := range sc.Plans {
		p.Text = strings.TrimRight(p.Text, "\n")
		v.Plans = append(v.Plans, p)
	}
	for _, ids := range sc.Sizes() {
		if r, ok := sc.FlatRatio(ids, 0, 0.999); ok {
			v.Flat = append(v.Flat, flatAt{r.Median, ids})
		}
	}
	return v
}

func newRoundTrips(res *bench.Results) *roundTrips {
	rt := res.RoundTrips
	if rt == nil {
		return nil
	}
	v := &roundTrips{scenario: scenario{res.Command, bench.RoundTrips}, Ops: res.Env.Config.Ops, ExecMode: rt.ExecMode,
		Server: rt.Server, ServerNote: rt.ServerNote, HistoryRows: rt.HistoryRows, Claims: rt.Claims, OneStatement: true}
	row := func(op bench.OpCount) opRow {
		return opRow{OpCount: op, StatementsPerOp: per(op.OwnStatement+op.Other, op.N), RoundTripsPerOp: per(op.Writes, op.N)}
	}
	v.Rows = append(v.Rows, row(rt.First))
	for _, op := range rt.Ops {
		v.Rows = append(v.Rows, row(op))
		v.Later = append(v.Later, row(op))
		if op.N > 0 && (op.Other != 0 || math.Abs(float64(op.OwnStatement)/float64(op.N)-1) >= 0.01) {
			v.OneStatement = false
		}
	}
	var lines []string
	for _, s := range rt.FirstStatements {
		v.FirstCalls += s.Calls
		lines = append(lines, fmt.Sprintf("%d× %s", s.Calls, s.Query))
	}
	slices.Sort(lines)
	v.FirstStatements = strings.Join(lines, "\n")
	return v
}

func newRenewal(res *bench.Results) *renewal {
	rn := res.Renewal
	if rn == nil {
		return nil
	}
	v := &renewal{scenario: scenario{res.Command, bench.Renewal}, IDs: rn.IDs, Duration: time.Duration(rn.Duration).String(), ExecMode: rn.ExecMode}
	workers, rates, p99 := rn.RateSummary()
	for i, w := range workers {
		v.Rows = append(v.Rows, renewalRow{Workers: w, Rate: rates[i], P99: p99[i]})
	}
	v.Capacity, v.CapacityWorkers = rn.Capacity()
	at := func(ttl time.Duration) fleet {
		return fleet{PerHolder: 3 / ttl.Seconds(), Full: bench.Fleet(v.Capacity.Median, ttl), Half: bench.Fleet(v.Capacity.Median/2, ttl)}
	}
	v.TTL10, v.TTL60 = at(10*time.Second), at(time.Minute)
	return v
}

func newGeneration(in *inputs) generation {
	v := generation{Command: in.snowflakeCmd, Benchstat: in.benchstatCmd, Stat: strings.TrimRight(in.snowflakeStat, "\n")}
	g := in.snowflake
	if g == nil {
		return v
	}
	v.Ran = true
	if sb := parseSideBySide(g); sb != nil {
		t := &sideBySideTable{Runs: len(g.values[g.names[0]]["ns/op"])}
		for _, impl := range sb.impls {
			t.Rows = append(t.Rows, sideBySideRow{Impl: impl, Cap: orDash(sb.cap[impl]),
				NS1: orDash(sb.ns["g=1"][impl]), Ratio1: orDash(sb.ratio["g=1"][impl]),
				NS8: orDash(sb.ns["g=8"][impl]), Ratio8: orDash(sb.ratio["g=8"][impl])})
		}
		v.SideBySide = t
	}
	for _, name := range g.names {
		impl := sub(name, "impl")
		if impl == "" {
			continue
		}
		ns, _ := g.median(name, "ns/op")
		raw, haveRaw := g.median(withSub(name, "impl", "bwmarrin"), "ns/op")
		rel := "–"
		if haveRaw && raw > 0 {
			rel = fmt.Sprintf("%.2f", ns/raw)
		}
		lo, hi := g.spread(name, "ns/op")
		if f, ok := g.median(name, "cap-fraction"); ok {
			flo, fhi := g.spread(name, "cap-fraction")
			v.CapRows = append(v.CapRows, capRow{impl, fmt.Sprintf("%.3f [%.3f–%.3f]", f, flo, fhi), fmt.Sprintf("%.1f [%.1f–%.1f]", ns, lo, hi), rel})
			continue
		}
		v.CostRows = append(v.CostRows, costRow{strings.TrimPrefix(strings.Split(name, "/impl=")[0], "Benchmark"), impl, fmt.Sprintf("%.1f [%.1f–%.1f]", ns, lo, hi), rel})
	}
	return v
}

func newStatements(in *inputs) *statements {
	g := in.statements
	if g == nil {
		return nil
	}
	v := &statements{Command: in.statementsCmd, Benchstat: in.benchstatCmd, Stat: strings.TrimRight(in.statementsStat, "\n")}
	for _, name := range g.names {
		ns, _ := g.median(name, "ns/op")
		floor, _ := g.median(withSub(name, "op", "update-floor"), "ns/op")
		lo, hi := g.spread(name, "ns/op")
		rel := "–"
		if floor > 0 {
			rel = fmt.Sprintf("%.2f", ns/floor)
		}
		v.Rows = append(v.Rows, statementRow{sub(name, "mode"), sub(name, "op"), fmt.Sprintf("%.0f [%.0f–%.0f]", ns/1000, lo/1000, hi/1000), rel})
	}
	return v
}

// newMissed classifies a missed target by what explains it.
func newMissed(in *inputs, v bench.Verdict) missed {
	res := in.res
	m := missed{Target: v.Target, Result: v.Result, ServerLog: in.lockWaits != ""}
	switch {
	case strings.HasPrefix(v.Target, "herd: no lock waits"):
		m.Kind = "herd-lock-waits"
		if res.Herd != nil {
			for _, s := range res.Herd.HerdSummary() {
				if s.Variant == bench.HerdVariants[0] {
					m.RowWaits = s.Events["Lock:transactionid"] > 0 || s.Events["Lock:tuple"] > 0
					m.ExtendWaits = s.Events["Lock:extend"] > 0
				}
			}
		}
	case strings.HasPrefix(v.Target, "herd: p99/p50"):
		m.Kind = "herd-tail"
	case strings.HasPrefix(v.Target, "overhead:"):
		m.Kind = "overhead"
		if o := res.Overhead; o != nil {
			for _, s := range o.Summary() {
				if strings.Contains(v.Target, s.Mode+" ") && strings.HasSuffix(v.Target, fmt.Sprintf("concurrency %d", s.Concurrency)) {
					m.Overhead = &s
					break
				}
			}
		}
	case strings.HasPrefix(v.Target, "scale:"):
		m.Kind = "scale"
	case strings.HasPrefix(v.Target, "round trips:"):
		m.Kind = "round-trips"
	}
	return m
}
