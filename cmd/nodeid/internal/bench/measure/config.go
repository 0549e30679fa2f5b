package measure

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/postgres"
)

// Config selects what Run measures and how hard. DefaultConfig gives the
// settings of the report; Validate names the first bad value.
type Config struct {
	// Only lists the scenarios to run; empty means all.
	Only []string
	// Repeat is how many times each measurement is repeated, interleaved
	// with the others it is compared with, to show the spread.
	Repeat int

	// HerdClaimers is the number of concurrent Acquire calls of the herd,
	// each on its own connection; HerdIDs the size of the node range.
	HerdClaimers, HerdIDs int
	// HerdVariants lists the variants of the herd to run (see
	// HerdVariants); empty means all.
	HerdVariants []string

	// Concurrency lists the concurrencies of the overhead scenario.
	Concurrency []int
	// Duration is the length of each throughput run: of each side of the
	// overhead comparison per repetition, which the sides spend taking
	// turns of about 2s (pgbench runs whole seconds, at least 1s), and of
	// each renewal-load run.
	Duration time.Duration
	// ExecModes lists the pgx exec modes the library is measured in.
	ExecModes []string
	// Pgbench is the pgbench program; the overhead scenario measures the
	// library alone, and says so, when it cannot be found.
	Pgbench string

	// ScaleIDs lists the node-range sizes of the scale scenario; Held the
	// fractions of node IDs held by live leases; Samples the number of
	// Acquire calls timed at each.
	ScaleIDs []int
	Held     []float64
	Samples  int

	// Ops is the number of Acquires, Releases and renewals whose
	// statements are counted.
	Ops int

	// RenewWorkers lists the numbers of goroutines, each with its own
	// connection, that renew leases; RenewIDs is how many leases they
	// renew in turn.
	RenewWorkers []int
	RenewIDs     int

	// Progress receives a line per step, or nothing if nil.
	Progress io.Writer
}

// DefaultConfig returns the settings of docs/BENCHMARKS.md, with one
// repetition.
func DefaultConfig() Config {
	return Config{
		Repeat:       1,
		HerdClaimers: 512,
		HerdIDs:      1024,
		Concurrency:  []int{1, 8, 32},
		Duration:     6 * time.Second,
		ExecModes:    []string{report.ModeCache, report.ModeExec},
		Pgbench:      "pgbench",
		ScaleIDs:     []int{1024, 65536},
		Held:         []float64{0, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999},
		Samples:      500,
		Ops:          10000,
		RenewWorkers: []int{4, 16, 64},
		RenewIDs:     65536,
	}
}

// Limits of a Config.
const (
	// MaxClaimers bounds HerdClaimers, Concurrency and RenewWorkers: each
	// is a connection of its own.
	MaxClaimers = 4096
	// MaxRepeat bounds Repeat.
	MaxRepeat = 20
	// MinDuration and MaxDuration bound Duration.
	MinDuration = 100 * time.Millisecond
	MaxDuration = 10 * time.Minute
	// MaxSamples bounds Samples and Ops.
	MaxSamples = 1_000_000
)

// FieldError is a bad field of a Config: the field, as named in Config, its
// value and the rule it breaks.
type FieldError struct {
	Field string
	Value string
	Rule  string
}

// Error names the field, its value and the rule, e.g. "herd claimers 0:
// it must be 1 to 4096".
func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", fieldLabels[e.Field], e.Rule)
	}
	return fmt.Sprintf("%s %s: %s", fieldLabels[e.Field], e.Value, e.Rule)
}

var fieldLabels = map[string]string{
	"Only": "scenario", "Repeat": "repeat", "HerdClaimers": "herd claimers", "HerdIDs": "herd node IDs", "HerdVariants": "herd variant",
	"Duration": "duration", "Concurrency": "concurrency", "ExecModes": "exec mode", "Pgbench": "pgbench program",
	"ScaleIDs": "scale node IDs", "Held": "held fraction", "Samples": "samples", "Ops": "operations",
	"RenewWorkers": "renewal workers", "RenewIDs": "renewal node IDs",
	"Iterations": "floor iterations", "LargeIDs": "floor large range", "Drift": "drift claims",
}

func bad(field string, value any, format string, args ...any) error {
	v := ""
	if value != nil {
		v = fmt.Sprint(value)
	}
	return &FieldError{Field: field, Value: v, Rule: fmt.Sprintf(format, args...)}
}

// NewFieldError returns the *FieldError of field (as named in Config or
// floor.FloorConfig), its value (nil for none) and the rule it breaks.
func NewFieldError(field string, value any, format string, args ...any) error {
	return bad(field, value, format, args...)
}

// Validate checks every field and returns a *FieldError naming the first
// bad value and the rule it breaks.
func (c Config) Validate() error {
	for _, s := range c.Only {
		if !slices.Contains(report.Scenarios, s) {
			return bad("Only", fmt.Sprintf("%q", s), "it must be one of %s", strings.Join(report.Scenarios, ", "))
		}
	}
	for _, v := range c.HerdVariants {
		if !slices.Contains(report.HerdVariants, v) {
			return bad("HerdVariants", fmt.Sprintf("%q", v), "it must be one of %s", strings.Join(report.HerdVariants, ", "))
		}
	}
	maxIDs := int(postgres.MaxNode + 1)
	switch {
	case c.Repeat < 1 || c.Repeat > MaxRepeat:
		return bad("Repeat", c.Repeat, "it must be 1 to %d", MaxRepeat)
	case c.HerdClaimers < 1 || c.HerdClaimers > MaxClaimers:
		return bad("HerdClaimers", c.HerdClaimers, "it must be 1 to %d", MaxClaimers)
	case c.HerdIDs < c.HerdClaimers || c.HerdIDs > maxIDs:
		return bad("HerdIDs", c.HerdIDs, "it must be at least the %d claimers and at most %d", c.HerdClaimers, maxIDs)
	case c.Duration < MinDuration || c.Duration > MaxDuration:
		return bad("Duration", c.Duration, "it must be %s to %s", MinDuration, MaxDuration)
	case len(c.Concurrency) == 0:
		return bad("Concurrency", nil, "give at least one")
	case len(c.ExecModes) == 0:
		return bad("ExecModes", nil, "give at least one of %s, %s", report.ModeCache, report.ModeExec)
	case len(c.ScaleIDs) == 0:
		return bad("ScaleIDs", nil, "give at least one range size")
	case len(c.Held) == 0:
		return bad("Held", nil, "give at least one")
	case c.Samples < 1 || c.Samples > MaxSamples:
		return bad("Samples", c.Samples, "it must be 1 to %d", MaxSamples)
	case c.Ops < 1 || c.Ops > MaxSamples:
		return bad("Ops", c.Ops, "it must be 1 to %d", MaxSamples)
	case len(c.RenewWorkers) == 0:
		return bad("RenewWorkers", nil, "give at least one")
	case c.RenewIDs < 1 || c.RenewIDs > maxIDs:
		return bad("RenewIDs", c.RenewIDs, "it must be 1 to %d", maxIDs)
	case c.Pgbench == "":
		return bad("Pgbench", nil, "the name is empty")
	}
	for _, n := range c.Concurrency {
		switch {
		case n < 1 || n > MaxClaimers:
			return bad("Concurrency", n, "it must be 1 to %d", MaxClaimers)
		case n > postgres.DefaultMaxNode+1:
			return bad("Concurrency", n, "it must be at most %d, the node IDs of the overhead table", postgres.DefaultMaxNode+1)
		}
	}
	for _, m := range c.ExecModes {
		if _, ok := report.PgbenchMode[m]; !ok {
			return bad("ExecModes", fmt.Sprintf("%q", m), "it must be %s or %s", report.ModeCache, report.ModeExec)
		}
	}
	for _, n := range c.ScaleIDs {
		if n < 2 || n > maxIDs {
			return bad("ScaleIDs", n, "a range must hold 2 to %d node IDs", maxIDs)
		}
	}
	for _, f := range c.Held {
		if !(f >= 0 && f < 1) { // also rejects NaN
			return bad("Held", f, "it must be at least 0 and below 1 (some node ID must stay free)")
		}
	}
	for _, n := range c.RenewWorkers {
		switch {
		case n < 1 || n > MaxClaimers:
			return bad("RenewWorkers", n, "it must be 1 to %d", MaxClaimers)
		case n > c.RenewIDs:
			return bad("RenewWorkers", n, "it must be at most the %d leases renewed", c.RenewIDs)
		}
	}
	return nil
}

// runs reports whether scenario s is selected.
func (c Config) runs(s string) bool { return len(c.Only) == 0 || slices.Contains(c.Only, s) }
