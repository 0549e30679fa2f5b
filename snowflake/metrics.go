package snowflake

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid"
)

// scopeName is the instrumentation scope of a Generator's metrics: the name
// of the Meter it takes from its MeterProvider.
const scopeName = "github.com/nodeid/nodeid/snowflake"

// The instruments of a Generator (WithMeterProvider documents them), and
// their attributes: the lease's table and node range, as a Registry's
// measurements have them, and the reason.
const (
	metricWaits    = "nodeid.generator.waits"
	metricRefusals = "nodeid.generator.refusals"

	attrTable     = "nodeid.table"
	attrNodeRange = "nodeid.node_range"
	attrReason    = "nodeid.reason"
)

// Values of attrReason.
const (
	reasonSequenceExhausted = "sequence_exhausted" // a wait for the next time unit
	reasonClockBehind       = "clock_behind"       // a wait, or ErrClockBehind
	reasonLeaseEnded        = "lease_ended"        // a *nodeid.EndError: lost or released
	reasonBeyondHorizon     = "beyond_horizon"     // nodeid.ErrClockAhead
	reasonTimeOverflow      = "time_overflow"      // nodeid.ErrTimeOverflow
)

// instruments are the counters of a Generator, with the attributes of each
// reason made once. Only the slow paths record: waits and refusals.
type instruments struct {
	waits, refusals metric.Int64Counter

	exhausted, behind                metric.AddOption // of waits
	ended, ahead, tooFar, overflowed metric.AddOption // of refusals
}

// newInstruments creates the counters of a generator on l from mp. Errors
// of the meter go to the OpenTelemetry error handler: metrics never stop a
// Generator from working.
func newInstruments(mp metric.MeterProvider, l lease) *instruments {
	m := mp.Meter(scopeName)
	var in instruments
	var errs [2]error
	in.waits, errs[0] = m.Int64Counter(metricWaits, metric.WithUnit("{wait}"),
		metric.WithDescription("Generate calls that waited for the clock, by reason."))
	in.refusals, errs[1] = m.Int64Counter(metricRefusals, metric.WithUnit("{refusal}"),
		metric.WithDescription("Generate calls that minted nothing, by reason."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(fmt.Errorf("snowflake: metrics: %w", err))
	}
	lo, hi := l.NodeRange()
	scope := []attribute.KeyValue{
		attribute.String(attrTable, l.Table()),
		attribute.String(attrNodeRange, strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi, 10)),
	}
	reason := func(r string) metric.AddOption {
		return metric.WithAttributeSet(attribute.NewSet(append(scope, attribute.String(attrReason, r))...))
	}
	in.exhausted, in.behind = reason(reasonSequenceExhausted), reason(reasonClockBehind)
	in.ended, in.ahead, in.tooFar, in.overflowed = reason(reasonLeaseEnded), reason(reasonBeyondHorizon),
		reason(reasonClockBehind), reason(reasonTimeOverflow)
	// Every reason's series starts at 0, so that increase() sees the first
	// wait or refusal: the series of the later measurements, since they
	// carry the same attributes.
	ctx := context.Background()
	for _, opt := range []metric.AddOption{in.exhausted, in.behind} {
		in.waits.Add(ctx, 0, opt)
	}
	for _, opt := range []metric.AddOption{in.ended, in.ahead, in.tooFar, in.overflowed} {
		in.refusals.Add(ctx, 0, opt)
	}
	return &in
}

// waited counts a Generate call that waited for the clock: for the next
// time unit after a used-up one (exhausted), or for a clock behind.
func (in *instruments) waited(exhausted bool) {
	opt := in.behind
	if exhausted {
		opt = in.exhausted
	}
	in.waits.Add(context.Background(), 1, opt)
}

// refused counts a Generate call that failed with err, and returns err.
func (in *instruments) refused(err error) error {
	var opt metric.AddOption
	switch {
	case errors.As(err, new(*nodeid.EndError)):
		opt = in.ended
	case errors.Is(err, nodeid.ErrClockAhead):
		opt = in.ahead
	case errors.Is(err, nodeid.ErrClockBehind):
		opt = in.tooFar
	case errors.Is(err, nodeid.ErrTimeOverflow):
		opt = in.overflowed
	default:
		return err
	}
	in.refusals.Add(context.Background(), 1, opt)
	return err
}
