package cli

import (
	"fmt"
	"time"
)

// Exact formats t as the library's messages do (TimeLayout: UTC, to the
// millisecond), or "-" for the zero time.
func Exact(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(TimeLayout)
}

// ExactMs formats unix milliseconds like Exact.
func ExactMs(ms int64) string { return Exact(time.UnixMilli(ms)) }

// Relative describes t as seen at now: "in 12s", "3m ago". "-" for the zero
// time.
func Relative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return RelDuration(t.Sub(now))
}

// RelDuration describes an offset from now: positive in the future.
func RelDuration(d time.Duration) string {
	if d >= 0 {
		return "in " + Span(d)
	}
	if d == -d { // math.MinInt64 has no positive counterpart
		return Span(time.Duration(1<<63-1)) + " ago"
	}
	return Span(-d) + " ago"
}

// Span renders a non-negative duration in its largest whole unit, truncated:
// 59s, 3m, 5h (up to 2 days), 12d.
func Span(d time.Duration) string {
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

// TimeLayout is the layout of an exact time in the library's messages and
// the command's tables.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"
