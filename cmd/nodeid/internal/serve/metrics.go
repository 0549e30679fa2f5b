package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/nodeid/nodeid"
)

// scopeName is the instrumentation scope of serve's own metrics: its
// requests and the IDs it serves. The lease's are the library's.
const scopeName = "github.com/nodeid/nodeid/cmd/nodeid"

// The instruments of serve: the duration of each request, as
// OpenTelemetry's HTTP semantic conventions name and describe it, and the
// IDs written in answers, which no other instrument counts (a Generator
// counts no minted ID).
const (
	metricRequestDuration = "http.server.request.duration"
	metricServedIDs       = "nodeid.serve.ids"

	attrTable     = "nodeid.table"
	attrNodeRange = "nodeid.node_range"
)

// requestBuckets are the bounds, in seconds, of the request durations:
// from 100 µs, since serve answers most requests within a millisecond
// (the conventions' advised bounds start at 5 ms, where every answer
// would fall in the first bucket), to 10 s, as the conventions' do.
var requestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// The routes of serve, the values of http.route; a request to any other
// path has none.
const (
	routeID      = "/id"
	routeIDs     = "/ids"
	routeHealthz = "/healthz"
	routeMetrics = "/metrics"
)

// knownMethods are the methods that http.request.method takes as they
// are; any other is "_OTHER", so that a client cannot make a series per
// method it invents.
var knownMethods = map[string]bool{
	http.MethodConnect: true, http.MethodDelete: true, http.MethodGet: true, http.MethodHead: true,
	http.MethodOptions: true, http.MethodPatch: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodTrace: true, "QUERY": true,
}

// instruments are serve's own metrics.
type instruments struct {
	duration metric.Float64Histogram
	ids      metric.Int64Counter

	mu   sync.RWMutex
	opts map[requestKey]metric.RecordOption // the attributes of each kind of request, made once
}

// requestKey is what the attributes of a request's duration depend on.
type requestKey struct {
	method, route string // method as http.request.method has it; route "" for none
	status        int
}

// newInstruments creates serve's instruments from mp. Errors of the meter
// go to the OpenTelemetry error handler: metrics never stop serve.
func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(scopeName)
	in := &instruments{opts: map[requestKey]metric.RecordOption{}}
	var errs [2]error
	in.duration, errs[0] = m.Float64Histogram(metricRequestDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(requestBuckets...))
	in.ids, errs[1] = m.Int64Counter(metricServedIDs, metric.WithUnit("{id}"),
		metric.WithDescription("IDs written in answers to /id and /ids."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(fmt.Errorf("nodeid serve: metrics: %w", err))
	}
	return in
}

// request records a request with method, to route ("" if none matched),
// answered with status, that took d.
func (in *instruments) request(method, route string, status int, d time.Duration) {
	if !knownMethods[method] {
		method = "_OTHER"
	}
	k := requestKey{method, route, status}
	in.mu.RLock()
	opt, ok := in.opts[k]
	in.mu.RUnlock()
	if !ok {
		kv := []attribute.KeyValue{
			semconv.HTTPRequestMethodKey.String(method),
			semconv.HTTPResponseStatusCodeKey.Int(status),
			semconv.URLSchemeKey.String("http"),
		}
		if route != "" {
			kv = append(kv, semconv.HTTPRouteKey.String(route))
		}
		if status >= 500 { // a server error, as the conventions have it: its status code
			kv = append(kv, semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
		opt = metric.WithAttributeSet(attribute.NewSet(kv...))
		in.mu.Lock()
		in.opts[k] = opt
		in.mu.Unlock()
	}
	in.duration.Record(context.Background(), d.Seconds(), opt)
}

// leaseIDs returns the attributes of the IDs served under lease: its
// table and node range, as the Registry's measurements have them. Their
// count starts at 0, so that its first increase shows.
func (in *instruments) leaseIDs(lease *nodeid.Lease) metric.AddOption {
	lo, hi := lease.NodeRange()
	opt := metric.WithAttributeSet(attribute.NewSet(
		attribute.String(attrTable, lease.Table()),
		attribute.String(attrNodeRange, strconv.FormatInt(lo, 10)+"-"+strconv.FormatInt(hi, 10)),
	))
	in.ids.Add(context.Background(), 0, opt)
	return opt
}

// served counts n IDs written in an answer, with the attributes of
// leaseIDs.
func (in *instruments) served(n int, opt metric.AddOption) {
	in.ids.Add(context.Background(), int64(n), opt)
}

// statusWriter remembers the status of an answer written by another
// handler.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
