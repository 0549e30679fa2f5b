package report

import (
	"math"
	"testing"
	"time"
)

func TestDist(t *testing.T) {
	t.Parallel()
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	d := NewDist(s)
	want := Dist{N: 100, Min: time.Millisecond, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond,
		P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if d != want {
		t.Errorf("NewDist = %+v, want %+v", d, want)
	}
	if got := d.Tail(); math.Abs(got-99.0/50) > 1e-9 {
		t.Errorf("Tail = %v", got)
	}
	if (NewDist(nil) != Dist{}) || (Dist{}).Tail() != 0 {
		t.Error("empty distribution")
	}
	one := NewDist([]time.Duration{7})
	if one.P50 != 7 || one.P99 != 7 || one.Min != 7 || one.Max != 7 {
		t.Errorf("one sample: %+v", one)
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []float64
		want Spread
		text string
	}{
		{nil, Spread{}, "–"},
		{[]float64{2}, Spread{2, 2, 2, 1}, "2.0"},
		{[]float64{3, 1, 2}, Spread{2, 1, 3, 3}, "2.0 [1.0–3.0]"},
		{[]float64{4, 1, 2, 3}, Spread{2.5, 1, 4, 4}, "2.5 [1.0–4.0]"},
	} {
		got := NewSpread(c.in)
		if got != c.want || got.Format("%.1f") != c.text {
			t.Errorf("NewSpread(%v) = %+v %q, want %+v %q", c.in, got, got.Format("%.1f"), c.want, c.text)
		}
	}
}
