package report

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a distribution of latencies.
type Dist struct {
	N   int           `json:"n"`
	Min time.Duration `json:"min_ns"`
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// NewDist summarises samples; it sorts them in place.
func NewDist(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	slices.Sort(samples)
	return Dist{
		N:   len(samples),
		Min: samples[0],
		P50: quantile(samples, 0.50),
		P90: quantile(samples, 0.90),
		P99: quantile(samples, 0.99),
		Max: samples[len(samples)-1],
	}
}

// quantile returns the q-quantile of sorted samples: the smallest sample
// with at least a fraction q of the samples at or below it.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Tail returns P99/P50, or 0 when P50 is 0.
func (d Dist) Tail() float64 { return ratio(float64(d.P99), float64(d.P50)) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Spread is the median, minimum and maximum of repeated measurements of one
// figure.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// NewSpread summarises values, in any order.
func NewSpread(values []float64) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}
}
