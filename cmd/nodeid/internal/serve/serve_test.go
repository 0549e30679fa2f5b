//go:build linux

package serve

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/holder"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
	"github.com/nodeid/nodeid/snowflake"
)

// serveProc is a "nodeid serve" process: this test binary as the command
// (see clitest.Self).
type serveProc struct {
	cmd    *exec.Cmd
	stderr syncbuf.Buffer
	done   chan struct{}
	base   string       // http://HOST:PORT
	client *http.Client // for a serve on a Unix socket
}

var servingOn = regexp.MustCompile(`serving IDs on (http://[^:]+:\d+):`)

// startServe starts "nodeid serve" with args on a free loopback port and
// waits until it serves IDs.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	c, err := clitest.Self(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: c, done: make(chan struct{})}
	c.Stderr = &p.stderr
	c.WaitDelay = time.Second
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-p.done
	})
	testkit.Until(t, 60*time.Second, "nodeid serve listening", testkit.True(func() bool {
		if p.exited() {
			t.Fatalf("nodeid serve exited: %s", p.stderr.String())
		}
		m := servingOn.FindStringSubmatch(p.stderr.String())
		if m != nil {
			p.base = m[1]
		}
		return m != nil
	}))
	p.waitHealthy(t)
	return p
}

func (p *serveProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitHealthy waits until /healthz answers 200.
func (p *serveProc) waitHealthy(t *testing.T) {
	t.Helper()
	testkit.Until(t, 60*time.Second, "nodeid serve healthy", testkit.True(func() bool {
		if p.exited() {
			t.Fatalf("nodeid serve exited: %s", p.stderr.String())
		}
		r, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}))
}

// stop sends SIGTERM and fails the test unless serve exits with 0.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("nodeid serve did not exit on SIGTERM: %s", p.stderr.String())
	}
	t.Logf("nodeid serve -> %d; stderr:\n%s", p.cmd.ProcessState.ExitCode(), p.stderr.String())
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("nodeid serve exit code %d after SIGTERM, want 0", code)
	}
}

// idsResp is one answer of GET /ids.
type idsResp struct {
	status      int
	node, epoch int64
	ids         []int64
	body        string // of a failure
}

// getIDs asks for count IDs.
func getIDs(c *http.Client, base string, count int) (idsResp, error) {
	r, err := c.Get(fmt.Sprintf("%s/ids?count=%d", base, count))
	if err != nil {
		return idsResp{}, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return idsResp{}, err
	}
	out := idsResp{status: r.StatusCode}
	out.node, _ = strconv.ParseInt(r.Header.Get(hdrNode), 10, 64)
	out.epoch, _ = strconv.ParseInt(r.Header.Get(hdrEpoch), 10, 64)
	if r.StatusCode != http.StatusOK {
		out.body = string(b)
		return out, nil
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		v, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return out, fmt.Errorf("line %q of /ids: %v", line, err)
		}
		out.ids = append(out.ids, v)
	}
	if len(out.ids) != count {
		return out, fmt.Errorf("/ids?count=%d returned %d IDs", count, len(out.ids))
	}
	return out, nil
}

// TestServeRequests runs serve's handler in-process on a real lease, with
// a stamping clock stopped on one millisecond, so that consecutive IDs
// differ by exactly one step: bad requests, in between, cost no ID.
func TestServeRequests(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	m, metrics, reg := metricsRegistry(t, db, nodeid.WithOwner("owner \"q\""))
	lease, err := reg.Acquire(clitest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	gen, err := snowflake.New(lease, snowflake.WithMeterProvider(m.Provider), snowflake.WithClock(func() time.Time { return stopped }))
	if err != nil {
		t.Fatal(err)
	}
	s := newIDServer(metrics, m.Provider, false)
	do := func(method, target, accept string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	if w := do("GET", "/id", ""); w.Code != 503 || !strings.Contains(w.Body.String(), "no lease yet") {
		t.Errorf("/id before the lease: %d %q", w.Code, w.Body.String())
	}
	s.state.Store(s.minting(lease, gen))
	m.SetHealth(holder.LeaseHealth(lease, time.Second))

	one := func() int64 {
		t.Helper()
		w := do("GET", "/id", "")
		id, err := strconv.ParseInt(strings.TrimSuffix(w.Body.String(), "\n"), 10, 64)
		if w.Code != 200 || err != nil || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("/id: %d %q %v", w.Code, w.Body.String(), err)
		}
		if w.Header().Get(hdrNode) != "0" || w.Header().Get(hdrEpoch) != "1" || w.Header().Get(hdrOwner) != `owner "q"` {
			t.Errorf("/id headers: %v", w.Header())
		}
		return id
	}
	first := one()
	bad := []struct {
		method, target string
		code           int
		says           string
	}{
		{"GET", "/ids", 400, "needs count=N"},
		{"GET", "/ids?count=0", 400, `count "0"`},
		{"GET", "/ids?count=-1", 400, `count "-1"`},
		{"GET", "/ids?count=abc", 400, `count "abc"`},
		{"GET", "/ids?count=", 400, `count ""`},
		{"GET", "/ids?count=10001", 400, "from 1 to 10000"},
		{"GET", "/ids?count=99999999999999999999", 400, "from 1 to 10000"},
		{"GET", "/ids?count=1&count=2", 400, "more than once"},
		{"GET", "/ids?count=1&n=2", 400, `unknown query parameter "n"`},
		{"GET", "/id?count=2", 400, "takes no query"},
		{"GET", "/nope", 404, `no such path "/nope"`},
		{"GET", "/", 404, "no such path"},
		{"POST", "/id", 405, "takes GET only"},
		{"HEAD", "/id", 405, "takes GET only"},
		{"PUT", "/ids?count=3", 405, "takes GET only"},
		{"DELETE", "/healthz", 405, "GET or HEAD"},
	}
	for _, b := range bad {
		w := do(b.method, b.target, "")
		body := w.Body.String()
		if w.Code != b.code || !strings.Contains(body, b.says) || strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
			t.Errorf("%s %s: %d %q, want %d and one line saying %q", b.method, b.target, w.Code, body, b.code, b.says)
		}
	}
	if w := do("GET", "/ids?count=abc", "application/json"); w.Code != 400 || !strings.HasPrefix(w.Body.String(), `{"error":"count \"abc\"`) {
		t.Errorf("JSON error: %d %q", w.Code, w.Body.String())
	}
	if next := one(); next != first+1 {
		t.Errorf("IDs %d and %d around %d bad requests, on a stopped clock: %d apart, want 1 (bad requests cost IDs)", first, next, len(bad)+1, next-first)
	}

	// /ids, text and JSON.
	w := do("GET", "/ids?count=3", "")
	lines := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	if w.Code != 200 || len(lines) != 3 || lines[0] != strconv.FormatInt(first+2, 10) || lines[2] != strconv.FormatInt(first+4, 10) {
		t.Errorf("/ids?count=3: %d %q", w.Code, w.Body.String())
	}
	w = do("GET", "/ids?count=2", "application/json")
	want := fmt.Sprintf(`{"ids":["%d","%d"],"node":0,"epoch":1,"owner":"owner \"q\""}`+"\n", first+5, first+6)
	if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("/ids JSON: %d %q, want %q", w.Code, w.Body.String(), want)
	}
	w = do("GET", "/id", "application/json, text/plain")
	if want := fmt.Sprintf(`{"id":"%d","node":0,"epoch":1,"owner":"owner \"q\""}`+"\n", first+7); w.Body.String() != want {
		t.Errorf("/id JSON: %q, want %q", w.Body.String(), want)
	}
	if w = do("GET", "/healthz", ""); w.Code != 200 || w.Body.String() != "ok\n" || w.Header().Get(hdrNode) != "0" {
		t.Errorf("/healthz: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	if w = do("GET", "/metrics", ""); w.Code != 200 || !strings.Contains(w.Body.String(), "nodeid_") {
		t.Errorf("/metrics: %d, no nodeid_ metric in %.300q", w.Code, w.Body.String())
	}

	// Released, the generator mints nothing: 503 with the cause.
	if err := lease.Release(clitest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if w = do("GET", "/ids?count=5", ""); w.Code != 503 || !strings.Contains(w.Body.String(), "released") || strings.Count(w.Body.String(), "\n") != 1 {
		t.Errorf("/ids after the release: %d %q", w.Code, w.Body.String())
	}
	if w = do("GET", "/healthz", ""); w.Code != 503 || !strings.Contains(w.Body.String(), "lost") {
		t.Errorf("/healthz after the release: %d %q", w.Code, w.Body.String())
	}
	var h int64
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT horizon_ms FROM snowflake_nodes WHERE node_id = 0`).Scan(&h); err != nil {
		t.Fatal(err)
	}
	if h != stopped.UnixMilli() {
		t.Errorf("horizon at release %s, want the one millisecond stamped, %s", cli.ExactMs(h), cli.ExactMs(stopped.UnixMilli()))
	}
}

// TestServeUsage: bad flags are usage errors before any claim.
func TestServeUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--listen", "8080"}, `--listen "8080": it must be HOST:PORT`},
		{[]string{"--listen", "unix:"}, "unix: needs a socket path"},
		{[]string{"--ttl", "1s"}, "--ttl 1s: it must be 3s to 24h0m0s"},
		{[]string{"--listen", "0.0.0.0:99999"}, `--listen "0.0.0.0:99999": port 99999 is not a TCP port, which must be 0 to 65535`},
		{[]string{"--ttl", "10s", "--grace", "6s"}, "--grace 6s: it must be positive and at most half the TTL (5s)"},
		{[]string{"--range", "0-1024"}, "node range 0-1024: node IDs above 1023"},
		{[]string{"--layout", "js53", "--range", "0-1024"}, "node IDs above 1023 do not fit the 10 node bits"},
		{[]string{"--layout", "sonyflake"}, `--layout "sonyflake": the layouts are bwmarrin and js53`},
		{[]string{"--layout", "js53", "--step-bits", "12"}, "(the layout of --layout js53, --step-bits 12)"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--create", "--range", "0-99999", "--node-bits", "17"}, "--range 0-99999 with --create: a missing table would be created with 100,000 rows, and more than 65,536 are created only when confirmed: add --yes"},
	} {
		r := harness.Run(t, append([]string{"serve", "--dsn", "postgres://u:clitest.Secret@127.0.0.1:1/db"}, c.args...)...)
		clitest.WantExit(t, r, cli.ExitUsage, c.says)
		if strings.Contains(r.Stderr, "clitest.Secret") {
			t.Errorf("the password shows: %q", r.Stderr)
		}
	}
}

// TestServeJSONNumbers: in a layout whose IDs are below 2^53, serve writes
// them in JSON as numbers, which a real Node.js reads exactly with
// JSON.parse: every number it parsed prints as the digits serve sent, and
// decodes, in the layout, to the node ID of the headers. In bwmarrin's
// layout they stay strings.
func TestServeJSONNumbers(t *testing.T) {
	t.Parallel()
	node := clitest.RequireRuntime(t, "node")
	_, dsn := pgtest.NewDB(t)
	p := startServe(t, "--dsn", dsn, "--create", "--ttl", "10s", "--layout", "js53", "--range", "1000-1023")
	script := `const r = await fetch(process.argv[1] + "/ids?count=2000", { headers: { Accept: "application/json" } });
const text = await r.text();
const doc = JSON.parse(text);
const sent = text.match(/"ids":\[([^\]]*)\]/)[1].split(",");
if (r.status !== 200 || doc.ids.length !== 2000) throw new Error(text.slice(0, 300));
doc.ids.forEach((n, i) => {
  if (typeof n !== "number" || !Number.isSafeInteger(n) || String(n) !== sent[i]) throw new Error("ID " + sent[i] + " parsed as " + n);
});
console.log(r.headers.get("x-nodeid-node"));
console.log(doc.ids.join("\n"));`
	out, err := exec.Command(node, "--input-type=module", "-e", script, p.base).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	hdr, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil || hdr < 1000 {
		t.Fatalf("node ID header %q", lines[0])
	}
	seen := map[int64]bool{}
	for _, s := range lines[1:] {
		id, err := snowflake.JS53.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := snowflake.JS53.Decode(id).Node; n != hdr || seen[id.Int64()] {
			t.Fatalf("ID %s: node %d (headers %d), seen before %v", s, n, hdr, seen[id.Int64()])
		}
		seen[id.Int64()] = true
	}
	if len(seen) != 2000 {
		t.Errorf("%d IDs, want 2000", len(seen))
	}
	p.stop(t)

	// bwmarrin's IDs are past 2^53: strings.
	_, dsn = pgtest.NewDB(t)
	p = startServe(t, "--dsn", dsn, "--create", "--ttl", "10s")
	req, _ := http.NewRequest("GET", p.base+"/ids?count=2", nil)
	req.Header.Set("Accept", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !regexp.MustCompile(`^\{"ids":\["\d{19}","\d{19}"\],`).Match(b) {
		t.Errorf("bwmarrin's IDs in JSON: %s", b)
	}
	p.stop(t)
}

// TestServeClients: clients in Python (urllib), Node.js (fetch), Java
// (HttpClient) and curl against a real serve; every ID they got decodes,
// under bwmarrin's package, to the node ID of the headers, and none repeats.
func TestServeClients(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	p := startServe(t, "--dsn", dsn, "--create", "--ttl", "10s")
	dir, err := filepath.Abs(filepath.Join("testdata", "serve"))
	if err != nil {
		t.Fatal(err)
	}
	clients := []struct {
		name string
		argv func(t *testing.T) []string
	}{
		{"python", func(t *testing.T) []string {
			return []string{clitest.RequireRuntime(t, "python3"), filepath.Join(dir, "client.py"), p.base}
		}},
		{"node", func(t *testing.T) []string {
			return []string{clitest.RequireRuntime(t, "node"), filepath.Join(dir, "client.mjs"), p.base}
		}},
		{"java", func(t *testing.T) []string {
			return []string{clitest.RequireRuntime(t, "java"), filepath.Join(dir, "Client.java"), p.base}
		}},
		{"curl", func(t *testing.T) []string {
			curl := clitest.RequireRuntime(t, "curl")
			sh := `set -eu
c() { "$CURL" -sS --fail-with-body "$@"; }
code() { "$CURL" -sS -o /dev/null -w '%{http_code}' "$@"; }
node=$("$CURL" -sS -D - -o /dev/null "$BASE/id" | tr -d '\r' | sed -n 's/^[Xx]-[Nn]odeid-[Nn]ode: //p')
epoch=$("$CURL" -sS -D - -o /dev/null "$BASE/healthz" | tr -d '\r' | sed -n 's/^[Xx]-[Nn]odeid-[Ee]poch: //p')
[ "$(code "$BASE/ids?count=0")" = 400 ] && [ "$(code "$BASE/nope")" = 404 ] && [ "$(code -X POST "$BASE/id")" = 405 ]
echo "node=$node epoch=$epoch"
c "$BASE/id"
c "$BASE/ids?count=100"
c -H 'Accept: application/json' "$BASE/ids?count=5" | tr -c '0-9\n' ' ' | sed 's/  */\n/g' | grep -E '^[0-9]{15,}$'
`
			return []string{"sh", "-c", sh, "sh", curl, p.base}
		}},
	}
	seen := map[int64]string{}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			argv := c.argv(t)
			cmd := exec.Command(argv[0], argv[1:]...)
			if c.name == "curl" {
				cmd.Env = append(os.Environ(), "CURL="+argv[4], "BASE="+p.base)
				cmd.Args = argv[:4]
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\nstderr: %s\nstdout: %.500s", c.name, err, stderr.String(), out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var node, epoch int64
			if _, err := fmt.Sscanf(lines[0], "node=%d epoch=%d", &node, &epoch); err != nil {
				t.Fatalf("first line %q: %v", lines[0], err)
			}
			ids := lines[1:]
			if min := 106; len(ids) < min {
				t.Errorf("%d IDs, want %d or more", len(ids), min)
			}
			for _, s := range ids {
				id, err := bw.ParseString(s)
				if err != nil {
					t.Fatalf("ID %q: %v", s, err)
				}
				if id.Node() != node {
					t.Errorf("ID %s decodes to node %d, the headers say %d", s, id.Node(), node)
				}
				if by, dup := seen[id.Int64()]; dup {
					t.Errorf("ID %s returned to %s and to %s", s, by, c.name)
				}
				seen[id.Int64()] = c.name
			}
		})
	}
	p.stop(t)
}

// TestServeTwoProcesses: two serve processes on one table mint serveMany
// IDs each; all are distinct and decode to their own node IDs; SIGTERM
// releases each node ID with the exact horizon, the last millisecond
// stamped.
func TestServeTwoProcesses(t *testing.T) {
	const perProcess = 100_000
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--range", "0-7")
	procs := []*serveProc{startServe(t, "--dsn", dsn), startServe(t, "--dsn", dsn)}
	type got struct {
		node, last int64
		ids        []int64
		err        error
	}
	results := make([]got, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: time.Minute}
			res := &results[i]
			res.node = -1
			for len(res.ids) < perProcess && res.err == nil {
				r, err := getIDs(c, p.base, ServeMaxCount)
				switch {
				case err != nil:
					res.err = err
				case r.status != 200:
					res.err = fmt.Errorf("status %d: %s", r.status, r.body)
				case res.node >= 0 && r.node != res.node:
					res.err = fmt.Errorf("node ID changed from %d to %d", res.node, r.node)
				default:
					res.node = r.node
					res.ids = append(res.ids, r.ids...)
				}
			}
		}()
	}
	wg.Wait()
	all := map[int64]int{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("serve %d: %v", i, r.err)
		}
		for _, v := range r.ids {
			id := bw.ID(v)
			if id.Node() != r.node {
				t.Fatalf("serve %d (node %d): ID %d decodes to node %d", i, r.node, v, id.Node())
			}
			all[v]++
			results[i].last = max(results[i].last, id.Time())
		}
	}
	dups := 0
	for _, n := range all {
		dups += n - 1
	}
	t.Logf("%d IDs from nodes %d and %d, %d distinct", len(results[0].ids)+len(results[1].ids), results[0].node, results[1].node, len(all))
	if results[0].node == results[1].node {
		t.Errorf("both serve processes mint under node ID %d", results[0].node)
	}
	if dups != 0 || len(all) != 2*perProcess {
		t.Errorf("%d duplicates among %d IDs", dups, 2*perProcess)
	}
	for _, p := range procs {
		p.stop(t)
	}
	for i, r := range results {
		row := clitest.ReadLease(t, db, r.node)
		if !row.Free || row.Reason != "released" || row.HistoryHorizon != r.last {
			t.Errorf("serve %d: node %d after SIGTERM: %+v; want released with the horizon %s, its last stamp", i, r.node, row, cli.ExactMs(r.last))
		}
	}
}

// lossLoad is a load on a serve whose lease is lost: clients ask for IDs
// in a loop and keep every answer, in order.
type lossLoad struct {
	mu    sync.Mutex
	resps [][]idsResp // per client
	errs  []error
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startLossLoad(base string, clients int) *lossLoad {
	l := &lossLoad{resps: make([][]idsResp, clients), stop: make(chan struct{})}
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := &http.Client{Timeout: time.Minute}
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				r, err := getIDs(c, base, 100)
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err)
				} else {
					l.resps[i] = append(l.resps[i], r)
				}
				l.mu.Unlock()
				if err != nil {
					return
				}
				if r.status != http.StatusOK {
					time.Sleep(2 * time.Millisecond) // a client's retry pace, not to spin on 503
				}
			}
		}()
	}
	return l
}

// count returns how many answers match.
func (l *lossLoad) count(match func(idsResp) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, rs := range l.resps {
		for _, r := range rs {
			if match(r) {
				n++
			}
		}
	}
	return n
}

func (l *lossLoad) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	for _, err := range l.errs {
		t.Errorf("client: %v", err)
	}
}

// check verifies the answers against the history of node 0: every ID of
// an epoch is stamped after the previous epoch's horizon and at or before
// its own; once a client got a 503, it gets no ID of the lost epoch again;
// no ID repeats; 503s name the cause.
func (l *lossLoad) check(t *testing.T, db *sql.DB, lost int64, cause string) {
	t.Helper()
	horizons := map[int64]int64{}
	rows, err := db.QueryContext(clitest.Ctx(t), `SELECT epoch, horizon_ms FROM snowflake_nodes_history WHERE node_id = 0 ORDER BY epoch`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var e int64
		var h sql.NullInt64 // the open claim has none yet
		if err := rows.Scan(&e, &h); err != nil {
			t.Fatal(err)
		}
		if h.Valid {
			horizons[e] = h.Int64
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	var ok, unavailable, after int
	for client, rs := range l.resps {
		got503 := false
		for _, r := range rs {
			if r.status != 200 {
				unavailable++
				got503 = true
				if r.status != 503 || strings.Count(r.body, "\n") != 1 {
					t.Errorf("client %d: status %d %q, want 503 and one line", client, r.status, r.body)
				}
				if strings.HasPrefix(r.body, "nodeid:") || strings.HasPrefix(r.body, `{"error":"nodeid:`) {
					t.Errorf("client %d: a 503 prefixed as a message of the command's stderr: %q", client, r.body)
				}
				continue
			}
			ok++
			if r.epoch > lost {
				after++
			}
			if got503 && r.epoch == lost {
				t.Errorf("client %d: IDs of the lost epoch %d after a 503", client, lost)
			}
			prev, hasPrev := horizons[r.epoch-1]
			own, hasOwn := horizons[r.epoch]
			for _, v := range r.ids {
				id := bw.ID(v)
				if seen[v] {
					t.Errorf("duplicate ID %d", v)
				}
				seen[v] = true
				if id.Node() != 0 || r.node != 0 {
					t.Errorf("ID %d: node %d, headers %d, want 0", v, id.Node(), r.node)
				}
				if hasPrev && id.Time() <= prev {
					t.Errorf("ID %d of epoch %d stamped %s, not after the horizon %s of epoch %d", v, r.epoch, cli.ExactMs(id.Time()), cli.ExactMs(prev), r.epoch-1)
				}
				if hasOwn && r.epoch <= lost && id.Time() > own {
					t.Errorf("ID %d of epoch %d stamped %s, after its lease's horizon %s", v, r.epoch, cli.ExactMs(id.Time()), cli.ExactMs(own))
				}
			}
		}
	}
	var causes []string
	for _, rs := range l.resps {
		for _, r := range rs {
			if r.status == 503 && !slices.Contains(causes, r.body) && len(causes) < 3 {
				causes = append(causes, r.body)
			}
		}
	}
	t.Logf("%d IDs in %d answers, %d of them after the loss; %d answers 503, e.g. %q; horizons %v", len(seen), ok, after, unavailable, causes, horizons)
	if unavailable == 0 {
		t.Error("no 503 while the lease was lost")
	}
	if l.count(func(r idsResp) bool { return r.status == 503 && strings.Contains(r.body, cause) }) == 0 {
		t.Errorf("no 503 names the cause %q: %q", cause, causes)
	}
	if after == 0 {
		t.Error("no IDs after the node ID was claimed again")
	}
}

// TestServeLeaseLostEvicted: under load, an operator evicts serve's claim
// ("nodeid evict 0 --epoch 1"): no ID of that lease is stamped after
// its horizon, requests get 503 with the cause, serve claims node 0 again
// and mints after the horizon, without a restart; no ID repeats.
func TestServeLeaseLostEvicted(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	// 6 s leases: a loaded machine must not lapse the lease before the
	// eviction, which would end it as expired.
	p := startServe(t, "--dsn", dsn, "--create", "--range", "0-0", "--ttl", "6s")
	l := startLossLoad(p.base, 2)
	testkit.Until(t, 30*time.Second, "IDs under epoch 1", testkit.True(func() bool { return l.count(func(r idsResp) bool { return r.status == 200 }) >= 10 }))
	harness.Must(t, "evict", "0", "--epoch", "1", "--yes", "--dsn", dsn)
	waitReclaimed(t, p, l)
	l.finish(t)
	l.check(t, db, 1, "evicted")
	p.stop(t)
	// One line says the loss, once, prefixed once.
	stderr := p.stderr.String()
	if n := strings.Count(stderr, " lost"); n != 1 || strings.Contains(stderr, "nodeid: nodeid:") {
		t.Errorf("%d lines say the lease was lost, want 1, none with a doubled prefix:\n%s", n, stderr)
	}
}

// waitReclaimed waits until serve, whose lease of node 0 was lost, mints
// under the node ID's next claim, epoch 2.
func waitReclaimed(t *testing.T, p *serveProc, l *lossLoad) {
	t.Helper()
	testkit.Until(t, 60*time.Second, "IDs under epoch 2", testkit.True(func() bool {
		if p.exited() {
			t.Fatalf("nodeid serve exited: %s", p.stderr.String())
		}
		return l.count(func(r idsResp) bool { return r.status == 200 && r.epoch == 2 }) >= 10
	}))
}

// TestServeLeaseLostPaused: under load, the database is paused (SIGSTOP)
// past the TTL: serve's lease reaches its deadline, requests get 503 at
// once, and once the database answers again serve claims node 0 anew; no
// ID repeats, none of the lapsed lease is stamped after its horizon.
func TestServeLeaseLostPaused(t *testing.T) {
	srv := pgtest.NewServer(t)
	db, dsn := srv.NewDB(t)
	p := startServe(t, "--dsn", dsn, "--create", "--range", "0-0", "--ttl", "3s")
	l := startLossLoad(p.base, 2)
	testkit.Until(t, 30*time.Second, "IDs under epoch 1", testkit.True(func() bool { return l.count(func(r idsResp) bool { return r.status == 200 }) >= 10 }))
	var expiry time.Time
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT expires_at FROM snowflake_nodes WHERE node_id = 0`).Scan(&expiry); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	testkit.Until(t, 30*time.Second, "503 from the paused lease", testkit.True(func() bool {
		return l.count(func(r idsResp) bool { return r.status == 503 }) > 0
	}))
	// The row expires at most a TTL after the pause (a renewal may have
	// landed before it): from then on a claim is a new epoch.
	testkit.Until(t, 30*time.Second, "the TTL passing", testkit.True(func() bool { return time.Now().After(expiry.Add(3 * time.Second)) }))
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitReclaimed(t, p, l)
	l.finish(t)
	l.check(t, db, 1, "expired")
	p.stop(t)
}

// TestServeUnixSocket: --listen unix:PATH serves on a Unix socket (a
// sidecar), which is removed when serve stops.
func TestServeUnixSocket(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	sock := filepath.Join(t.TempDir(), "ids.sock")
	p := startUnixServe(t, dsn, sock)
	if !strings.Contains(p.stderr.String(), "serving IDs on unix:"+sock) {
		t.Errorf("stderr does not name the socket: %s", p.stderr.String())
	}
	p.stop(t)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket is left behind: %v", err)
	}
}

// TestServeUnixSocketAfterACrash: a serve that was killed leaves its socket
// behind, and the next one on that path removes it and serves; a socket
// that a serve still accepts on is left alone, and a second serve on it
// fails with exit 1 (a failure, not a usage error), saying so.
func TestServeUnixSocketAfterACrash(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	sock := filepath.Join(t.TempDir(), "ids.sock")
	first := startUnixServe(t, dsn, sock)
	_ = first.cmd.Process.Kill()
	<-first.done
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the killed serve left no socket behind, which this test needs: %v", err)
	}
	second := startUnixServe(t, dsn, sock)

	c, err := clitest.Self(context.Background(), "serve", "--dsn", dsn, "--listen", "unix:"+sock)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "another serve holds "+sock+".lock: it serves on the socket") {
		t.Errorf("a serve on the socket of a running one: %v; want exit 1 saying another serve holds the path: %s", err, out)
	}
	// A process other than a serve that accepts on the path is left alone
	// too.
	other := filepath.Join(t.TempDir(), "other.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := listen("unix", other); err == nil || !strings.Contains(err.Error(), "another process serves on the socket") {
		t.Errorf("listen on a socket another process accepts on: %v; want refused, saying so", err)
	}
	if _, err := getIDs(second.client, second.base, 1); err != nil {
		t.Errorf("the running serve no longer answers on its socket: %v", err)
	}
	second.stop(t)
}

// startUnixServe starts "nodeid serve" on the Unix socket sock and waits
// until it serves IDs there; p.client reaches it.
func startUnixServe(t *testing.T, dsn, sock string) *serveProc {
	t.Helper()
	c, err := clitest.Self(context.Background(), "serve", "--dsn", dsn, "--create", "--listen", "unix:"+sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: c, done: make(chan struct{}), base: "http://sidecar"}
	c.Stderr = &p.stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-p.done
	})
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	p.client = &http.Client{Transport: tr, Timeout: time.Minute}
	var r idsResp
	testkit.Until(t, 60*time.Second, "IDs on the socket", testkit.True(func() bool {
		if p.exited() {
			t.Fatalf("nodeid serve exited: %s", p.stderr.String())
		}
		r, err = getIDs(p.client, p.base, 3)
		return err == nil && r.status == 200
	}))
	if len(r.ids) != 3 || bw.ID(r.ids[0]).Node() != r.node {
		t.Errorf("IDs on the socket: %+v", r)
	}
	return p
}

// TestServeMissingTable: without --create, a missing table ends serve at
// once (exit 1), saying so, rather than retrying for ever.
func TestServeMissingTable(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	r := harness.Run(t, "serve", "--dsn", dsn, "--listen", "127.0.0.1:0")
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "snowflake_nodes") || !strings.Contains(r.Stderr, "or add --create") {
		t.Errorf("%+v, want exit 1 naming the table and --create", r)
	}
}

// FuzzServeCount: the count of /ids is accepted exactly when it is a
// decimal of 1 to ServeMaxCount, and no query panics the parser.
func FuzzServeCount(f *testing.F) {
	for _, s := range []string{"count=1", "count=10000", "count=10001", "count=0", "count=-1", "count=1e3", "count=%31", "count=1&count=2", "n=1", "count=+5", "count=0010"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/ids", nil)
		req.URL.RawQuery = query
		n, err := parseCount(req)
		vals, perr := url.ParseQuery(query)
		v := vals["count"]
		valid := perr == nil && len(vals) == 1 && len(v) == 1 && regexp.MustCompile(`^[0-9]+$`).MatchString(v[0])
		want := 0
		if valid {
			if x, err := strconv.Atoi(v[0]); err == nil && x >= 1 && x <= ServeMaxCount {
				want = x
			}
		}
		switch {
		case want > 0 && (err != nil || n != want):
			t.Errorf("%q: %d, %v; want %d", query, n, err, want)
		case want == 0 && err == nil:
			t.Errorf("%q: accepted as %d", query, n)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: a reason of more than one line: %q", query, err)
		}
	})
}

// FuzzServeListen: --listen is HOST:PORT or unix:PATH, and no value
// panics the parser.
func FuzzServeListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", ":8080", "[::1]:80", "unix:/run/x.sock", "unix:", "8080", "host"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		network, addr, err := listenAddr(s)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "--listen") {
				t.Errorf("%q: the error does not name the flag: %v", s, err)
			}
		case network == "unix":
			if addr == "" || "unix:"+addr != s {
				t.Errorf("%q: unix %q", s, addr)
			}
		case network == "tcp":
			if _, _, err := net.SplitHostPort(addr); err != nil || addr != s {
				t.Errorf("%q: tcp %q: %v", s, addr, err)
			}
		default:
			t.Errorf("%q: network %q", s, network)
		}
	})
}

// TestServeTwoServesOnAStaleSocket: two serves that start at once on a
// socket a killed serve left behind take turns through the path's lock:
// one serves on the socket, the other fails saying why, and never do both
// listen, the first on a socket the second removed.
func TestServeTwoServesOnAStaleSocket(t *testing.T) {
	// Not parallel: a process the tests fork meanwhile inherits, until it
	// executes, the descriptors of the stale socket and of the lock, and
	// keeps both taken for that while.
	sock := filepath.Join(t.TempDir(), "ids.sock")
	for trial := range 1000 {
		_ = os.Remove(sock)
		stale, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		stale.(*net.UnixListener).SetUnlinkOnClose(false)
		stale.Close() // a killed serve's socket: no process accepts on it
		var (
			wg   sync.WaitGroup
			lns  [2]net.Listener
			errs [2]error
		)
		start := make(chan struct{})
		for i := range lns {
			wg.Go(func() {
				<-start
				lns[i], errs[i] = listen("unix", sock)
			})
		}
		close(start)
		wg.Wait()
		var up []net.Listener
		for i, ln := range lns {
			switch {
			case errs[i] == nil:
				up = append(up, ln)
			case !strings.Contains(errs[i].Error(), "another serve holds "+sock+".lock") &&
				!strings.Contains(errs[i].Error(), "another process serves on the socket"):
				t.Errorf("trial %d: listen failed otherwise than for the other serve: %v", trial, errs[i])
			}
		}
		if len(up) != 1 {
			t.Fatalf("trial %d: %d of two serves started at once on a stale socket listen (errors %v, %v); want one", trial, len(up), errs[0], errs[1])
		}
		c, err := net.DialTimeout("unix", sock, time.Minute)
		if err != nil {
			t.Fatalf("trial %d: the serve that listens is not reachable on %s: %v", trial, sock, err)
		}
		c.Close()
		if err := up[0].Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Fatalf("trial %d: the socket outlived its serve: %v", trial, err)
		}
	}
}

// serveAsNobody runs this test binary as "nodeid serve --listen
// unix:SOCK" under uid/gid 65534 (nobody), in the working directory cwd,
// against a database that does not answer (serve listens before its first
// claim), and returns its stderr up to the line saying it serves, or all
// of it if it exits first; serving reports which. It skips the test unless
// it runs as root.
func serveAsNobody(t *testing.T, cwd, sock string) (stderr string, serving bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run serve as another user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's own directory is not nobody's to read.
	bindir, err := os.MkdirTemp("", "serve-nobody-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bindir) })
	if err := os.Chmod(bindir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(bindir, "nodeid.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "serve", "--dsn", "postgres://x@127.0.0.1:1/x?connect_timeout=1", "--listen", "unix:"+sock)
	c.Dir = cwd
	c.Env = append(os.Environ(), clitest.EnvBeCLI+"=1")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	errp, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader passes lines on until this function returns, then reads
	// on to the end of the killed serve's output, which Wait waits for.
	lines, stop, read := make(chan string), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		defer close(lines)
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
			}
		}
		_, _ = io.Copy(io.Discard, errp)
	}()
	defer func() {
		close(stop)
		_ = c.Process.Kill()
		<-read
		_ = c.Wait()
	}()
	var b strings.Builder
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return b.String(), false
			}
			b.WriteString(l + "\n")
			if strings.Contains(l, "serving IDs on") {
				return b.String(), true
			}
		case <-timeout:
			t.Fatalf("serve neither served nor exited in 30s: %s", b.String())
		}
	}
}

// TestServeSocketLockLeftByAnotherUser: the lock file of a socket's path
// stays after serve exits, so one left by a serve that another user (root,
// by hand) ran once on the path must not keep the service's own user from
// serving there: it is created 0644 and opened read-only (flock needs no
// write access). Before, it was created 0600 and opened for writing, and
// every later serve of the service's user on the path exited 1 with
// "permission denied". A lock file that still cannot be opened (0600, as
// those serves left it) fails with an error that names it and its owner.
func TestServeSocketLockLeftByAnotherUser(t *testing.T) {
	dir, err := os.MkdirTemp("", "serve-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The service user's socket directory, as /run/nodeid.
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "ids.sock")
	// root serves on the path once and exits cleanly.
	ln, err := listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("root's serve left its socket: %v", err)
	}
	if stderr, ok := serveAsNobody(t, dir, sock); !ok {
		t.Errorf("the service user's serve on a path root once served on (socket removed, %s.lock left behind): did not serve:\n%s", sock, stderr)
	}
	if err := os.Chmod(sock+".lock", 0o600); err != nil {
		t.Fatal(err)
	}
	stderr, ok := serveAsNobody(t, dir, sock)
	if want := "lock file " + sock + ".lock, owned by root (uid 0) with mode -rw-------"; ok || !strings.Contains(stderr, want) || !strings.Contains(stderr, "permission denied") {
		t.Errorf("the service user's serve on a path whose lock file is root's, 0600: served %t; want it refused with %q and the reason:\n%s", ok, want, stderr)
	}
}

// TestServeAbstractSocketTakesNoLockFile: --listen unix:@NAME is a Linux
// abstract socket, which has no file to leave behind, and takes no lock.
// Before, serve created "@NAME.lock" in its working directory, and failed
// when that directory was not writable (a service whose working directory
// is /), where it had served before the lock.
func TestServeAbstractSocketTakesNoLockFile(t *testing.T) {
	cwd, err := os.MkdirTemp("", "serve-cwd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cwd) })
	if err := os.Chmod(cwd, 0o755); err != nil { // root's, not writable to nobody
		t.Fatal(err)
	}
	name := "@nodeid-test-" + strings.TrimPrefix(filepath.Base(cwd), "serve-cwd-")
	if stderr, ok := serveAsNobody(t, cwd, name); !ok {
		t.Errorf("serve --listen unix:%s in a working directory it cannot write: did not serve:\n%s", name, stderr)
	}
	t.Chdir(cwd)
	ln, err := listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ents, _ := os.ReadDir(cwd); len(ents) > 0 {
		t.Errorf("listening on the abstract socket %s left %s in the working directory", name, ents[0].Name())
	}
}

// TestServeBuildsWhereFlockIsNot: the socket path's lock is built only
// where syscall.Flock is (lock_unix.go), and lock_other.go takes no lock
// elsewhere. Before, lock_unix.go was built for every unix, and the CLI
// no longer built on Solaris and AIX ("undefined: syscall.Flock").
func TestServeBuildsWhereFlockIsNot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds for other systems")
	}
	t.Parallel()
	for _, target := range [][2]string{{"solaris", "amd64"}, {"aix", "ppc64"}} {
		c := exec.Command(clitest.GoTool(), "build", "-o", os.DevNull, ".")
		c.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("go build for %s/%s: %v\n%s", target[0], target[1], err, out)
		}
	}
}
