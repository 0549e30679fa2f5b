package report

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Targets of issue 6, checked by Verdicts.
const (
	// TargetHerdTail is the largest p99/p50 of the herd's Acquires.
	TargetHerdTail = 5.0
	// TargetOverhead is the smallest library/pgbench rate ratio.
	TargetOverhead = 0.8
	// TargetScale is the largest ratio of Acquire's p50 with 99.9% of the
	// node IDs held to its p50 with none held.
	TargetScale = 2.0
)

// Verdict is one target checked against the results.
type Verdict struct {
	Target string `json:"target"`
	Result string `json:"result"`
	Met    bool   `json:"met"`
}

// HerdVariantSummary summarises the repetitions of one herd variant.
type HerdVariantSummary struct {
	Variant string
	P50     Spread // milliseconds
	P99     Spread // milliseconds
	Tail    Spread // p99/p50 of each repetition
	Wall    Spread // milliseconds
	// AllOK: every claim of every repetition succeeded with a distinct
	// node ID.
	AllOK       bool
	Failed      int
	LockSamples int // samples that saw a heavyweight-lock wait, over all repetitions
	Samples     int
	MaxWaiters  int
	Events      map[string]int // the most waiters seen per wait event, over all repetitions
}

// HerdSummary summarises every variant, the library first.
func (h *HerdResult) HerdSummary() []HerdVariantSummary {
	var out []HerdVariantSummary
	for _, v := range HerdVariants {
		s := HerdVariantSummary{Variant: v, AllOK: true, Events: map[string]int{}}
		var p50, p99, tail, wall []float64
		for _, r := range h.Runs {
			if r.Variant != v {
				continue
			}
			p50 = append(p50, Millis(r.Latency.P50))
			p99 = append(p99, Millis(r.Latency.P99))
			tail = append(tail, r.Latency.Tail())
			wall = append(wall, Millis(time.Duration(r.Wall)))
			if r.Failed > 0 || r.Distinct != r.Succeeded || r.Succeeded != h.Claimers {
				s.AllOK = false
			}
			s.Failed += r.Failed
			s.LockSamples += r.Waits.LockSamples
			s.Samples += r.Waits.Samples
			s.MaxWaiters = max(s.MaxWaiters, r.Waits.MaxLockWaiters)
			for e, n := range r.Waits.Events {
				s.Events[e] = max(s.Events[e], n)
			}
		}
		if len(p50) == 0 {
			continue
		}
		s.P50, s.P99, s.Tail, s.Wall = NewSpread(p50), NewSpread(p99), NewSpread(tail), NewSpread(wall)
		out = append(out, s)
	}
	return out
}

// OverheadSummary is the spread of the ratios at one exec mode and
// concurrency.
type OverheadSummary struct {
	Mode, PgbenchMode string
	Concurrency       int
	Library           Spread // pairs per second
	Store             Spread // pairs per second through admin.Store alone
	Emptied           Spread // the library's pairs per second on an emptied history
	EmptiedRatio      Spread // emptied / library, per repetition
	Pgbench           Spread // transactions per second
	Floor             Spread
	Ratio             Spread // library / pgbench, per repetition
	SQLRatio          Spread // pgbench claim+release / floor, per repetition
	StoreRatio        Spread // store / pgbench, per repetition
	LibraryCPU        Spread // µs of client CPU per pair
	StoreCPU          Spread
	PgbenchCPU        Spread // µs of client CPU per transaction
	Errors            []string
}

// Summary returns one OverheadSummary per exec mode and concurrency.
func (o *OverheadResult) Summary() []OverheadSummary {
	var out []OverheadSummary
	type key struct {
		mode string
		c    int
	}
	var order []key
	groups := map[key][]OverheadRun{}
	for _, r := range o.Runs {
		k := key{r.Mode, r.Concurrency}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		s := OverheadSummary{Mode: k.mode, PgbenchMode: PgbenchMode[k.mode], Concurrency: k.c}
		var lib, store, emptied, emptiedRatio, pgb, floor, ratio, storeRatio, sqlRatio, libCPU, storeCPU, pgbCPU []float64
		for _, r := range groups[k] {
			if r.Error != "" {
				s.Errors = append(s.Errors, r.Error)
			}
			lib = append(lib, r.Library)
			store = append(store, r.Store)
			if r.Emptied > 0 {
				emptied = append(emptied, r.Emptied)
				if r.Library > 0 {
					emptiedRatio = append(emptiedRatio, r.Emptied/r.Library)
				}
			}
			if r.StoreCPU > 0 {
				storeCPU = append(storeCPU, r.StoreCPU)
			}
			if r.LibraryCPU > 0 {
				libCPU = append(libCPU, r.LibraryCPU)
			}
			if r.PgbenchCPU > 0 {
				pgbCPU = append(pgbCPU, r.PgbenchCPU)
			}
			if r.Pgbench > 0 {
				pgb = append(pgb, r.Pgbench)
				ratio = append(ratio, r.Library/r.Pgbench)
				storeRatio = append(storeRatio, r.Store/r.Pgbench)
			}
			if r.Floor > 0 {
				floor = append(floor, r.Floor)
				if r.Pgbench > 0 {
					sqlRatio = append(sqlRatio, r.Pgbench/r.Floor)
				}
			}
		}
		s.Library, s.Store, s.Pgbench, s.Floor = NewSpread(lib), NewSpread(store), NewSpread(pgb), NewSpread(floor)
		s.Ratio, s.StoreRatio, s.SQLRatio = NewSpread(ratio), NewSpread(storeRatio), NewSpread(sqlRatio)
		s.LibraryCPU, s.StoreCPU, s.PgbenchCPU = NewSpread(libCPU), NewSpread(storeCPU), NewSpread(pgbCPU)
		s.Emptied, s.EmptiedRatio = NewSpread(emptied), NewSpread(emptiedRatio)
		out = append(out, s)
	}
	return out
}

// ScaleSummary is the spread of one range size, fraction and state.
type ScaleSummary struct {
	IDs        int
	Fraction   float64
	State      string
	Held       int
	P50        Spread // milliseconds
	P90        Spread
	P99        Spread
	Checked    int
	Violations int
}

// Summary returns one ScaleSummary per range size, state and fraction,
// ordered by size, state (held, unvacuumed, lapsed) and fraction.
func (s *ScaleResult) Summary() []ScaleSummary {
	type key struct {
		ids   int
		f     float64
		state string
	}
	groups := map[key][]ScalePoint{}
	for _, p := range s.Points {
		k := key{p.IDs, p.Fraction, p.State}
		groups[k] = append(groups[k], p)
	}
	var out []ScaleSummary
	for k, ps := range groups {
		sum := ScaleSummary{IDs: k.ids, Fraction: k.f, State: k.state, Held: ps[0].Held}
		var p50, p90, p99 []float64
		for _, p := range ps {
			p50 = append(p50, Millis(p.Latency.P50))
			p90 = append(p90, Millis(p.Latency.P90))
			p99 = append(p99, Millis(p.Latency.P99))
			sum.Checked += p.OrderChecked
			sum.Violations += p.OrderViolations
		}
		sum.P50, sum.P90, sum.P99 = NewSpread(p50), NewSpread(p90), NewSpread(p99)
		out = append(out, sum)
	}
	rank := map[string]int{StateFresh: -1, StateHeld: 0, StateUnvacuumed: 1, StateLapsed: 2}
	slices.SortFunc(out, func(a, b ScaleSummary) int {
		switch {
		case a.IDs != b.IDs:
			return a.IDs - b.IDs
		case a.State != b.State:
			return rank[a.State] - rank[b.State]
		}
		return int(math.Copysign(1, a.Fraction-b.Fraction))
	})
	return out
}

// Sizes returns the range sizes measured, in ascending order.
func (s *ScaleResult) Sizes() []int {
	var sizes []int
	for _, p := range s.Points {
		if !slices.Contains(sizes, p.IDs) {
			sizes = append(sizes, p.IDs)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// FlatRatio returns, for range size ids, the spread over repetitions of
// p50 at fraction hi over p50 at fraction lo, in the held state; ok is
// false when either was not measured.
func (s *ScaleResult) FlatRatio(ids int, lo, hi float64) (Spread, bool) {
	byRep := map[int][2]time.Duration{}
	for _, p := range s.Points {
		if p.IDs != ids || p.State != StateHeld {
			continue
		}
		v := byRep[p.Rep]
		switch p.Fraction {
		case lo:
			v[0] = p.Latency.P50
		case hi:
			v[1] = p.Latency.P50
		default:
			continue
		}
		byRep[p.Rep] = v
	}
	var r []float64
	for _, v := range byRep {
		if v[0] > 0 && v[1] > 0 {
			r = append(r, float64(v[1])/float64(v[0]))
		}
	}
	return NewSpread(r), len(r) > 0
}

// Capacity returns the highest median renewal rate over the numbers of
// workers, and the number of workers that reached it.
func (r *RenewalResult) Capacity() (Spread, int) {
	best, workers := Spread{}, 0
	for _, w := range r.workers() {
		var rates []float64
		for _, run := range r.Runs {
			if run.Workers == w && run.Error == "" {
				rates = append(rates, run.Rate)
			}
		}
		if s := NewSpread(rates); s.Median > best.Median {
			best, workers = s, w
		}
	}
	return best, workers
}

// RateSummary returns, per number of workers in the order first run, the
// spread of the renewal rates and of the p99 latency in milliseconds.
func (r *RenewalResult) RateSummary() (workers []int, rates, p99 []Spread) {
	for _, w := range r.workers() {
		var rs, ps []float64
		for _, run := range r.Runs {
			if run.Workers == w && run.Error == "" {
				rs = append(rs, run.Rate)
				ps = append(ps, Millis(run.Latency.P99))
			}
		}
		workers, rates, p99 = append(workers, w), append(rates, NewSpread(rs)), append(p99, NewSpread(ps))
	}
	return workers, rates, p99
}

func (r *RenewalResult) workers() []int {
	var ws []int
	for _, run := range r.Runs {
		if !slices.Contains(ws, run.Workers) {
			ws = append(ws, run.Workers)
		}
	}
	slices.Sort(ws)
	return ws
}

// Fleet returns the largest fleet a renewal rate carries at the given TTL:
// each holder renews every TTL/3.
func Fleet(rate float64, ttl time.Duration) int {
	return int(rate * ttl.Seconds() / 3)
}

// Verdicts checks every target the results have figures for.
func (res *Results) Verdicts() []Verdict {
	var out []Verdict
	if h := res.Herd; h != nil {
		for _, s := range h.HerdSummary() {
			if s.Variant != HerdLibrary {
				continue
			}
			out = append(out, Verdict{
				Target: fmt.Sprintf("herd: %d concurrent Acquires on %d node IDs all succeed, all distinct", h.Claimers, h.IDs),
				Result: fmt.Sprintf("%d repetitions, %d failures", s.P50.N, s.Failed),
				Met:    s.AllOK,
			}, Verdict{
				Target: "herd: no lock waits",
				Result: fmt.Sprintf("%d of %d samples saw a heavyweight-lock wait%s", s.LockSamples, s.Samples, eventList(s.Events, "Lock:")),
				Met:    s.LockSamples == 0 && s.Samples > 0,
			}, Verdict{
				Target: fmt.Sprintf("herd: p99/p50 ≤ %.0f", TargetHerdTail),
				Result: fmt.Sprintf("p99/p50 %s (p50 %s ms, p99 %s ms)", s.Tail.Format("%.2f"), s.P50.Format("%.1f"), s.P99.Format("%.1f")),
				Met:    s.Tail.N > 0 && s.Tail.Max <= TargetHerdTail,
			})
		}
	}
	if o := res.Overhead; o != nil {
		for _, s := range o.Summary() {
			if s.Ratio.N == 0 {
				continue
			}
			out = append(out, Verdict{
				Target: fmt.Sprintf("overhead: library ≥ %.1f × pgbench, %s (-M %s), concurrency %d", TargetOverhead, s.Mode, s.PgbenchMode, s.Concurrency),
				Result: fmt.Sprintf("%s (library %s/s, pgbench %s/s)", s.Ratio.Format("%.2f"), s.Library.Format("%.0f"), s.Pgbench.Format("%.0f")),
				Met:    s.Ratio.Median >= TargetOverhead,
			})
		}
	}
	if sc := res.Scale; sc != nil {
		for _, ids := range sc.Sizes() {
			if r, ok := sc.FlatRatio(ids, 0, 0.999); ok {
				out = append(out, Verdict{
					Target: fmt.Sprintf("scale: %d node IDs, p50 at 99.9%% held ≤ %.0f × p50 at 0%%", ids, TargetScale),
					Result: r.Format("%.2f") + "×",
					Met:    r.Median <= TargetScale,
				})
			}
		}
		checked, violations := 0, 0
		for _, p := range sc.Points {
			checked += p.OrderChecked
			violations += p.OrderViolations
		}
		out = append(out, Verdict{
			Target: "scale: lowest-free order holds",
			Result: fmt.Sprintf("%d of %d Acquires got another node ID than the lowest claimable", violations, checked),
			Met:    violations == 0 && checked > 0,
		})
	}
	if rt := res.RoundTrips; rt != nil {
		if rt.Server {
			for _, op := range rt.Ops {
				if op.N == 0 {
					continue
				}
				out = append(out, Verdict{
					Target: "round trips: one statement per " + op.Op,
					Result: fmt.Sprintf("%d %ss: %d executions of its statement, %d other statements (%.3f per operation)",
						op.N, op.Op, op.OwnStatement, op.Other, float64(op.OwnStatement+op.Other)/float64(op.N)),
					Met: op.Other == 0 && math.Abs(float64(op.OwnStatement)/float64(op.N)-1) < 0.01,
				})
			}
		}
	}
	if rn := res.Renewal; rn != nil {
		for _, r := range rn.Pooling() {
			out = append(out, Verdict{
				Target: fmt.Sprintf("renewal through PgBouncer, %d workers: ≥ %g × the direct rate, or where PgBouncer's CPU binds the server's time per renewal ≤ %g × direct",
					r.Workers, TargetPooledRenewal, TargetPooledServerTime),
				Result: fmt.Sprintf("%s× (%s/s against %s/s); server time %s× (%s µs against %s µs); PgBouncer %s µs of CPU per renewal, %s of a core",
					r.Ratio.Format("%.2f"), r.Pooled.Format("%.0f"), r.Direct.Format("%.0f"), r.ServerRatio.Format("%.2f"),
					r.ServerPooled.Format("%.0f"), r.ServerDirect.Format("%.0f"), r.PoolerCPU.Format("%.0f"), r.PoolerShare.Format("%.2f")) +
					boundNote(r),
				Met: r.Met || r.ServerMet,
			})
		}
	}
	return out
}

func eventList(events map[string]int, prefix string) string {
	var names []string
	for e := range events {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			names = append(names, e)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	s := " ("
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s up to %d", n, events[n])
	}
	return s + ")"
}

// Format writes the median and, when repeated, the range, e.g.
// "1.23 [1.10–1.40]".
func (s Spread) Format(verb string) string {
	switch s.N {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf(verb, s.Median)
	}
	return fmt.Sprintf(verb+" ["+verb+"–"+verb+"]", s.Median, s.Min, s.Max)
}

// Millis returns d in milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// boundNote says what the server's CPU and the machine's allow the pooled
// renewals, where they were measured.
func boundNote(r PoolingRow) string {
	var s string
	if r.BackendRatio.N > 0 {
		s += fmt.Sprintf("; server CPU %s× (%s µs against %s µs)", r.BackendRatio.Format("%.2f"), r.BackendPooled.Format("%.0f"), r.BackendDirect.Format("%.0f"))
	}
	if r.Bound.N > 0 {
		s += fmt.Sprintf("; the CPU bound of the pooled rate on this machine %s×", r.Bound.Format("%.2f"))
	}
	return s
}
