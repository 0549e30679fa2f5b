// Package metrictest records, for the tests of the instrumented packages,
// what an OpenTelemetry MeterProvider was given, and reads the instruments
// that the documentation of the module lists.
//
// Its MeterProvider is built on the OpenTelemetry API alone (the noop
// implementation, with the instruments the code uses made to record): the
// SDK, its readers and their dependencies stay out of the module that
// library users require. It aggregates as the SDK's default views do,
// cumulatively: a counter's sum, a histogram's count and sum, a gauge's
// last observation of the latest collection, one point per attribute set,
// and no metric for an instrument without a point.
package metrictest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// DocPath is the document, relative to the library module's root, whose
// table lists every instrument: one row per instrument, "| `name` |
// recorded by | instrument | `unit` | ...".
const DocPath = "docs/metrics.md"

// Reader is a MeterProvider whose measurements a test collects.
type Reader struct {
	Provider metric.MeterProvider

	mu        sync.Mutex
	streams   map[streamKey]*stream
	callbacks map[*registration]bool
}

// New returns a Reader. It starts no goroutine.
func New() *Reader {
	r := &Reader{streams: map[streamKey]*stream{}, callbacks: map[*registration]bool{}}
	r.Provider = provider{r: r}
	return r
}

// Point is one data point: its attributes as text, and its value (a sum's
// or a gauge's value, or a histogram's count of measurements).
type Point struct {
	Attrs map[string]string
	Value float64
	Sum   float64 // of a histogram's measurements
}

// Metric is what was collected of one instrument.
type Metric struct {
	// Kind is "Counter", "UpDownCounter", "Histogram" or "Gauge".
	Kind, Unit, Description string
	Points                  []Point
}

type streamKey struct{ scope, name string }

// stream is the aggregation of one instrument.
type stream struct {
	kind, unit, desc string
	points           map[attribute.Distinct]*point
	observed         bool // a gauge: its points are the latest collection's
}

type point struct {
	attrs      attribute.Set
	value, sum float64
}

// stream returns the stream of the instrument, made on first use: two
// instruments of the same scope and name share it, as in the SDK.
func (r *Reader) stream(scope, name, kind, unit, desc string) *stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := streamKey{scope, name}
	if s, ok := r.streams[k]; ok {
		return s
	}
	s := &stream{kind: kind, unit: unit, desc: desc, points: map[attribute.Distinct]*point{}, observed: kind == "Gauge"}
	r.streams[k] = s
	return s
}

// record applies a measurement to s: a sum's increment, a histogram's
// value, or a gauge's observation.
func (r *Reader) record(s *stream, v float64, attrs attribute.Set) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := s.points[attrs.Equivalent()]
	if !ok {
		p = &point{attrs: attrs}
		s.points[attrs.Equivalent()] = p
	}
	switch s.kind {
	case "Histogram":
		p.value++
		p.sum += v
	case "Gauge":
		p.value = v
	default:
		p.value += v
	}
}

// Collect calls the registered callbacks and returns the metrics of
// instrumentation scope scope, by name.
func (r *Reader) Collect(t testing.TB, scope string) map[string]Metric {
	t.Helper()
	r.mu.Lock()
	regs := make([]*registration, 0, len(r.callbacks))
	for reg := range r.callbacks {
		regs = append(regs, reg)
	}
	for _, s := range r.streams {
		if s.observed {
			clear(s.points)
		}
	}
	r.mu.Unlock()
	for _, reg := range regs {
		if err := reg.f(context.Background(), observer{r: r}); err != nil {
			t.Fatalf("a callback of scope %s: %v", reg.scope, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]Metric{}
	for k, s := range r.streams {
		if k.scope != scope || len(s.points) == 0 {
			continue
		}
		m := Metric{Kind: s.kind, Unit: s.unit, Description: s.desc}
		for _, p := range s.points {
			m.Points = append(m.Points, Point{Attrs: attrs(p.attrs), Value: p.value, Sum: p.sum})
		}
		out[k.name] = m
	}
	return out
}

// provider is the Reader's MeterProvider.
type provider struct {
	noop.MeterProvider
	r *Reader
}

func (p provider) Meter(name string, _ ...metric.MeterOption) metric.Meter {
	return meter{r: p.r, scope: name}
}

// meter makes the instruments the instrumented packages use record into
// the Reader; the others are the noop ones.
type meter struct {
	noop.Meter
	r     *Reader
	scope string
}

func (m meter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c := metric.NewInt64CounterConfig(opts...)
	return int64Sum{r: m.r, s: m.r.stream(m.scope, name, "Counter", c.Unit(), c.Description())}, nil
}

func (m meter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	c := metric.NewInt64UpDownCounterConfig(opts...)
	return int64Sum{r: m.r, s: m.r.stream(m.scope, name, "UpDownCounter", c.Unit(), c.Description())}, nil
}

func (m meter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	c := metric.NewFloat64HistogramConfig(opts...)
	return float64Histogram{r: m.r, s: m.r.stream(m.scope, name, "Histogram", c.Unit(), c.Description())}, nil
}

func (m meter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	c := metric.NewFloat64ObservableGaugeConfig(opts...)
	if len(c.Callbacks()) > 0 {
		return nil, fmt.Errorf("metrictest: %s: callbacks of an instrument are not recorded; use RegisterCallback", name)
	}
	return float64Gauge{s: m.r.stream(m.scope, name, "Gauge", c.Unit(), c.Description())}, nil
}

func (m meter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	c := metric.NewInt64ObservableGaugeConfig(opts...)
	if len(c.Callbacks()) > 0 {
		return nil, fmt.Errorf("metrictest: %s: callbacks of an instrument are not recorded; use RegisterCallback", name)
	}
	return int64Gauge{s: m.r.stream(m.scope, name, "Gauge", c.Unit(), c.Description())}, nil
}

func (m meter) RegisterCallback(f metric.Callback, _ ...metric.Observable) (metric.Registration, error) {
	reg := &registration{r: m.r, f: f, scope: m.scope}
	m.r.mu.Lock()
	m.r.callbacks[reg] = true
	m.r.mu.Unlock()
	return reg, nil
}

type int64Sum struct {
	noop.Int64Counter
	noop.Int64UpDownCounter
	r *Reader
	s *stream
}

func (c int64Sum) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.r.record(c.s, float64(v), metric.NewAddConfig(opts).Attributes())
}

func (c int64Sum) Enabled(context.Context) bool { return true }

type float64Histogram struct {
	noop.Float64Histogram
	r *Reader
	s *stream
}

func (h float64Histogram) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	h.r.record(h.s, v, metric.NewRecordConfig(opts).Attributes())
}

func (h float64Histogram) Enabled(context.Context) bool { return true }

type float64Gauge struct {
	noop.Float64ObservableGauge
	s *stream
}

type int64Gauge struct {
	noop.Int64ObservableGauge
	s *stream
}

// observer records a callback's observations of the Reader's gauges.
type observer struct {
	noop.Observer
	r *Reader
}

func (o observer) ObserveFloat64(obs metric.Float64Observable, v float64, opts ...metric.ObserveOption) {
	if g, ok := obs.(float64Gauge); ok {
		o.r.record(g.s, v, metric.NewObserveConfig(opts).Attributes())
	}
}

func (o observer) ObserveInt64(obs metric.Int64Observable, v int64, opts ...metric.ObserveOption) {
	if g, ok := obs.(int64Gauge); ok {
		o.r.record(g.s, float64(v), metric.NewObserveConfig(opts).Attributes())
	}
}

// registration is a registered callback, until Unregister.
type registration struct {
	noop.Registration
	r     *Reader
	f     metric.Callback
	scope string
}

func (reg *registration) Unregister() error {
	reg.r.mu.Lock()
	defer reg.r.mu.Unlock()
	delete(reg.r.callbacks, reg)
	return nil
}

// attrs returns the attributes of a point as text.
func attrs(set attribute.Set) map[string]string {
	out := make(map[string]string, set.Len())
	for _, kv := range set.ToSlice() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// Sum adds up the values of the points whose attributes include every
// key-value pair of match ("key", "value", ...).
func (m Metric) Sum(match ...string) float64 {
	var sum float64
	for _, p := range m.Select(match...) {
		sum += p.Value
	}
	return sum
}

// Select returns the points whose attributes include every key-value pair
// of match ("key", "value", ...).
func (m Metric) Select(match ...string) []Point {
	var out []Point
next:
	for _, p := range m.Points {
		for i := 0; i+1 < len(match); i += 2 {
			if v, ok := p.Attrs[match[i]]; !ok || v != match[i+1] {
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}

// Doc is an instrument as the documentation lists it.
type Doc struct{ Kind, Unit string }

// Documented returns the instruments of DocPath recorded by recordedBy
// ("Registry" or "Generator"), by name. An instrument documented as
// "Gauge (observable)" has Kind "Gauge".
func Documented(t testing.TB, recordedBy string) map[string]Doc {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, DocPath))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]Doc{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`nodeid.") {
			continue
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		if cell(2) != recordedBy {
			continue
		}
		out[cell(1)] = Doc{Kind: strings.TrimSuffix(cell(3), " (observable)"), Unit: cell(4)}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no instrument recorded by %s", DocPath, recordedBy)
	}
	return out
}

// moduleRoot returns the root of the library module: the nearest
// directory above the working directory whose go.mod is that of
// github.com/nodeid/nodeid (the tests of the nodeid command's module run
// below it too).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == "module github.com/nodeid/nodeid" {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/nodeid/nodeid above the working directory")
		}
		dir = parent
	}
}

// CheckDocumented fails t unless the instruments seen are exactly those
// DocPath lists as recorded by recordedBy, each with the kind and unit
// documented and a description. It returns the documented instruments.
func CheckDocumented(t testing.TB, recordedBy string, seen map[string]Metric) map[string]Doc {
	t.Helper()
	docs := Documented(t, recordedBy)
	for name, m := range seen {
		d, ok := docs[name]
		switch {
		case !ok:
			t.Errorf("instrument %s is not documented in %s", name, DocPath)
		case d.Kind != m.Kind || d.Unit != m.Unit:
			t.Errorf("instrument %s is a %s in %s, documented as a %s in %s", name, m.Kind, m.Unit, d.Kind, d.Unit)
		}
		if m.Description == "" {
			t.Errorf("instrument %s has no description", name)
		}
	}
	for name := range docs {
		if _, ok := seen[name]; !ok {
			t.Errorf("documented instrument %s was not recorded", name)
		}
	}
	return docs
}
