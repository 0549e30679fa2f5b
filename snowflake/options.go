package snowflake

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid"
)

// Bounds of WithMaxWait.
const (
	// DefaultMaxWait is how long Generate may wait for the clock when
	// WithMaxWait is not given.
	DefaultMaxWait = 5 * time.Second
	// ShortestMaxWait is the shortest bound WithMaxWait accepts: the wait
	// for the next millisecond after a millisecond's sequence is used up
	// must fit in it. New also refuses a bound shorter than the layout's
	// time unit, for the same reason.
	ShortestMaxWait = time.Millisecond
	// LongestMaxWait is the longest bound WithMaxWait accepts.
	LongestMaxWait = time.Hour
)

// Option configures a Generator. Each option checks its own value, and New
// returns the error of the first bad one, naming the value and the rule; it
// matches nodeid.ErrInvalidOption.
type Option func(*config) error

type config struct {
	layout  Layout
	clock   func() time.Time
	maxWait time.Duration
	meters  metric.MeterProvider
}

// WithLayout sets the bit layout of the IDs. The layout must pass
// Layout.Validate, and New rejects a lease whose node ID does not fit its
// node bits. Default DefaultLayout, bit for bit bwmarrin's.
func WithLayout(l Layout) Option {
	return func(c *config) error {
		if err := l.check(); err != nil {
			return invalid("WithLayout: %v", err)
		}
		c.layout = l
		return nil
	}
}

// WithClock sets the wall clock that stamps IDs. It is read once per ID
// and is used for nothing else: the lease's deadline is always checked
// against time.Now's monotonic reading, and waits are measured with it.
// Tests use it to simulate a skewed or stepping clock. Default time.Now;
// nil is an error.
func WithClock(clock func() time.Time) Option {
	return func(c *config) error {
		if clock == nil {
			return invalid("WithClock: the clock is nil")
		}
		c.clock = clock
		return nil
	}
}

// WithMaxWait bounds how long one Generate call may wait for the wall clock
// to pass the latest millisecond it must stamp after: the previous holder's
// horizon when the clock is behind it (a reused node ID on a host with a
// slower clock), the last stamped time unit after the clock stepped back,
// or the next time unit when one unit's sequence is used up. When the wait
// would exceed the bound, Generate fails at once with an error matching
// nodeid.ErrClockBehind. It must be ShortestMaxWait (1ms) to
// LongestMaxWait (1h), and New refuses a bound shorter than the layout's
// time unit; default DefaultMaxWait (5s).
func WithMaxWait(d time.Duration) Option {
	return func(c *config) error {
		if d < ShortestMaxWait || d > LongestMaxWait {
			return invalid("max wait %s is outside %s to %s", d, ShortestMaxWait, LongestMaxWait)
		}
		c.maxWait = d
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry MeterProvider the Generator
// records its metrics with, under the instrumentation scope
// "github.com/nodeid/nodeid/snowflake". Default: the global one
// (otel.GetMeterProvider), which records nothing until the application
// installs a provider, and then records with it. nil is an error.
//
// Only waits and refusals are counted, never a minted ID, so a successful
// Generate costs the same with metrics as without. The instruments, each
// with the attributes nodeid.table and nodeid.node_range of the lease (as
// a Registry's measurements have them) and nodeid.reason:
//
//   - nodeid.generator.waits (Counter, {wait}): Generate calls that waited
//     for the clock, by reason: sequence_exhausted (a time unit's IDs
//     were used up), clock_behind (the clock was behind the previous
//     holder's horizon, or stepped back).
//   - nodeid.generator.refusals (Counter, {refusal}): Generate calls that
//     minted nothing, by reason: lease_ended (the lease was lost or
//     released: a *nodeid.EndError),
//     beyond_horizon (nodeid.ErrClockAhead), clock_behind
//     (nodeid.ErrClockBehind), time_overflow
//     (nodeid.ErrTimeOverflow).
//
// Both start at 0 for every reason when the Generator is made, with the
// attributes of the counts that follow, so that a query of their increase
// sees the first wait or refusal.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return invalid("WithMeterProvider: the meter provider is nil")
		}
		c.meters = mp
		return nil
	}
}

// optionError is a bad option or argument of New. It matches
// nodeid.ErrInvalidOption.
type optionError struct{ msg string }

func (e *optionError) Error() string { return "snowflake: " + e.msg }
func (e *optionError) Unwrap() error { return nodeid.ErrInvalidOption }

func invalid(format string, args ...any) error {
	return &optionError{msg: fmt.Sprintf(format, args...)}
}
