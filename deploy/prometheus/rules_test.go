// Package prometheus holds the tests of the alert rules, nodeid.rules.yml.
package prometheus

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeid/nodeid/deploy/internal/deploytest"
)

// Rules is the rules file as Prometheus reads it.
type Rules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is an alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func alerts(t *testing.T) []Rule {
	t.Helper()
	var r Rules
	readYAML(t, "nodeid.rules.yml", &r)
	var out []Rule
	for _, g := range r.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("nodeid.rules.yml has no rules")
	}
	return out
}

// TestPromtool: promtool accepts the rules, and every unit test of
// nodeid.rules_test.yml passes.
func TestPromtool(t *testing.T) {
	deploytest.RunPromtool(t, ".", "check", "rules", "nodeid.rules.yml")
	deploytest.RunPromtool(t, ".", "test", "rules", "nodeid.rules_test.yml")
}

// TestEveryAlertTested: nodeid.rules_test.yml has, for every alert, a time
// at which it must fire and one at which it must be silent, and tests no
// alert that the rules do not have.
func TestEveryAlertTested(t *testing.T) {
	var tests struct {
		RuleFiles          []string `json:"rule_files"`
		EvaluationInterval string   `json:"evaluation_interval"`
		Tests              []struct {
			Name          string `json:"name"`
			Interval      string `json:"interval"`
			InputSeries   []any  `json:"input_series"`
			AlertRuleTest []struct {
				EvalTime  string `json:"eval_time"`
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, "nodeid.rules_test.yml", &tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	names := map[string]bool{}
	for _, r := range alerts(t) {
		names[r.Alert] = true
		if !fires[r.Alert] {
			t.Errorf("no test of nodeid.rules_test.yml expects %s to fire", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("no test of nodeid.rules_test.yml expects %s to stay silent", r.Alert)
		}
	}
	for name := range fires {
		if !names[name] {
			t.Errorf("nodeid.rules_test.yml tests %s, which nodeid.rules.yml does not have", name)
		}
	}
	for name := range silent {
		if !names[name] {
			t.Errorf("nodeid.rules_test.yml tests %s, which nodeid.rules.yml does not have", name)
		}
	}
}

// TestAlertsDescribed: every alert has a severity, a summary and a
// runbook_url leading to its heading in docs/metrics.md, which describes
// it; and its expression uses only metrics and labels that nodeid has.
func TestAlertsDescribed(t *testing.T) {
	doc, err := os.ReadFile(deploytest.Path(t, "docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := deploytest.Documented(t)
	alert := regexp.MustCompile(`^NodeID[A-Za-z]+$`)
	seen := map[string]bool{}
	for _, r := range alerts(t) {
		if !alert.MatchString(r.Alert) || seen[r.Alert] {
			t.Errorf("alert %q: not a unique NodeID... name", r.Alert)
		}
		seen[r.Alert] = true
		switch r.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		if r.Annotations["summary"] == "" {
			t.Errorf("%s: no summary", r.Alert)
		}
		want := "https://github.com/nodeid/nodeid/blob/main/docs/metrics.md#" + strings.ToLower(r.Alert)
		if r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %s", r.Alert, r.Annotations["runbook_url"], want)
		}
		if !strings.Contains(string(doc), "\n### "+r.Alert+"\n") {
			t.Errorf("%s: docs/metrics.md has no heading ### %s", r.Alert, r.Alert)
		}
		deploytest.CheckMetricNames(t, r.Alert, r.Expr, documented)
	}
	for _, l := range deploytest.Labels {
		if attr, ok := strings.CutPrefix(l, "nodeid_"); ok && !strings.Contains(string(doc), "`nodeid."+attr+"`") {
			t.Errorf("label %s: docs/metrics.md has no attribute nodeid.%s", l, attr)
		}
	}
}
