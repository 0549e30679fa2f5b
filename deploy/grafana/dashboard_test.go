package grafana

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeid/nodeid/deploy/internal/deploytest"
)

var update = flag.Bool("update", false, "write nodeid.json from Dashboard")

// TestUpToDate: nodeid.json is what Dashboard generates (go test
// ./grafana -update writes it).
func TestUpToDate(t *testing.T) {
	want, err := Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("nodeid.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("nodeid.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("nodeid.json is not what dashboard.go generates: run go test ./grafana -update in deploy/")
	}
}

// target is a query of a panel of nodeid.json.
type target struct {
	panel, refID, expr string
}

// targets returns the queries of the committed dashboard, and fails t for
// a panel without a title, a description or a query.
func targets(t *testing.T) (out []target, titles []string) {
	t.Helper()
	b, err := os.ReadFile("nodeid.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			ID          int    `json:"id"`
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: a title, a description and a query are needed", p.ID, p.Title)
		}
		titles = append(titles, p.Title)
		for _, q := range p.Targets {
			out = append(out, target{fmt.Sprintf("panel %d %q", p.ID, p.Title), q.RefID, q.Expr})
		}
	}
	return out, titles
}

// TestDescribed: docs/metrics.md describes every panel, under its title,
// and every query uses only metrics that nodeid has.
func TestDescribed(t *testing.T) {
	doc, err := os.ReadFile(deploytest.Path(t, "docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	queries, titles := targets(t)
	for _, title := range titles {
		if !strings.Contains(string(doc), "\n- **"+title+".**") {
			t.Errorf("docs/metrics.md does not describe the panel %q (a line \"- **%s.** ...\")", title, title)
		}
	}
	documented := deploytest.Documented(t)
	for _, q := range queries {
		deploytest.CheckMetricNames(t, q.panel, q.expr, documented)
	}
}

// series are what a scrape of one nodeid serve pod and one pod under
// nodeid run gives, over 11 minutes: the names and labels the exporter
// writes (otel_scope_* included), the target's labels from a
// ServiceMonitor, and the metrics the dashboard needs of nodeid serve.
var series = func() []map[string]string {
	serve := `job="nodeid-serve", instance="10.0.0.1:8080", namespace="ids", nodeid_table="snowflake_nodes", nodeid_node_range="0-1023"`
	run := `job="orders", instance="10.0.1.1:9464", namespace="orders", nodeid_table="snowflake_nodes", nodeid_node_range="0-1023"`
	registry := `, otel_scope_name="github.com/nodeid/nodeid"`
	generator := `, otel_scope_name="github.com/nodeid/nodeid/snowflake"`
	http := `job="nodeid-serve", instance="10.0.0.1:8080", namespace="ids", http_request_method="GET", url_scheme="http", otel_scope_name="github.com/nodeid/nodeid/cmd/nodeid"`
	var out []map[string]string
	add := func(s, values string) { out = append(out, map[string]string{"series": s, "values": values}) }
	for _, target := range []string{serve, run} {
		add(`nodeid_lease_held{`+target+registry+`}`, `1x10`)
		add(`nodeid_range_size{`+target+registry+`}`, `1024x10`)
		add(`nodeid_acquire_waiting{`+target+registry+`}`, `0x10`)
		add(`nodeid_quarantine_until_seconds{`+target+registry+`}`, `0x10`)
		add(`nodeid_lease_time_left_seconds{`+target+registry+`, nodeid_node_id="0"}`, `54 44 39 54 44 39 54 44 39 54 44`)
		add(`nodeid_lease_ttl_seconds{`+target+registry+`, nodeid_node_id="0"}`, `60x10`)
		for _, cause := range []string{"taken_over", "expired", "deadline", "released", "evicted", "failover"} {
			add(`nodeid_lease_lost_total{`+target+registry+`, nodeid_cause="`+cause+`"}`, `0x10`)
		}
		for _, outcome := range []string{"retried", "lost"} {
			add(`nodeid_lease_renewals_total{`+target+registry+`, nodeid_outcome="`+outcome+`"}`, `0x10`)
		}
		add(`nodeid_lease_renewals_total{`+target+registry+`, nodeid_outcome="renewed"}`, `0+3x10`)
		add(`nodeid_lease_renewal_duration_seconds_count{`+target+registry+`, nodeid_outcome="renewed"}`, `0+3x10`)
		add(`nodeid_lease_renewal_duration_seconds_sum{`+target+registry+`, nodeid_outcome="renewed"}`, `0+0.006x10`)
		for _, le := range []string{"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"} {
			values := `0+3x10`
			if le == "0.001" {
				values = `0+1x10`
			}
			add(`nodeid_lease_renewal_duration_seconds_bucket{`+target+registry+`, nodeid_outcome="renewed", le="`+le+`"}`, values)
		}
		add(`nodeid_acquire_duration_seconds_count{`+target+registry+`, nodeid_outcome="acquired"}`, `1x10`)
	}
	for _, reason := range []string{"sequence_exhausted", "clock_behind"} {
		add(`nodeid_generator_waits_total{`+serve+generator+`, nodeid_reason="`+reason+`"}`, `0x10`)
	}
	for _, reason := range []string{"lease_ended", "beyond_horizon", "clock_behind", "time_overflow"} {
		add(`nodeid_generator_refusals_total{`+serve+generator+`, nodeid_reason="`+reason+`"}`, `0x10`)
	}
	add(`nodeid_serve_ids_total{`+serve+`, otel_scope_name="github.com/nodeid/nodeid/cmd/nodeid"}`, `0+6000x10`)
	for _, route := range []string{"/id", "/ids"} {
		add(`http_server_request_duration_seconds_count{`+http+`, http_route="`+route+`", http_response_status_code="200"}`, `0+600x10`)
		for _, le := range []string{"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "+Inf"} {
			add(`http_server_request_duration_seconds_bucket{`+http+`, http_route="`+route+`", http_response_status_code="200", le="`+le+`"}`, `0+600x10`)
		}
	}
	return out
}()

// TestQueriesReturnData runs every query of the dashboard in promtool on
// the series above, and requires each to return data: as a rule, each is
// an alert on its absence that must stay silent. $table is every table;
// $__rate_interval is 5 minutes.
func TestQueriesReturnData(t *testing.T) {
	deploytest.Promtool(t) // skips before any work if it is missing
	queries, _ := targets(t)
	if len(queries) < 10 {
		t.Fatalf("%d queries in nodeid.json", len(queries))
	}
	sub := strings.NewReplacer(`$table`, `.*`, `$__rate_interval`, `5m`)
	type rule struct {
		Alert string `json:"alert"`
		Expr  string `json:"expr"`
	}
	type alertTest struct {
		EvalTime  string `json:"eval_time"`
		Alertname string `json:"alertname"`
		ExpAlerts []any  `json:"exp_alerts"`
	}
	var rules []rule
	var checks []alertTest
	for i, q := range queries {
		name := fmt.Sprintf("Query%02d", i+1)
		t.Logf("%s: %s %s: %s", name, q.panel, q.refID, sub.Replace(q.expr))
		rules = append(rules, rule{name, "absent(" + sub.Replace(q.expr) + ")"})
		checks = append(checks, alertTest{"10m", name, []any{}})
	}
	dir := t.TempDir()
	write := func(name string, v any) {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("queries.yml", map[string]any{"groups": []any{map[string]any{"name": "queries", "rules": rules}}})
	write("queries_test.yml", map[string]any{
		"rule_files":          []string{"queries.yml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval":        "1m",
			"input_series":    series,
			"alert_rule_test": checks,
		}},
	})
	deploytest.RunPromtool(t, dir, "check", "rules", "queries.yml")
	out := deploytest.RunPromtool(t, dir, "test", "rules", "queries_test.yml")
	t.Log(out)
}
