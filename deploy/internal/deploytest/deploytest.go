// Package deploytest has what the tests of the operator pack share: the
// repository's root, promtool, and the Prometheus names of nodeid's
// metrics as docs/metrics.md lists them.
package deploytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// EnvRequire set to 1 makes a missing tool a failure instead of a skip, as
// it makes a missing database one for the module's tests (CI sets it).
const EnvRequire = "NODEID_TEST_REQUIRE_DB"

// Root returns the repository's root: the nearest directory above the
// test's working directory (its package's) that holds go.work. It does not
// use the source's path, which -trimpath removes from the binary.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.work above the test's directory: run the tests from a checkout")
		}
		dir = up
	}
}

// Path returns the path of a file given relative to the repository's root,
// with slashes.
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Root(t), filepath.FromSlash(rel))
}

// Promtool returns the path of promtool. Without it the test is skipped,
// or fails when EnvRequire is 1.
func Promtool(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("promtool is not on PATH and %s=1: install it (Debian: apt-get install prometheus)", EnvRequire)
		}
		t.Skip("promtool is not on PATH (Debian: apt-get install prometheus)")
	}
	return path
}

// RunPromtool runs promtool with args in dir and returns its output; it
// fails t, with the output, if promtool fails.
func RunPromtool(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Labels are the labels of nodeid's series that the rules and the
// dashboard use: the attributes of docs/metrics.md and those of the HTTP
// server metrics of nodeid serve (OpenTelemetry's HTTP conventions).
var Labels = []string{
	"nodeid_table", "nodeid_node_range", "nodeid_node_id", "nodeid_cause", "nodeid_outcome", "nodeid_reason",
	"http_route", "http_response_status_code", "http_request_method",
}

// New are the metrics that the rules and the dashboard use and that the
// instruments tables of docs/metrics.md do not list by a nodeid.* name, by
// Prometheus name, with what each is.
var New = map[string]string{
	"http_server_request_duration_seconds_bucket": "Histogram http.server.request.duration of nodeid serve, s, http.request.method, http.route, http.response.status_code",
	"http_server_request_duration_seconds_count":  "(the same histogram)",
	"http_server_request_duration_seconds_sum":    "(the same histogram)",
}

// Documented returns the Prometheus names of the instruments that the
// table of docs/metrics.md lists ("| `nodeid.x` | recorded by | kind |
// `unit` | ..."): dots made underscores, "_seconds" for the unit s, "_total"
// for a counter, and a histogram's _bucket, _sum and _count.
func Documented(t testing.TB) map[string]bool {
	t.Helper()
	f, err := os.Open(Path(t, "docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`nodeid.") {
			continue
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		name := strings.ReplaceAll(cell(1), ".", "_")
		if cell(4) == "s" {
			name += "_seconds"
		}
		switch kind := strings.TrimSuffix(cell(3), " (observable)"); kind {
		case "Counter":
			out[name+"_total"] = true
		case "Histogram":
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = true
			}
		default:
			out[name] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 9 {
		t.Fatalf("docs/metrics.md lists %d instruments: the table was not found", len(out))
	}
	return out
}

var identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// MetricNames returns the names in a PromQL expression that look like
// nodeid's metrics (nodeid_*, http_server_*) and are not labels.
func MetricNames(expr string) []string {
	labels := map[string]bool{}
	for _, l := range Labels {
		labels[l] = true
	}
	seen := map[string]bool{}
	for _, id := range identifier.FindAllString(expr, -1) {
		if (strings.HasPrefix(id, "nodeid_") || strings.HasPrefix(id, "http_server_")) && !labels[id] {
			seen[id] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// CheckMetricNames fails t for every metric name of expr that is neither
// documented nor one of New: a misspelt metric matches nothing, and an
// alert on it never fires.
func CheckMetricNames(t testing.TB, what, expr string, documented map[string]bool) {
	t.Helper()
	for _, name := range MetricNames(expr) {
		if !documented[name] && New[name] == "" {
			t.Errorf("%s: %s is not a metric of nodeid (docs/metrics.md lists %s)", what, name, strings.Join(sorted(documented), ", "))
		}
	}
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
