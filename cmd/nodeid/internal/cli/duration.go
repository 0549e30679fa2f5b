package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a duration: Go's syntax (300ms, 1.5s, 2h45m), plus a
// leading whole number of days ("7d", "1d12h"). Negative durations are
// refused: every duration of the command is a length of time.
func ParseDuration(s string) (time.Duration, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("duration %q is empty; write e.g. 30s, 5m, 12h or 7d", in)
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("duration %q is negative", in)
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseInt(strings.TrimPrefix(s[:i], "+"), 10, 64)
		if err != nil || n < 0 || s[:i] == "" {
			return 0, fmt.Errorf("duration %q: days must be a whole number before \"d\", e.g. 7d or 1d12h", in)
		}
		const maxDays = int64(1<<63-1) / int64(24*time.Hour)
		if n > maxDays {
			return 0, fmt.Errorf("duration %q is too long (at most %d days)", in, maxDays)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
		if s[0] == '+' || s[0] == '-' {
			return 0, fmt.Errorf("duration %q: a sign may only lead the duration", in)
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q is not a duration; write e.g. 30s, 5m, 12h or 7d", in)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", in)
	}
	if days > 0 && d > time.Duration(1<<63-1)-days {
		return 0, fmt.Errorf("duration %q is too long", in)
	}
	return days + d, nil
}

// DurationValue is a pflag.Value for a flag parsed by ParseDuration.
type DurationValue struct {
	d        *time.Duration
	text     string // as given, once set
	required bool   // no default: help shows none
}

// NewDurationValue returns the value of a flag that sets *d, whose default
// is def.
func NewDurationValue(d *time.Duration, def time.Duration) *DurationValue {
	*d = def
	return &DurationValue{d: d}
}

// NewRequiredDurationValue is a DurationValue without a default, for a flag
// that must be given: its help shows no "(default 0s)".
func NewRequiredDurationValue(d *time.Duration) *DurationValue {
	*d = 0
	return &DurationValue{d: d, required: true}
}

// Set implements pflag.Value.
func (v *DurationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d, v.text = d, s
	return nil
}

// String returns the duration as given on the command line, else the
// default's Go rendering ("" for a required flag not given).
func (v *DurationValue) String() string {
	if v.text != "" || v.required {
		return v.text
	}
	return v.d.String()
}

// Type implements pflag.Value.
func (v *DurationValue) Type() string { return "duration" }

// Duration returns the duration set, or the default.
func (v *DurationValue) Duration() time.Duration { return *v.d }

// DefaultedDuration is a duration flag whose default is described in words
// ("TTL/6"), or not shown if Def is empty.
type DefaultedDuration struct {
	*DurationValue
	Def string
}

// String returns the duration as given, else Def.
func (d *DefaultedDuration) String() string {
	if d.DurationValue == nil || d.text == "" {
		return d.Def
	}
	return d.DurationValue.String()
}
