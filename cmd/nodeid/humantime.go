package main

import (
	"fmt"
	"time"

	"github.com/nodeid/nodeid/internal/timefmt"
)

// exact formats t as the library's messages do (timefmt.Layout: UTC, to the
// millisecond), or "-" for the zero time.
func exact(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return timefmt.Time(t)
}

// exactMs formats unix milliseconds like exact.
func exactMs(ms int64) string { return timefmt.Time(time.UnixMilli(ms)) }

// relative describes t as seen at now: "in 12s", "3m ago". "-" for the zero
// time.
func relative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return relDuration(t.Sub(now))
}

// relDuration describes an offset from now: positive in the future.
func relDuration(d time.Duration) string {
	if d >= 0 {
		return "in " + span(d)
	}
	if d == -d { // math.MinInt64 has no positive counterpart
		return span(time.Duration(1<<63-1)) + " ago"
	}
	return span(-d) + " ago"
}

// span renders a non-negative duration in its largest whole unit, truncated:
// 59s, 3m, 5h (up to 2 days), 12d.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dd", d/(24*time.Hour))
}
