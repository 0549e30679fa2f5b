package nodeid

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid/admin"
)

// scopeName is the instrumentation scope of a Registry's metrics: the name
// of the Meter it takes from its MeterProvider.
const scopeName = "github.com/nodeid/nodeid"

// The instruments of a Registry (WithMeterProvider documents them).
const (
	metricLeaseHeld            = "nodeid.lease.held"
	metricLeaseTimeLeft        = "nodeid.lease.time_left"
	metricLeaseLost            = "nodeid.lease.lost"
	metricLeaseRenewals        = "nodeid.lease.renewals"
	metricLeaseRenewalDuration = "nodeid.lease.renewal.duration"
	metricAcquireDuration      = "nodeid.acquire.duration"
	metricAcquireWaiting       = "nodeid.acquire.waiting"
	metricLeaseTTL             = "nodeid.lease.ttl"
	metricRangeSize            = "nodeid.range.size"
	metricQuarantineUntil      = "nodeid.quarantine.until"
)

// The attributes of the measurements. Every measurement has attrTable and,
// once the table's configuration was read, attrNodeRange; only the time
// left and the TTL have attrNodeID, so that no counter or histogram has a
// series per node ID.
const (
	attrTable     = "nodeid.table"      // as given to WithTable
	attrNodeRange = "nodeid.node_range" // "lo-hi"
	attrNodeID    = "nodeid.node_id"
	attrOutcome   = "nodeid.outcome" // of an Acquire or a renewal attempt
	attrCause     = "nodeid.cause"   // of a lease's end
)

// Values of attrOutcome.
const (
	outcomeAcquired      = "acquired"
	outcomeNoneAvailable = "none_available" // ErrNoNodeIDAvailable
	outcomeError         = "error"
	outcomeRenewed       = "renewed" // the deadline moved
	outcomeRetried       = "retried" // failed; another attempt follows if the deadline allows
	outcomeLost          = "lost"    // the lease ended during the attempt
)

// causeDeadline is the value of attrCause of a lease whose local deadline
// passed without a renewal (ErrExpired, as when the database found it
// expired); the other values are the names of causes (errors.go).
const causeDeadline = "deadline"

// durationBuckets are the histogram bounds, in seconds, advised for the
// durations: from a millisecond up to a minute, the default TTL.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// metrics are the instruments of a Registry.
type metrics struct {
	held       metric.Int64UpDownCounter
	lost       metric.Int64Counter
	renewals   metric.Int64Counter
	renewalDur metric.Float64Histogram
	acquireDur metric.Float64Histogram
	waiting    metric.Int64UpDownCounter
	timeLeft   metric.Float64ObservableGauge
	ttl        metric.Float64ObservableGauge
	rangeSize  metric.Int64ObservableGauge
	quarantine metric.Float64ObservableGauge
	reg        metric.Registration // of the gauges' callback; nil if refused
}

// newMetrics creates the instruments of r from mp and registers the
// callback of the gauges. Errors of the meter (a provider that rejects an
// instrument, which then records nothing) go to the OpenTelemetry error
// handler: metrics never stop a Registry from working.
func newMetrics(r *Registry, mp metric.MeterProvider) metrics {
	m := mp.Meter(scopeName)
	var ms metrics
	errs := make([]error, 11)
	ms.held, errs[0] = m.Int64UpDownCounter(metricLeaseHeld, metric.WithUnit("{lease}"),
		metric.WithDescription("Leases held now."))
	ms.lost, errs[1] = m.Int64Counter(metricLeaseLost, metric.WithUnit("{lease}"),
		metric.WithDescription("Leases that ended, by cause."))
	ms.renewals, errs[2] = m.Int64Counter(metricLeaseRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Renewal attempts, by outcome."))
	ms.renewalDur, errs[3] = m.Float64Histogram(metricLeaseRenewalDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of renewal attempts, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ms.acquireDur, errs[4] = m.Float64Histogram(metricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of Acquire calls, waiting included, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ms.waiting, errs[5] = m.Int64UpDownCounter(metricAcquireWaiting, metric.WithUnit("{call}"),
		metric.WithDescription("Acquire calls waiting for a node ID to free up."))
	ms.timeLeft, errs[6] = m.Float64ObservableGauge(metricLeaseTimeLeft, metric.WithUnit("s"),
		metric.WithDescription("Time left until the local deadline of each held lease."))
	ms.ttl, errs[7] = m.Float64ObservableGauge(metricLeaseTTL, metric.WithUnit("s"),
		metric.WithDescription("TTL of each held lease."))
	ms.rangeSize, errs[8] = m.Int64ObservableGauge(metricRangeSize, metric.WithUnit("{node_id}"),
		metric.WithDescription("Node IDs of the range the Registry leases from."))
	ms.quarantine, errs[9] = m.Float64ObservableGauge(metricQuarantineUntil, metric.WithUnit("s"),
		metric.WithDescription("Unix time at which the quarantine that refused the latest claim ends; 0 when none is in force."))
	ms.reg, errs[10] = m.RegisterCallback(r.observe, ms.timeLeft, ms.ttl, ms.rangeSize, ms.quarantine)
	if err := errors.Join(errs...); err != nil {
		otel.Handle(fmt.Errorf("nodeid: metrics: %w", err))
	}
	return ms
}

// unregister stops the callback of the gauges; Close calls it.
func (ms *metrics) unregister() {
	if ms.reg == nil {
		return
	}
	if err := ms.reg.Unregister(); err != nil {
		otel.Handle(fmt.Errorf("nodeid: metrics: %w", err))
	}
}

// attrs returns the attributes of r's measurements with extra appended:
// the table, and the node range once ensure has settled it.
func (r *Registry) attrs(extra ...attribute.KeyValue) metric.MeasurementOption {
	kv := make([]attribute.KeyValue, 0, 2+len(extra))
	kv = append(kv, attribute.String(attrTable, r.cfg.table.Table))
	if r.ranged.Load() {
		kv = append(kv, attribute.String(attrNodeRange, strconv.FormatInt(r.lo, 10)+"-"+strconv.FormatInt(r.hi, 10)))
	}
	return metric.WithAttributes(append(kv, extra...)...)
}

// startAtZero adds 0 to every counter, for every value of its attribute,
// and to the up-down counters, with the attributes later measurements
// carry: the series exist from the moment the node range is known, so that
// increase() sees the first event. ensure calls it once the range is
// settled.
func (r *Registry) startAtZero() {
	ctx := context.Background()
	for _, c := range causes {
		r.metrics.lost.Add(ctx, 0, r.attrs(attribute.String(attrCause, c.name)))
	}
	r.metrics.lost.Add(ctx, 0, r.attrs(attribute.String(attrCause, causeDeadline)))
	for _, o := range []string{outcomeRenewed, outcomeRetried, outcomeLost} {
		r.metrics.renewals.Add(ctx, 0, r.attrs(attribute.String(attrOutcome, o)))
	}
	r.metrics.held.Add(ctx, 0, r.attrs())
	r.metrics.waiting.Add(ctx, 0, r.attrs())
}

// observe is the callback of the gauges: the time left and the TTL of each
// held lease, and, once the node range is known, its size and the end of
// the quarantine that refused the latest claim.
func (r *Registry) observe(_ context.Context, o metric.Observer) error {
	r.mu.Lock()
	leases := make([]*Lease, 0, len(r.leases))
	for l := range r.leases {
		leases = append(leases, l)
	}
	r.mu.Unlock()
	for _, l := range leases {
		if l.Err() == nil {
			attrs := r.attrs(attribute.Int64(attrNodeID, l.NodeID()))
			o.ObserveFloat64(r.metrics.timeLeft, time.Until(l.Deadline()).Seconds(), attrs)
			o.ObserveFloat64(r.metrics.ttl, l.ttl.Seconds(), attrs)
		}
	}
	if !r.ranged.Load() {
		return nil
	}
	attrs := r.attrs()
	o.ObserveInt64(r.metrics.rangeSize, r.hi-r.lo+1, attrs)
	until := 0.0
	if ms := r.quarantineUntil.Load(); ms > time.Now().UnixMilli() {
		until = float64(ms) / 1000
	}
	o.ObserveFloat64(r.metrics.quarantine, until, attrs)
	return nil
}

// recordClaim notes what a claim found of quarantines: the end of the one
// that refused it (Refusal.Quarantined), or none once a claim succeeds.
func (r *Registry) recordClaim(res admin.ClaimResult) {
	switch {
	case res.OK:
		r.quarantineUntil.Store(0)
	case res.Refusal.Quarantined && res.Refusal.Cooling > 0:
		r.quarantineUntil.Store(res.Refusal.Until)
	}
}

// recordAcquire records an Acquire that took d and returned err.
func (r *Registry) recordAcquire(ctx context.Context, d time.Duration, err error) {
	outcome := outcomeAcquired
	switch {
	case errors.Is(err, ErrNoNodeIDAvailable):
		outcome = outcomeNoneAvailable
	case err != nil:
		outcome = outcomeError
	}
	r.metrics.acquireDur.Record(ctx, d.Seconds(), r.attrs(attribute.String(attrOutcome, outcome)))
}

// recordRenewal records a renewal attempt started at t0.
func (l *Lease) recordRenewal(t0 time.Time, outcome string) {
	attrs := l.reg.attrs(attribute.String(attrOutcome, outcome))
	l.reg.metrics.renewals.Add(context.Background(), 1, attrs)
	l.reg.metrics.renewalDur.Record(context.Background(), time.Since(t0).Seconds(), attrs)
}

// recordEnded records a renewal attempt, started at t0, during which the
// lease ended: lost, unless its holder released it.
func (l *Lease) recordEnded(t0 time.Time) {
	if !errors.Is(l.Err(), ErrReleased) {
		l.recordRenewal(t0, outcomeLost)
	}
}

// recordEnd records the end of a held lease, for cause (attrCause).
func (l *Lease) recordEnd(cause string) {
	l.reg.metrics.held.Add(context.Background(), -1, l.reg.attrs())
	l.reg.metrics.lost.Add(context.Background(), 1, l.reg.attrs(attribute.String(attrCause, cause)))
}
