package serve

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/holder"
	"github.com/nodeid/nodeid/internal/testkit/metrictest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/snowflake"
)

// sample is one line of Prometheus's text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseExposition reads the samples of a /metrics answer.
func parseExposition(t *testing.T, text string) []sample {
	t.Helper()
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a sample: %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out
}

// find returns the samples of name whose labels include every pair of
// match ("label", "value", ...); a value of "-" requires the label's
// absence.
func find(samples []sample, name string, match ...string) []sample {
	var out []sample
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			v, ok := s.labels[match[i]]
			if match[i+1] == "-" && ok || match[i+1] != "-" && v != match[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// TestServeRequestMetrics: serve's own metrics, as Prometheus reads them
// on /metrics: the duration of each request with its method, route and
// status (OpenTelemetry's HTTP conventions, error.type on a 503, no route
// for an unknown path, _OTHER for an unknown method), and the IDs written
// in answers, with the lease's table and range, from 0 on.
func TestServeRequestMetrics(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	m, metrics, reg := metricsRegistry(t, db, nodeid.WithNodeRange(3, 9))
	s := newIDServer(metrics, m.Provider, false)
	do := func(method, target string) int {
		t.Helper()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w.Code
	}
	scrape := func() []sample {
		t.Helper()
		w := httptest.NewRecorder()
		metrics.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil)) // not through s: not counted
		body, _ := io.ReadAll(w.Body)
		return parseExposition(t, string(body))
	}
	count := func(samples []sample, match ...string) float64 {
		var n float64
		for _, s := range find(samples, "http_server_request_duration_seconds_count", match...) {
			n += s.value
		}
		return n
	}

	if code := do("GET", "/id"); code != http.StatusServiceUnavailable {
		t.Fatalf("/id before the lease: %d", code)
	}
	if ids := find(scrape(), "nodeid_serve_ids_total"); len(ids) != 0 {
		t.Errorf("IDs counted before there is a range to count them under: %v", ids)
	}
	lease, err := reg.Acquire(clitest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := snowflake.New(lease, snowflake.WithMeterProvider(m.Provider))
	if err != nil {
		t.Fatal(err)
	}
	s.state.Store(s.minting(lease, gen))
	m.SetHealth(holder.LeaseHealth(lease, time.Second))
	scope := []string{"nodeid_table", "snowflake_nodes", "nodeid_node_range", "3-9", "otel_scope_name", scopeName}
	if ids := find(scrape(), "nodeid_serve_ids_total", scope...); len(ids) != 1 || ids[0].value != 0 {
		t.Errorf("IDs served before a request: %v, want one series at 0", ids)
	}
	for range 3 {
		do("GET", "/id")
	}
	do("GET", "/ids?count=7")
	do("GET", "/ids?count=0")
	do("GET", "/ids?count=abc")
	do("POST", "/id")
	do("BREW", "/ids?count=2")
	do("GET", "/nope")
	do("GET", "/healthz")
	unusedLease(t, lease)
	if err := lease.Release(clitest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	do("GET", "/ids?count=4")

	got := scrape()
	if ids := find(got, "nodeid_serve_ids_total", scope...); len(ids) != 1 || ids[0].value != 10 {
		t.Errorf("IDs served: %v, want one series of 10 (3 /id and 7 of /ids)", ids)
	}
	get := []string{"http_request_method", "GET", "url_scheme", "http", "otel_scope_name", scopeName}
	for _, c := range []struct {
		match []string
		want  float64
	}{
		{append([]string{"http_route", "/id", "http_response_status_code", "200", "error_type", "-"}, get...), 3},
		{append([]string{"http_route", "/ids", "http_response_status_code", "200"}, get...), 1},
		{append([]string{"http_route", "/ids", "http_response_status_code", "400"}, get...), 2},
		{append([]string{"http_route", "/id", "http_response_status_code", "503", "error_type", "503"}, get...), 1},
		{append([]string{"http_route", "/ids", "http_response_status_code", "503", "error_type", "503"}, get...), 1},
		{[]string{"http_route", "/id", "http_response_status_code", "405", "http_request_method", "POST"}, 1},
		{[]string{"http_route", "/ids", "http_response_status_code", "405", "http_request_method", "_OTHER"}, 1},
		{append([]string{"http_route", "-", "http_response_status_code", "404"}, get...), 1},
		{append([]string{"http_route", "/healthz", "http_response_status_code", "200"}, get...), 1},
		{nil, 12},
	} {
		if n := count(got, c.match...); n != c.want {
			t.Errorf("requests %v: %v, want %v", c.match, n, c.want)
		}
	}
	if docs := metrictest.Documented(t, "nodeid serve"); len(docs) != 1 || docs[metricServedIDs] != (metrictest.Doc{Kind: "Counter", Unit: "{id}"}) {
		t.Errorf("%s documents %v as recorded by nodeid serve, want %s, a Counter of {id}", metrictest.DocPath, docs, metricServedIDs)
	}
	for _, b := range find(got, "http_server_request_duration_seconds_bucket", "http_route", "/id", "http_response_status_code", "200") {
		if b.labels["le"] == "0.0001" {
			return // the bounds start at 100 µs
		}
	}
	t.Errorf("no bucket of 100 µs among %v", find(got, "http_server_request_duration_seconds_bucket", "http_route", "/id"))
}

// unusedLease fails the test if lease ended before the test was done
// with it.
func unusedLease(t *testing.T, lease *nodeid.Lease) {
	t.Helper()
	if err := lease.Err(); err != nil {
		t.Fatalf("the lease ended early: %v", err)
	}
}

// metricsRegistry returns serve's metrics (the provider and the /metrics
// handler) and a Registry on db that records into them, with a table it
// creates and a TTL of 10 s, and opts; both end with the test.
func metricsRegistry(t *testing.T, db *sql.DB, opts ...nodeid.Option) (*holder.Metrics, http.Handler, *nodeid.Registry) {
	t.Helper()
	m, metrics, err := holder.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Provider.Shutdown(context.Background()) })
	reg, err := nodeid.New(db, append([]nodeid.Option{nodeid.WithMeterProvider(m.Provider), nodeid.WithCreateTable(true),
		nodeid.WithTTL(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return m, metrics, reg
}
