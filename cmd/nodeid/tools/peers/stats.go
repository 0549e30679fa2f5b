package main

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of lat by the
// nearest rank: the smallest latency that at least p% of them do not
// exceed. It returns 0 for none.
func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// order returns the order in which the n items run in a turn: from item
// turn mod n on, wrapping around, so that over n turns every item runs
// once in every position.
func order(turn, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (turn + i) % n
	}
	return out
}

// Ratio is one ratio of two operations' p50s, and its target if it has
// one.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Target is the target, ">= 3" or "<= 1", or "" for none.
	Target string `json:"target,omitempty"`
	// Met says whether Value meets Target (absent without a target). A
	// missed target is reported, never a failure of the run.
	Met *bool `json:"met,omitempty"`
}

// newRatio returns num/den, judged against the target op (">=", "<=" or
// "" for none) and bound.
func newRatio(name string, num, den time.Duration, op string, bound float64) Ratio {
	r := Ratio{Name: name}
	if den > 0 {
		r.Value = float64(num) / float64(den)
	}
	var met bool
	switch op {
	case ">=":
		met = r.Value >= bound
	case "<=":
		met = r.Value <= bound
	default:
		return r
	}
	r.Target = op + " " + strconv.FormatFloat(bound, 'g', -1, 64)
	r.Met = &met
	return r
}
