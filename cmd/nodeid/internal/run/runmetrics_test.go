//go:build linux

package run

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestRunMetrics scrapes nodeid run --metrics-addr over HTTP: the lease's
// metrics and the process's are on /metrics, and /healthz says "ok" while
// the lease is held and fails once an operator evicts it.
func TestRunMetrics(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	// On SIGTERM the command waits for the test's word, so that the lease
	// is known lost while nodeid run still serves.
	child := clitest.Script(t, `trap 'echo > `+dir+`/term; while [ ! -f `+dir+`/done ]; do sleep 0.02; done; exit 7' TERM
echo "$NODEID_NODE $NODEID_EPOCH" > `+dir+`/started
while :; do sleep 0.05; done
`)
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "10s", "--grace", "5s", "--metrics-addr", "127.0.0.1:0", "--", child)
	defer func() { _ = os.WriteFile(filepath.Join(dir, "done"), nil, 0o644) }()
	fields := strings.Fields(waitFile(t, filepath.Join(dir, "started"), b))
	addr := regexp.MustCompile(`metrics on http://([^/]+)/metrics`).FindStringSubmatch(b.Stderr())
	if len(fields) != 2 || addr == nil {
		t.Fatalf("started %q; no address in stderr: %s", fields, b.Stderr())
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr[1] + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^nodeid_lease_held\{.*nodeid_table="snowflake_nodes".*\} 1$`),
		regexp.MustCompile(`(?m)^nodeid_lease_time_left_seconds\{.*nodeid_node_id="` + fields[0] + `".*\} [0-9.e+]+$`),
		regexp.MustCompile(`(?m)^nodeid_acquire_duration_seconds_count\{.*nodeid_outcome="acquired".*\} 1$`),
		regexp.MustCompile(`(?m)^go_goroutines [0-9]+$`),
		regexp.MustCompile(`(?m)^process_cpu_seconds_total [0-9.e+-]+$`),
	} {
		if !want.MatchString(body) {
			t.Errorf("/metrics has no line matching %s:\n%s", want, body)
		}
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz while the lease is held: %d %q", code, body)
	}

	harness.Must(t, "evict", fields[0], "--epoch", fields[1], "--yes", "--dsn", dsn)
	waitFile(t, filepath.Join(dir, "term"), b)
	code, body = get("/healthz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "unhealthy: lease of node ID "+fields[0]+" ") || !strings.Contains(body, "evicted") {
		t.Errorf("/healthz after the eviction: %d %q", code, body)
	}
	if _, body := get("/metrics"); !regexp.MustCompile(`(?m)^nodeid_lease_lost_total\{.*nodeid_cause="evicted".*\} 1$`).MatchString(body) {
		t.Errorf("/metrics does not count the eviction:\n%s", body)
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.Wait(t, 30*time.Second)
	if r.Code != cli.ExitLeaseLost {
		t.Errorf("exit code %d, want %d: the lease ended", r.Code, cli.ExitLeaseLost)
	}
	// One line says the loss (with what run does about it), prefixed once.
	if n := strings.Count(r.Stderr, " lost"); n != 1 || strings.Contains(r.Stderr, "nodeid: nodeid:") {
		t.Errorf("%d lines say the lease was lost, want 1, none with a doubled prefix:\n%s", n, r.Stderr)
	}
}

// TestRunMetricsBadAddr: an address that cannot be listened on is a usage
// error naming it, before any claim.
func TestRunMetricsBadAddr(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", "postgres://nobody@127.0.0.1:1/none", "--metrics-addr", "no-such-host-xyz:99999", "--", "true"),
		cli.ExitUsage, "--metrics-addr no-such-host-xyz:99999")
}
