package cli

import (
	"testing"
	"time"
)

func TestRelative(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{12*time.Second + 900*time.Millisecond, "in 12s"},
		{-3*time.Minute - 59*time.Second, "3m ago"},
		{0, "in 0s"},
		{-500 * time.Millisecond, "0s ago"},
		{59 * time.Minute, "in 59m"},
		{47 * time.Hour, "in 47h"},
		{-49 * time.Hour, "2d ago"},
		{-400 * 24 * time.Hour, "400d ago"},
	} {
		if got := Relative(now.Add(tc.d), now); got != tc.want {
			t.Errorf("Relative(now%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := Relative(time.Time{}, now); got != "-" {
		t.Errorf("Relative(zero) = %q, want -", got)
	}
	if got := RelDuration(time.Duration(-1 << 63)); got != "106751d ago" {
		t.Errorf("RelDuration(min) = %q", got)
	}
	if got := Exact(time.Date(2026, 1, 2, 3, 4, 5, 678900000, time.FixedZone("X", 3600))); got != "2026-01-02T02:04:05.678Z" {
		t.Errorf("exact = %q", got)
	}
}

// exactMs and exact write one layout, the library's.
func TestExactMs(t *testing.T) {
	t.Parallel()
	if got, want := ExactMs(1288834974657), "2010-11-04T01:42:54.657Z"; got != want {
		t.Errorf("exactMs = %q, want %q", got, want)
	}
	if got, want := ExactMs(-1), "1969-12-31T23:59:59.999Z"; got != want {
		t.Errorf("ExactMs(-1) = %q, want %q", got, want)
	}
	if got := Exact(time.Time{}); got != "-" {
		t.Errorf("Exact(zero) = %q, want -", got)
	}
}
