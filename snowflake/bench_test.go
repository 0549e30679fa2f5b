package snowflake

// Benchmarks of the generator against a raw github.com/bwmarrin/snowflake
// Node in the same run. Compare with benchstat -col /impl.
//
//	impl=bwmarrin   a raw bwmarrin Node (a mutex, no fencing)
//	impl=open       this generator on a lease whose Check always admits
//	impl=fenced     this generator on a fake lease whose Check is the real
//	                one's: one atomic load and three comparisons
//	impl=metered    fenced, with a real OpenTelemetry SDK meter provider (a
//	                manual reader) instead of the global no-op one
//	impl=counted    metered, and an SDK counter added to per ID: what
//	                counting minted IDs would cost (the generator does not)
//	impl=pglease    this generator on a real *nodeid.Lease from PostgreSQL
//	                (skipped when no database is available)

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/metrictest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// belowCapLayout has 2^20 IDs per millisecond: no benchmark uses up a
// millisecond's sequence, so they measure the cost of a call.
var belowCapLayout = Layout{Origin: TwitterOrigin, NodeBits: 2, StepBits: 20}

// belowCapUnitLayout is belowCapLayout in units of 10 ms: the cost of a
// call with a time unit of several milliseconds.
var belowCapUnitLayout = Layout{Origin: TwitterOrigin, TimeUnit: 10 * time.Millisecond, NodeBits: 2, StepBits: 20}

// rawNode returns a bwmarrin Node with the given widths. NewNode reads and
// writes bwmarrin's package variables, so they are set for the call and
// restored (with the values derived from them) afterwards.
func rawNode(b *testing.B, node int64, nodeBits, stepBits uint8) *bw.Node {
	b.Helper()
	saved := [2]uint8{bw.NodeBits, bw.StepBits}
	bw.NodeBits, bw.StepBits = nodeBits, stepBits
	n, err := bw.NewNode(node)
	bw.NodeBits, bw.StepBits = saved[0], saved[1]
	if _, err := bw.NewNode(0); err != nil { // recompute the derived variables
		b.Fatal(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// pgLeases acquires n leases from the shared test PostgreSQL, or returns
// nil if there is none (the other implementations are still measured).
// They are released when the benchmark ends.
func pgLeases(b *testing.B, n int) []*nodeid.Lease {
	b.Helper()
	srv := pgtest.Shared(&noSkip{TB: b})
	if srv == nil {
		return nil
	}
	db, _ := srv.NewDB(b)
	reg, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithNodeRange(0, 7), nodeid.WithTTL(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = reg.Close() })
	leases := make([]*nodeid.Lease, n)
	for i := range leases {
		if leases[i], err = reg.Acquire(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	return leases
}

// noSkip turns a skip into a no-op, so that a benchmark without a database
// measures the rest.
type noSkip struct{ testing.TB }

func (noSkip) Skipf(string, ...any) {}

type impl struct {
	name string
	gen  func() (bw.ID, error)
}

// impls returns the generators to compare with layout lay; pg holds a
// lease per call, or is nil.
func impls(b *testing.B, lay Layout, pg *nodeid.Lease) []impl {
	raw := rawNode(b, 1, lay.NodeBits, lay.StepBits)
	sdk := metrictest.New().Provider
	counted := mustNew(b, newFake(1, 1, 0), WithLayout(lay), WithMeterProvider(sdk))
	ids, err := sdk.Meter(scopeName).Int64Counter("nodeid.generator.ids")
	if err != nil {
		b.Fatal(err)
	}
	ctx, attrs := context.Background(), []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
		attribute.String(attrTable, fakeTable), attribute.String(attrNodeRange, "0-1023")))}
	out := []impl{
		{"bwmarrin", func() (bw.ID, error) { return raw.Generate(), nil }},
		{"open", mustNew(b, newOpen(1, 1, 0), WithLayout(lay)).Generate},
		{"fenced", mustNew(b, newFake(1, 1, 0), WithLayout(lay)).Generate},
		{"metered", mustNew(b, newFake(1, 1, 0), WithLayout(lay), WithMeterProvider(sdk)).Generate},
		{"counted", func() (bw.ID, error) {
			id, err := counted.Generate()
			ids.Add(ctx, 1, attrs...)
			return id, err
		}},
	}
	if pg != nil {
		g, err := New(pg, WithLayout(lay))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, impl{"pglease", g.Generate})
	}
	return out
}

// run calls gen b.N times in total from the given number of goroutines.
func run(b *testing.B, goroutines int, gen func() (bw.ID, error)) {
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range goroutines {
		n := b.N / goroutines
		if i < b.N%goroutines {
			n++
		}
		wg.Go(func() {
			for range n {
				if _, err := gen(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkCap mints from one goroutine with the default layout, whose
// physical cap is 4096 IDs per millisecond, and reports the sustained rate
// as a fraction of it.
func BenchmarkCap(b *testing.B) {
	var pg *nodeid.Lease
	if l := pgLeases(b, 1); l != nil {
		pg = l[0]
	}
	for _, im := range impls(b, DefaultLayout, pg) {
		b.Run("impl="+im.name, func(b *testing.B) {
			run(b, 1, im.gen)
			perSec := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(perSec/float64(DefaultLayout.PerUnit()*1000), "cap-fraction")
		})
	}
}

// BenchmarkBelowCap measures the cost of a call when the sequence is never
// used up, from 1 goroutine and from 8 contending ones.
func BenchmarkBelowCap(b *testing.B) {
	pg := pgLeases(b, 2)
	for i, goroutines := range []int{1, 8} {
		var lease *nodeid.Lease
		if pg != nil {
			lease = pg[i]
		}
		for _, im := range impls(b, belowCapLayout, lease) {
			b.Run("g="+itoa(goroutines)+"/impl="+im.name, func(b *testing.B) {
				run(b, goroutines, im.gen)
			})
		}
	}
}

// fencedAt returns the index of impl=fenced.
func fencedAt(ims []impl) int {
	return slices.IndexFunc(ims, func(im impl) bool { return im.name == "fenced" })
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

// BenchmarkSideBySide runs the implementations in alternation, in chunks
// of a few milliseconds, so that the load of a shared machine falls on all
// of them alike, and reports medians over the chunks, which a stall of the
// machine in one chunk does not move. One op is one ID from each
// implementation, so the ns/op of the benchmark itself is their sum.
//
//	cap        the default layout, 1 goroutine: "<impl>-cap-fraction" is
//	           the median rate over the cap of 4,096,000 IDs/s
//	cap-js53   the same for JS53, whose cap is 4,000 IDs/s (the raw
//	           bwmarrin Node with its 10 node and 2 step bits)
//	g=1, g=8   belowCapLayout from 1 and 8 goroutines: "<impl>-ns/id" and
//	           "<impl>/bwmarrin", the median ratio of chunks run back to
//	           back (below 1: faster than the raw Node); "metered/fenced"
//	           and "counted/fenced", the same ratio against the generator
//	           without a meter provider: the cost of the metrics, and what
//	           counting every ID would cost
//	unit=10ms  the same from 1 goroutine with belowCapUnitLayout, in units
//	           of 10 ms
func BenchmarkSideBySide(b *testing.B) {
	pg := pgLeases(b, 5)
	lease := func(i int) *nodeid.Lease {
		if pg == nil {
			return nil
		}
		return pg[i]
	}
	for i, lay := range []struct {
		name string
		l    Layout
	}{{"cap", DefaultLayout}, {"cap-js53", JS53}} {
		ims := impls(b, lay.l, lease(3+i)) // 10 node bits: node IDs 3 and 4 fit
		b.Run(lay.name, func(b *testing.B) { capFractions(b, ims, lay.l) })
	}
	for i, c := range []struct {
		name       string
		l          Layout
		goroutines int
	}{{"g=1", belowCapLayout, 1}, {"g=8", belowCapLayout, 8}, {"unit=10ms", belowCapUnitLayout, 1}} {
		ims := impls(b, c.l, lease(i)) // 2 node bits: node IDs 0-2
		b.Run(c.name, func(b *testing.B) { costRatios(b, ims, c.goroutines) })
	}
}

// capFractions mints from one goroutine at lay's cap, in chunks of 50 full
// time units timed from a unit's start to the start of the unit after the
// last ID, so that a chunk that fills every unit takes exactly 50 units,
// and reports each implementation's median rate over the cap.
func capFractions(b *testing.B, ims []impl, lay Layout) {
	chunk, unit := 50*int(lay.PerUnit()), lay.Unit()
	rounds := interleave(b, ims, 0, chunk, unit)
	for i, im := range ims {
		b.ReportMetric(median(rounds, func(r []time.Duration) float64 {
			return float64(chunk) / float64(lay.PerUnit()) * float64(unit) / float64(r[i])
		}), im.name+"-cap-fraction")
	}
}

// costRatios mints below the cap from the given number of goroutines and
// reports each implementation's median ns per ID and its median ratio to
// the raw bwmarrin Node, and the metered and counted generators' to the
// fenced one.
func costRatios(b *testing.B, ims []impl, goroutines int) {
	const chunk = 50_000
	rounds := interleave(b, ims, goroutines, chunk, 0)
	for i, im := range ims {
		b.ReportMetric(median(rounds, func(r []time.Duration) float64 {
			return float64(r[i].Nanoseconds()) / chunk
		}), im.name+"-ns/id")
		if i > 0 {
			b.ReportMetric(median(rounds, func(r []time.Duration) float64 {
				return float64(r[i]) / float64(r[0])
			}), im.name+"/bwmarrin")
		}
		if f := fencedAt(ims); im.name == "metered" || im.name == "counted" {
			b.ReportMetric(median(rounds, func(r []time.Duration) float64 {
				return float64(r[i]) / float64(r[f])
			}), im.name+"/fenced")
		}
	}
}

// interleave mints about b.N IDs with each implementation, chunk IDs at a
// time, rotating the order every round; it returns the time each
// implementation took in each round. With 0 goroutines, it mints from one,
// timing from a boundary of the time unit to the first one after the chunk.
func interleave(b *testing.B, ims []impl, goroutines, chunk int, unit time.Duration) [][]time.Duration {
	var rounds [][]time.Duration
	b.ResetTimer()
	for done := 0; done < b.N || len(rounds) == 0; done += chunk {
		r := make([]time.Duration, len(ims))
		for k := range ims {
			i := (len(rounds) + k) % len(ims)
			if goroutines == 0 {
				start := nextUnit(unit)
				mint(b, 1, chunk, ims[i].gen)
				r[i] = nextUnit(unit).Sub(start)
				continue
			}
			start := time.Now()
			mint(b, goroutines, chunk, ims[i].gen)
			r[i] = time.Since(start)
		}
		rounds = append(rounds, r)
	}
	return rounds
}

// nextUnit waits for the start of the wall clock's next time unit (a
// multiple of unit since 1970, as a layout's units are when its origin is a
// whole number of units) and returns it.
func nextUnit(unit time.Duration) time.Time {
	n := time.Now().UnixNano() / int64(unit)
	for {
		if now := time.Now(); now.UnixNano()/int64(unit) != n {
			return now
		}
	}
}

// median returns the median of f over the rounds.
func median(rounds [][]time.Duration, f func([]time.Duration) float64) float64 {
	v := make([]float64, len(rounds))
	for i, r := range rounds {
		v[i] = f(r)
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// mint calls gen n times in total from the given number of goroutines.
func mint(b *testing.B, goroutines, n int, gen func() (bw.ID, error)) {
	if goroutines == 1 {
		for range n {
			if _, err := gen(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	var wg sync.WaitGroup
	for i := range goroutines {
		k := n / goroutines
		if i < n%goroutines {
			k++
		}
		wg.Go(func() {
			for range k {
				if _, err := gen(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
