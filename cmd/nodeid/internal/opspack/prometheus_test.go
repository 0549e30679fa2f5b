//go:build linux

package opspack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// EnvLong set to 1 makes TestPrometheus also wait until the alerts whose
// rules hold for minutes (for: 5m, 15m) fire, where the short run takes
// their going pending as proof that their expressions match: about 17
// minutes, so give go test -timeout 30m.
const EnvLong = "NODEID_TEST_PROMETHEUS_LONG"

const (
	// serveTTL is the TTL of the serve processes: renewals every 2 s give
	// the renewal panels data within seconds, and a loaded machine does
	// not lapse the lease.
	serveTTL = 6 * time.Second
	// runTTL is the TTL of nodeid run. Its command is killed at the
	// deadline after the loss, TTL·9/10 − TTL/3 after the renewal that
	// found it at least: time for a few scrapes of the count.
	runTTL = 30 * time.Second
	// rateInterval stands for Grafana's $__rate_interval, which is at
	// least four scrape intervals (1 s here); more, for a loaded machine.
	rateInterval = "15s"
)

// TestPrometheus runs the operator pack against the real thing. A real
// Prometheus, with the alert rules of deploy/prometheus, scrapes "nodeid
// run --metrics-addr" and two "nodeid serve" processes, built as shipped,
// on a table of two node IDs: run holds one, serve a the other, serve b
// waits for one and answers 503 meanwhile, and both serve requests. Then:
//
//   - every counter of nodeid has its series at 0 for each cause, outcome
//     and reason before anything happened;
//   - the time left and the TTL of each lease match one to one, as
//     NodeIDLeaseNearDeadline needs;
//   - every query of every panel of deploy/grafana/nodeid.json, with the
//     dashboard's variables substituted ($table from its own variable
//     query), returns data: at least one finite value;
//   - the alerts of a full range, a waiting Acquire and a serve answering
//     503 go pending (with EnvLong, they fire);
//   - an operator evicts the leases of run and of serve a, and
//     NodeIDLeaseLost fires for each, with cause evicted.
func TestPrometheus(t *testing.T) {
	promBin := requirePrometheus(t)
	_, dsn := pgtest.NewDB(t)
	bin := clitest.BuildBinary(t)
	dir := t.TempDir()
	// The DSN in the environment, not on command lines that a failing
	// test prints.
	env := append(os.Environ(), "DATABASE_URL="+dsn)
	if out, err := nodeid(bin, env, "init", "--range", "0-1"); err != nil {
		t.Fatalf("nodeid init: %v\n%s", err, out)
	}

	// nodeid run claims first, and so holds node ID 0; its command stays
	// up on SIGTERM until the test is done, so that nodeid run is still
	// scraped once it has lost its lease.
	child := clitest.Script(t, `trap 'echo > `+dir+`/term; while [ ! -f `+dir+`/done ]; do sleep 0.05; done; exit 0' TERM
echo "$NODEID_NODE $NODEID_EPOCH" > `+dir+`/started
while :; do sleep 0.05; done
`)
	run := start(t, "nodeid run", bin, env, "run", "--ttl", runTTL.String(), "--metrics-addr", "127.0.0.1:0", "--", child)
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "done"), nil, 0o644) }) // before run is stopped
	runAddr := run.waitFor(t, regexp.MustCompile(`metrics on http://([^/]+)/metrics`))
	var runNode, runEpoch string
	testkit.Until(t, 2*time.Minute, "nodeid run's command started", testkit.True(func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "started"))
		f := strings.Fields(string(b))
		if len(f) == 2 {
			runNode, runEpoch = f[0], f[1]
		}
		run.failIfExited(t)
		return runNode != ""
	}))
	servingOn := regexp.MustCompile(`serving IDs on http://([^/]+:\d+):`)
	a := start(t, "nodeid serve a", bin, env, "serve", "--listen", "127.0.0.1:0", "--ttl", serveTTL.String())
	aAddr := a.waitFor(t, servingOn)
	aNode, aEpoch := waitServing(t, a, aAddr)
	b := start(t, "nodeid serve b", bin, env, "serve", "--listen", "127.0.0.1:0", "--ttl", serveTTL.String())
	bAddr := b.waitFor(t, servingOn)
	t.Logf("nodeid run holds node ID %s (epoch %s), serve a %s (epoch %s) on %s; serve b on %s waits", runNode, runEpoch, aNode, aEpoch, aAddr, bAddr)
	startLoad(t, "http://"+aAddr, "http://"+bAddr)

	p := startPrometheus(t, promBin, map[string][]string{"nodeid-serve": {aAddr, bAddr}, "nodeid-run": {runAddr}})
	p.waitTargetsUp(t, 3)

	checkStartAtZero(t, p)
	checkTTLMatchesTimeLeft(t, p)
	checkPanels(t, p)

	// The alerts whose conditions hold now, for a time their rules require:
	// pending proves that the expression matches what nodeid exports.
	state := "pending"
	if os.Getenv(EnvLong) == "1" {
		state = "firing"
	}
	fleet := map[string]string{"namespace": "ids", "nodeid_table": "snowflake_nodes", "nodeid_node_range": "0-1"}
	p.waitAlert(t, 20*time.Minute, "NodeIDRangeNearlyFull", state, fleet)
	p.waitAlert(t, 10*time.Minute, "NodeIDAcquireWaiting", state, map[string]string{"job": "nodeid-serve", "instance": bAddr})
	p.waitAlert(t, 10*time.Minute, "NodeIDServeUnavailable", state, map[string]string{"namespace": "ids", "job": "nodeid-serve"})

	// An operator evicts both leases: the holders learn it at their next
	// renewal, count the loss, and NodeIDLeaseLost fires for each.
	for _, ev := range [][2]string{{runNode, runEpoch}, {aNode, aEpoch}} {
		if out, err := nodeid(bin, env, "evict", ev[0], "--epoch", ev[1], "--yes"); err != nil {
			t.Fatalf("nodeid evict %s --epoch %s: %v\n%s", ev[0], ev[1], err, out)
		}
	}
	lost := p.waitAlert(t, 2*time.Minute, "NodeIDLeaseLost", "firing",
		map[string]string{"job": "nodeid-run", "instance": runAddr, "nodeid_cause": "evicted"})
	if s := lost.Annotations["summary"]; !strings.Contains(s, "nodeid-run/"+runAddr+" lost a lease of snowflake_nodes (node IDs 0-1): evicted") {
		t.Errorf("NodeIDLeaseLost's summary: %q", s)
	}
	p.waitAlert(t, 2*time.Minute, "NodeIDLeaseLost", "firing",
		map[string]string{"job": "nodeid-serve", "instance": aAddr, "nodeid_cause": "evicted"})
}

// requirePrometheus returns the path of prometheus. Without it the test is
// skipped, or fails when pgtest.EnvRequire is 1 (CI, whose .ci/run
// installs Debian's package prometheus).
func requirePrometheus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatalf("prometheus is not on PATH and %s=1: install it (Debian: apt-get install prometheus)", pgtest.EnvRequire)
		}
		t.Skipf("prometheus is not on PATH (Debian: apt-get install prometheus; set %s=1 to fail instead)", pgtest.EnvRequire)
	}
	return path
}

// nodeid runs the built binary to the end, and returns its output.
func nodeid(bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = env
	out, err := c.CombinedOutput()
	return string(out), err
}

// proc is a process the test started, stopped when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  syncbuf.Buffer // stdout and stderr
	done chan struct{}
}

// start starts bin with args and env. When the test ends it gets SIGTERM,
// and SIGKILL if it has not exited 30 s later; its output is logged if the
// test failed.
func start(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			out := p.out.String()
			if len(out) > 6000 {
				out = "..." + out[len(out)-6000:]
			}
			t.Logf("%s (%s) -> %s; output:\n%s", name, strings.Join(p.cmd.Args[1:], " "), p.cmd.ProcessState, out)
		}
	})
	return p
}

// failIfExited fails the test if the process has exited.
func (p *proc) failIfExited(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s exited: %s\n%s", p.name, p.cmd.ProcessState, p.out.String())
	default:
	}
}

// waitFor waits until the process's output matches re, and returns the
// first group of the match.
func (p *proc) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	var got string
	testkit.Until(t, 2*time.Minute, p.name+" printing "+re.String(), testkit.True(func() bool {
		p.failIfExited(t)
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			got = m[1]
		}
		return got != ""
	}))
	return got
}

// waitServing waits until serve mints on addr, and returns the node ID and
// epoch of its lease.
func waitServing(t *testing.T, p *proc, addr string) (node, epoch string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	testkit.Until(t, 2*time.Minute, p.name+" serving IDs", testkit.True(func() bool {
		p.failIfExited(t)
		r, err := c.Get("http://" + addr + "/id")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		node, epoch = r.Header.Get("X-Nodeid-Node"), r.Header.Get("X-Nodeid-Epoch")
		return r.StatusCode == http.StatusOK
	}))
	return node, epoch
}

// startLoad asks each base for IDs, one and three at a time, every 20 ms
// until the test ends (at most 100,000 rounds), so that the request
// panels and the serve alert have data.
func startLoad(t *testing.T, bases ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	c := &http.Client{Timeout: 5 * time.Second}
	wg.Go(func() {
		defer c.CloseIdleConnections()
		for range 100_000 {
			for _, base := range bases {
				for _, path := range []string{"/id", "/ids?count=3"} {
					req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
					if r, err := c.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, r.Body)
						r.Body.Close()
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// prom is a Prometheus the test started, and its HTTP API.
type prom struct {
	*proc
	base string // http://127.0.0.1:PORT
	c    *http.Client
}

// startPrometheus starts prometheus on a free port with a storage of its
// own, scraping the targets of each job every second, with the label
// namespace="ids" that a ServiceMonitor would add, and evaluating the
// alert rules of deploy/prometheus every second. It waits until it is
// ready.
func startPrometheus(t *testing.T, bin string, jobs map[string][]string) *prom {
	t.Helper()
	rules, err := filepath.Abs(filepath.Join(clitest.RepoRoot, "deploy", "prometheus", "nodeid.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %q\nscrape_configs:\n", rules)
	names := make([]string, 0, len(jobs))
	for job := range jobs {
		names = append(names, job)
	}
	slices.Sort(names)
	for _, job := range names {
		targets, _ := json.Marshal(jobs[job])
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: %s\n        labels: {namespace: ids}\n", job, targets)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("prometheus.yml:\n%s", cfg.String())
	for attempt := 1; ; attempt++ {
		port, err := pgtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		p := &prom{base: "http://" + addr, c: &http.Client{Timeout: 10 * time.Second}}
		p.proc = start(t, "prometheus", bin, os.Environ(), "--config.file="+config,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprint("data", attempt)), "--web.listen-address="+addr)
		ready := false
		testkit.Until(t, 2*time.Minute, "prometheus ready", testkit.True(func() bool {
			select {
			case <-p.done:
				return true
			default:
			}
			r, err := p.c.Get(p.base + "/-/ready")
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			ready = r.StatusCode == http.StatusOK
			return ready
		}))
		if ready {
			return p
		}
		if attempt == 3 || !strings.Contains(p.out.String(), "address already in use") {
			p.failIfExited(t)
		}
	}
}

// get calls the API at path with query q and decodes its data into v.
func (p *prom) get(path string, q url.Values, v any) error {
	r, err := p.c.Get(p.base + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer r.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %d: %v", path, r.StatusCode, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s?%s: %s: %s", path, q.Encode(), body.Status, body.Error)
	}
	return json.Unmarshal(body.Data, v)
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query evaluates expr now; its result must be an instant vector.
func (p *prom) query(expr string) ([]sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, data.ResultType)
	}
	out := make([]sample, 0, len(data.Result))
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v: %v", expr, r.Value[1], err)
		}
		out = append(out, sample{r.Metric, v})
	}
	return out, nil
}

// waitTargetsUp waits until Prometheus has scraped n targets, all up.
func (p *prom) waitTargetsUp(t *testing.T, n int) {
	t.Helper()
	var last string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p.failIfExited(t)
		var data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		}
		err := p.get("/api/v1/targets", url.Values{}, &data)
		up := 0
		for _, tg := range data.ActiveTargets {
			if tg.Health == "up" {
				up++
			}
		}
		if err == nil && up == n && len(data.ActiveTargets) == n {
			return
		}
		last = fmt.Sprintf("%+v %v", data.ActiveTargets, err)
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not find %d targets up within 2m: %s", n, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitQuery polls expr until ok accepts its result, or fails the test
// after within with the last result.
func (p *prom) waitQuery(t *testing.T, within time.Duration, what, expr string, ok func([]sample) bool) []sample {
	t.Helper()
	var (
		res []sample
		err error
	)
	deadline := time.Now().Add(within)
	for {
		if res, err = p.query(expr); err == nil && ok(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s gave %v, %v for %s", what, expr, res, err, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkStartAtZero: before any loss, wait or refusal, each holder has a
// series of each cause, outcome and reason, at 0 for the events that did
// not happen.
func checkStartAtZero(t *testing.T, p *prom) {
	t.Helper()
	for _, c := range []struct {
		expr, label string
		want        []string
	}{
		{`nodeid_lease_lost_total{job="nodeid-run"}`, "nodeid_cause",
			[]string{"deadline", "evicted", "expired", "failover", "released", "taken_over"}},
		{`nodeid_lease_renewals_total{job="nodeid-run"}`, "nodeid_outcome", []string{"lost", "renewed", "retried"}},
		{`nodeid_generator_waits_total{job="nodeid-serve"}`, "nodeid_reason", []string{"clock_behind", "sequence_exhausted"}},
		{`nodeid_generator_refusals_total{job="nodeid-serve"}`, "nodeid_reason",
			[]string{"beyond_horizon", "clock_behind", "lease_ended", "time_overflow"}},
	} {
		res := p.waitQuery(t, time.Minute, "the series at 0", c.expr, func(res []sample) bool { return len(res) >= len(c.want) })
		var got []string
		for _, s := range res {
			got = append(got, s.Metric[c.label])
			if s.Metric["nodeid_table"] != "snowflake_nodes" || s.Metric["nodeid_node_range"] != "0-1" {
				t.Errorf("%s: series %v without the table and range of the lease", c.expr, s.Metric)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %s %v, want one series of each of %v", c.expr, c.label, got, c.want)
		}
	}
	// The eviction to come is counted on series that are there, at 0, on
	// each holder: serve b too has read the table's range.
	const evicted = `nodeid_lease_lost_total{nodeid_cause="evicted"}`
	for _, s := range p.waitQuery(t, time.Minute, "the series at 0", evicted, func(res []sample) bool { return len(res) == 3 }) {
		if s.Value != 0 {
			t.Errorf("%s: %v = %v before the eviction, want 0", evicted, s.Metric, s.Value)
		}
	}
}

// checkTTLMatchesTimeLeft: the time left and the TTL of each held lease
// are on series of the same labels, so that NodeIDLeaseNearDeadline
// compares them one to one.
func checkTTLMatchesTimeLeft(t *testing.T, p *prom) {
	t.Helper()
	left := p.waitQuery(t, time.Minute, "the time left of both leases", `nodeid_lease_time_left_seconds`,
		func(res []sample) bool { return len(res) == 2 })
	ratio := p.waitQuery(t, time.Minute, "the time left over the TTL", `nodeid_lease_time_left_seconds / nodeid_lease_ttl_seconds`,
		func(res []sample) bool { return len(res) == len(left) })
	for _, s := range ratio {
		if s.Value <= 0 || s.Value > 1 {
			t.Errorf("time left / TTL of %v = %v, want within (0, 1]", s.Metric, s.Value)
		}
	}
	ttls, err := p.query(`nodeid_lease_ttl_seconds`)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ttls {
		want := serveTTL.Seconds()
		if s.Metric["job"] == "nodeid-run" {
			want = runTTL.Seconds()
		}
		if s.Value != want || s.Metric["nodeid_node_id"] == "" {
			t.Errorf("TTL %v = %v, want %v with the node ID", s.Metric, s.Value, want)
		}
	}
}

// panelQuery is a query of a panel of the dashboard.
type panelQuery struct{ panel, refID, expr string }

// dashboard reads deploy/grafana/nodeid.json: the queries of its panels,
// and its variables' definitions by name.
func dashboard(t *testing.T) ([]panelQuery, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(clitest.RepoRoot, "deploy", "grafana", "nodeid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var qs []panelQuery
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			qs = append(qs, panelQuery{p.Title, q.RefID, q.Expr})
		}
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			vars[v.Name] = v.Definition
		}
	}
	if len(qs) < 10 || len(vars) == 0 {
		t.Fatalf("nodeid.json: %d queries, variables %v", len(qs), vars)
	}
	return qs, vars
}

var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// checkPanels: every query of the dashboard returns at least one finite
// value, with its variables substituted as Grafana would: each query
// variable by the values its own query finds, joined as a regular
// expression, and $__rate_interval by rateInterval.
func checkPanels(t *testing.T, p *prom) {
	t.Helper()
	queries, vars := dashboard(t)
	subs := []string{"$__rate_interval", rateInterval}
	for name, def := range vars {
		m := labelValues.FindStringSubmatch(def)
		if m == nil {
			t.Fatalf("variable %s: %q is not label_values(METRIC, LABEL), the only variable query this test knows", name, def)
		}
		var values []string
		testkit.Until(t, time.Minute, "values of $"+name, testkit.True(func() bool {
			values = nil
			err := p.get("/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {m[1]}}, &values)
			return err == nil && len(values) > 0
		}))
		t.Logf("$%s = %v", name, values)
		for i, v := range values {
			values[i] = regexp.QuoteMeta(v)
		}
		subs = append(subs, "$"+name, strings.Join(values, "|"))
	}
	sub := strings.NewReplacer(subs...)
	finite := func(res []sample) bool {
		return slices.ContainsFunc(res, func(s sample) bool { return !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) })
	}
	pending := map[panelQuery]string{}
	for _, q := range queries {
		expr := sub.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("panel %q %s: a variable the dashboard does not define is left: %s", q.panel, q.refID, expr)
			continue
		}
		pending[q] = expr
	}
	last := map[panelQuery]string{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for q, expr := range pending {
			res, err := p.query(expr)
			if err == nil && finite(res) {
				t.Logf("panel %q %s: %d series, e.g. %v", q.panel, q.refID, len(res), res[0])
				delete(pending, q)
				continue
			}
			last[q] = fmt.Sprintf("%v, %v", res, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for q, expr := range pending {
		t.Errorf("panel %q %s returned no data within 2m: %s gave %s", q.panel, q.refID, expr, last[q])
	}
}

// alert is an alert as /api/v1/alerts lists it.
type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

// waitAlert waits until an alert of that name and with those labels is in
// state, or firing when state is pending (pending comes first), and
// returns it; or fails the test after within with the alerts there were.
func (p *prom) waitAlert(t *testing.T, within time.Duration, name, state string, labels map[string]string) alert {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		p.failIfExited(t)
		var data struct {
			Alerts []alert `json:"alerts"`
		}
		err := p.get("/api/v1/alerts", url.Values{}, &data)
	next:
		for _, a := range data.Alerts {
			if a.Labels["alertname"] != name || a.State != state && (state != "pending" || a.State != "firing") {
				continue
			}
			for k, v := range labels {
				if a.Labels[k] != v {
					continue next
				}
			}
			t.Logf("%s %s: %v, value %s", name, a.State, a.Labels, a.Value)
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s with %v did not reach %s within %s; alerts: %+v %v", name, labels, state, within, data.Alerts, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
