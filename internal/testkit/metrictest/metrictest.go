// Package metrictest reads, for the tests of the instrumented packages, what
// an OpenTelemetry SDK MeterProvider with a manual reader collected, and the
// instruments that the documentation of the module lists.
package metrictest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// DocPath is the document, relative to the module's root, whose table lists
// every instrument: one row per instrument, "| `name` | recorded by |
// instrument | `unit` | ...".
const DocPath = "docs/metrics.md"

// Reader is an SDK MeterProvider whose measurements a test collects.
type Reader struct {
	Provider *sdkmetric.MeterProvider
	manual   *sdkmetric.ManualReader
}

// New returns a Reader with a manual reader. It starts no goroutine.
func New() *Reader {
	m := sdkmetric.NewManualReader()
	return &Reader{Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(m)), manual: m}
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

// Collect collects the metrics of instrumentation scope scope, by name.
func (r *Reader) Collect(t testing.TB, scope string) map[string]Metric {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.manual.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]Metric{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			continue
		}
		for _, m := range sm.Metrics {
			got := Metric{Unit: m.Unit, Description: m.Description}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				got.Kind = "UpDownCounter"
				if d.IsMonotonic {
					got.Kind = "Counter"
				}
				for _, p := range d.DataPoints {
					got.Points = append(got.Points, Point{Attrs: attrs(p.Attributes), Value: float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				got.Kind = "Gauge"
				for _, p := range d.DataPoints {
					got.Points = append(got.Points, Point{Attrs: attrs(p.Attributes), Value: p.Value})
				}
			case metricdata.Gauge[int64]:
				got.Kind = "Gauge"
				for _, p := range d.DataPoints {
					got.Points = append(got.Points, Point{Attrs: attrs(p.Attributes), Value: float64(p.Value)})
				}
			case metricdata.Histogram[float64]:
				got.Kind = "Histogram"
				for _, p := range d.DataPoints {
					got.Points = append(got.Points, Point{Attrs: attrs(p.Attributes), Value: float64(p.Count), Sum: p.Sum})
				}
			default:
				t.Fatalf("%s: unexpected aggregation %T", m.Name, m.Data)
			}
			out[m.Name] = got
		}
	}
	return out
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

// moduleRoot returns the nearest directory above the working directory
// that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
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
