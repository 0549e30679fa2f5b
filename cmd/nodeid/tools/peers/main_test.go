package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/pgserver"
)

func TestMain(m *testing.M) { testkit.Main(m, nil) }

// needServers skips the test when a server program it needs is missing,
// or fails it naming what is missing when NODEID_TEST_REQUIRE_DB=1 (CI).
func needServers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL, etcd and Redis: skipped under -short")
	}
	var missing []string
	if _, _, err := lookPrograms(config{etcd: "etcd", redis: "redis-server"}); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := pgserver.FindBinaries(); err != nil {
		missing = append(missing, "missing PostgreSQL (Debian package postgresql): "+err.Error())
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv(pgtest.EnvRequire) == "1" {
		t.Fatalf("%s=1, and a server program is missing: %s", pgtest.EnvRequire, strings.Join(missing, "; "))
	}
	t.Skipf("a server program is missing (set %s=1 to fail instead): %s", pgtest.EnvRequire, strings.Join(missing, "; "))
}

// isolateTemp points TMPDIR, where the servers' directories go, at a new
// directory, and returns it. It is open to all: as root, PostgreSQL runs
// as the postgres user.
func isolateTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "peers-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
	return dir
}

// assertEmpty fails t if dir holds anything: a server's directory left
// behind.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in the temporary directory: %s", e.Name())
	}
}

func noDatabaseURL(string) string { return "" }

// The whole program at a tiny size: every item claims node 0 in every turn
// and releases it, the figures and the report have their shape, and the
// servers are gone after.
func TestRunSmoke(t *testing.T) {
	needServers(t)
	out := filepath.Join(t.TempDir(), "peers.json")
	tmp := isolateTemp(t)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"--turns", "20", "--json", "--out", out}, noDatabaseURL, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	assertEmpty(t, tmp)
	if stdout.Len() > 0 {
		t.Errorf("with --out, stdout got %q", stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("the JSON: %v\n%s", err, b)
	}

	if want := "peers --turns 20 --json --out " + out; res.Command != want {
		t.Errorf("command %q, want %q", res.Command, want)
	}
	if res.Turns != 20 || res.Warmup != warmup || res.IDs != 1024 {
		t.Errorf("turns %d, warm-up %d, IDs %d; want 20, %d, 1024", res.Turns, res.Warmup, res.IDs, warmup)
	}
	if m := res.Machine; m.CPU == "" || m.Cores < 1 || m.Go != runtime.Version() || m.LoadStart == "" || m.LoadEnd == "" {
		t.Errorf("machine %+v", m)
	}
	if !strings.HasPrefix(res.Database, "throwaway, 127.0.0.1:") {
		t.Errorf("database %q, want a throwaway one", res.Database)
	}

	settings := map[string]map[string]string{}
	for _, s := range res.Servers {
		if s.Version == "" || s.Client == "" || s.Where == "" {
			t.Errorf("server %+v lacks its version, client or address", s)
		}
		settings[s.Name] = map[string]string{}
		for _, kv := range s.Settings {
			settings[s.Name][kv[0]] = kv[1]
		}
	}
	if pg := settings["PostgreSQL"]; pg["fsync"] != "on" || pg["synchronous_commit"] != "on" {
		t.Errorf("PostgreSQL's settings %v, want fsync and synchronous_commit on", pg)
	}
	// Grant, Txn and Revoke: at least one fsync each.
	if n, err := strconv.ParseFloat(settings["etcd"]["WAL fsyncs per timed turn (its metrics)"], 64); err != nil || n < 3 {
		t.Errorf("etcd's WAL fsyncs per turn %v (%v), want 3 or more", settings["etcd"], err)
	}
	if r := settings["Redis"]; r["save"] != `""` || r["appendonly"] != `"no"` {
		t.Errorf("Redis's settings %v, want save \"\" and appendonly no", r)
	}

	wantOps := []struct {
		peer, op string
		trips    float64
		unit     string
	}{
		{"nodeid", "Acquire", 1, "round trips"},
		{"nodeid", "Release", 1, "round trips"},
		{"floor", "UPDATE", 1, "round trips"},
		{"bare", "claim (UPDATE, SKIP LOCKED)", 1, "round trips"},
		{"bare", "release (UPDATE)", 1, "round trips"},
		{"etcd", "claim (Grant, Get, Txn)", 3, "RPCs"},
		{"etcd", "Revoke", 1, "RPCs"},
		{"redis", "claim (EVALSHA)", 1, "round trips"},
		{"redis", "release (EVALSHA)", 1, "round trips"},
	}
	if len(res.Ops) != len(wantOps) {
		t.Fatalf("%d operations, want %d: %+v", len(res.Ops), len(wantOps), res.Ops)
	}
	for i, w := range wantOps {
		o := res.Ops[i]
		if o.Peer != w.peer || o.Op != w.op || o.Trips != w.trips || o.TripUnit != w.unit {
			t.Errorf("operation %d: %s %s, %v %s per call; want %s %s, %v %s", i, o.Peer, o.Op, o.Trips, o.TripUnit,
				w.peer, w.op, w.trips, w.unit)
		}
		if len(o.Latencies) != 20 || o.P50 <= 0 || o.P99 < o.P50 {
			t.Errorf("%s %s: %d latencies, p50 %d, p99 %d", o.Peer, o.Op, len(o.Latencies), o.P50, o.P99)
		}
	}

	// Warm-up, timed and closing turns: each claimed node 0, and the next
	// claim of node 0 shows the previous release freed it.
	claims := warmup + 20 + 1
	if len(res.Claims) != 4 {
		t.Fatalf("claims of %d allocators, want 4: %+v", len(res.Claims), res.Claims)
	}
	for i, peer := range []string{"nodeid", "bare", "etcd", "redis"} {
		c := res.Claims[i]
		if c.Peer != peer || !reflect.DeepEqual(c.Nodes, map[int64]int{0: claims}) || c.Released != claims {
			t.Errorf("claims %+v; want %s: node 0 claimed and released %d times", c, peer, claims)
		}
	}

	if len(res.Ratios) != 3+8 {
		t.Fatalf("%d ratios, want 11: %+v", len(res.Ratios), res.Ratios)
	}
	for i, r := range res.Ratios {
		if r.Value <= 0 || (i < 3) != (r.Met != nil) || (i < 3) != (r.Target != "") {
			t.Errorf("ratio %d: %+v", i, r)
		}
	}
	for i, w := range []string{"etcd claim p50 / nodeid Acquire p50", "nodeid Release p50 / etcd Revoke p50",
		"nodeid Acquire p50 / Redis claim p50", "nodeid Acquire p50 / floor UPDATE p50"} {
		if res.Ratios[i].Name != w {
			t.Errorf("ratio %d is %q, want %q", i, res.Ratios[i].Name, w)
		}
	}

	md := render(&res)
	last := -1
	for _, h := range []string{"# nodeid against its peers\n", "\n## Machine\n", "\n## Servers\n", "\n## Latency\n",
		"\n## Ratios\n", "\n## Claims\n", "\n## What each allocator does per call\n", "\n## What the ratios rest on\n"} {
		i := strings.Index(md, h)
		if i <= last {
			t.Errorf("the report lacks %q after the previous heading", h)
		}
		last = i
	}
	for _, s := range []string{"| nodeid | Acquire | 1 round trip |", "| etcd | claim (Grant, Get, Txn) | 3 RPCs |",
		"| etcd claim p50 / nodeid Acquire p50 |", "Neither durable nor fenced", "With fewer than 100 turns",
		"| bare | claim (UPDATE, SKIP LOCKED) | 1 round trip |", "| bare claim (UPDATE, SKIP LOCKED) p50 / floor UPDATE p50 |",
		"The bare claim, one `UPDATE` of the lowest free row"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report lacks %q:\n%s", s, md)
		}
	}
	if n := strings.Count(md, "node 0 in all 31"); n != 4 {
		t.Errorf("the report says node 0 in all 31 claims %d times, want 4:\n%s", n, md)
	}
}

// cancelOn is a progress writer that cancels when a line contains what.
type cancelOn struct {
	what   string
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.what)) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// Interrupted in the middle of the turns (as Ctrl-C does, through the
// context), the program stops every server and removes their directories,
// and writes no report.
func TestRunInterrupted(t *testing.T) {
	needServers(t)
	out := filepath.Join(t.TempDir(), "peers.md")
	tmp := isolateTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelOn{what: "4 of 20 turns", cancel: cancel}
	err := run(ctx, []string{"--turns", "20", "--out", out}, noDatabaseURL, io.Discard, progress)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run returned %v, want context.Canceled\n%s", err, progress.buf.String())
	}
	if !strings.Contains(progress.buf.String(), "4 of 20 turns") {
		t.Fatalf("not interrupted during the turns:\n%s", progress.buf.String())
	}
	assertEmpty(t, tmp)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted run wrote %s (%v)", out, err)
	}
}

// With DATABASE_URL, the program works in scratch tables of its own, drops
// them, leaves every other table alone, never prints the password, and
// refuses a database whose commits are not durable.
func TestRunDatabaseURL(t *testing.T) {
	needServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := pgserver.StartLocal(ctx, "fsync=on")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	name, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const password = "s3cret-pw"
	u, err := url.Parse(srv.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("postgres", password) // the server trusts: any password does
	dsn := u.String()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE keep (v text); INSERT INTO keep VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
	tables := func() []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') AND relnamespace = 'public'::regnamespace ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	}

	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"--turns", "10"}, env, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if got := tables(); !reflect.DeepEqual(got, []string{"keep"}) {
		t.Errorf("tables after the run: %v, want only keep", got)
	}
	var v string
	if err := db.QueryRowContext(ctx, `SELECT v FROM keep`).Scan(&v); err != nil || v != "mine" {
		t.Errorf("keep holds %q (%v), want mine", v, err)
	}
	if !strings.Contains(stdout.String(), "| PostgreSQL | ") || !strings.Contains(stdout.String(), "DATABASE_URL, user postgres at 127.0.0.1:") {
		t.Errorf("the report does not describe DATABASE_URL's server:\n%s", stdout.String())
	}

	// A database whose commits do not wait for the WAL's flush is refused,
	// before any table is made.
	if _, err := db.ExecContext(ctx, `ALTER DATABASE `+name+` SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	err = run(ctx, []string{"--turns", "10"}, env, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "synchronous_commit=off") {
		t.Errorf("with synchronous_commit off, run returned %v; want a refusal naming synchronous_commit=off", err)
	}
	if got := tables(); !reflect.DeepEqual(got, []string{"keep"}) {
		t.Errorf("tables after the refusal: %v, want only keep", got)
	}
	for _, s := range []string{stdout.String(), stderr.String(), errString(err)} {
		if strings.Contains(s, password) {
			t.Errorf("the password was printed: %s", s)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 down to 1: the sort matters
	}
	for _, c := range []struct {
		lat  []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(3, 1, 2), 50, 2 * time.Millisecond},
		{ms(4, 3, 2, 1), 50, 2 * time.Millisecond}, // nearest rank: the 2nd of 4
		{ms(hundred...), 50, 50 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 100, 100 * time.Millisecond},
		{ms(append(hundred, 1000)...), 99, 100 * time.Millisecond}, // rank 100 of 101
	} {
		in := append([]time.Duration(nil), c.lat...)
		if got := percentile(c.lat, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.lat, c.p, got, c.want)
		}
		if !reflect.DeepEqual(in, c.lat) {
			t.Errorf("percentile reordered its input: %v", c.lat)
		}
	}
}

func TestOrder(t *testing.T) {
	if got := order(0, 4); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Errorf("order(0, 4) = %v", got)
	}
	if got := order(5, 4); !reflect.DeepEqual(got, []int{1, 2, 3, 0}) {
		t.Errorf("order(5, 4) = %v", got)
	}
	// Over n turns, every item runs once in every position, and every
	// turn runs each item once.
	const n = 4
	var seen [n][n]int // item, position
	for turn := range n {
		o := order(turn, n)
		ran := map[int]bool{}
		for pos, item := range o {
			seen[item][pos]++
			ran[item] = true
		}
		if len(o) != n || len(ran) != n {
			t.Errorf("turn %d runs %v, not each of %d items once", turn, o, n)
		}
	}
	for item := range n {
		for pos := range n {
			if seen[item][pos] != 1 {
				t.Errorf("over %d turns item %d ran %d times in position %d, want once", n, item, seen[item][pos], pos)
			}
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args  []string
		turns int
		json  bool
	}{
		{nil, 2000, false},
		{[]string{"--quick"}, 200, false},
		{[]string{"--turns", "10", "--json"}, 10, true},
		{[]string{"-turns=1000000"}, 1000000, false},
	} {
		cfg, err := parseFlags(c.args, io.Discard)
		if err != nil || cfg.turns != c.turns || cfg.json != c.json {
			t.Errorf("parseFlags(%q) = %d turns, json %v, %v; want %d, %v", c.args, cfg.turns, cfg.json, err, c.turns, c.json)
		}
	}
	for _, c := range []struct {
		args []string
		want []string // in the error: the value and the rule
	}{
		{[]string{"--turns", "9"}, []string{"--turns 9", "10 to 1000000"}},
		{[]string{"--turns", "1000001"}, []string{"--turns 1000001", "10 to 1000000"}},
		{[]string{"--turns", "-1"}, []string{"--turns -1", "10 to 1000000"}},
		{[]string{"--turns", "many"}, []string{`"many"`, "turns"}},
		{[]string{"--quick", "--turns", "300"}, []string{"--quick and --turns 300", "one or the other"}},
		{[]string{"extra"}, []string{`"extra"`, "flags only"}},
		{[]string{"--out", ""}, []string{`--out ""`, "name a file"}},
		{[]string{"--out", "/no/such/dir/report.md"}, []string{`"/no/such/dir/report.md"`, "directory must exist"}},
		{[]string{"--etcd", ""}, []string{`--etcd ""`, "etcd program"}},
		{[]string{"--redis-server", ""}, []string{`--redis-server ""`, "redis-server program"}},
		{[]string{"--nope"}, []string{"-nope"}},
	} {
		_, err := parseFlags(c.args, io.Discard)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("parseFlags(%q) = %v, want a usage error", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseFlags(%q): %q does not name %q", c.args, err, w)
			}
		}
	}
}

// A missing server program is an error naming it, before anything starts.
func TestMissingProgram(t *testing.T) {
	_, _, err := lookPrograms(config{etcd: "/no/such/etcd", redis: "/no/such/redis-server"})
	if err == nil || !strings.Contains(err.Error(), "/no/such/etcd") || !strings.Contains(err.Error(), "/no/such/redis-server") {
		t.Errorf("lookPrograms = %v, want an error naming both", err)
	}
	err = run(context.Background(), []string{"--etcd", "/no/such/etcd"}, noDatabaseURL, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "etcd") {
		t.Errorf("run with no etcd = %v, want an error naming it", err)
	}
}

func TestNewRatio(t *testing.T) {
	for _, c := range []struct {
		num, den time.Duration
		op       string
		bound    float64
		value    float64
		target   string
		met      *bool
	}{
		{3, 1, ">=", 3, 3, ">= 3", ptr(true)},
		{2, 1, ">=", 3, 2, ">= 3", ptr(false)},
		{1, 2, "<=", 1, 0.5, "<= 1", ptr(true)},
		{11, 2, "<=", 5, 5.5, "<= 5", ptr(false)},
		{1, 4, "", 0, 0.25, "", nil},
		{1, 0, "<=", 5, 0, "<= 5", ptr(true)}, // no denominator: 0
	} {
		r := newRatio("r", c.num, c.den, c.op, c.bound)
		if r.Value != c.value || r.Target != c.target || !reflect.DeepEqual(r.Met, c.met) {
			t.Errorf("newRatio(%v, %v, %q, %v) = %+v, want %v %q %v", c.num, c.den, c.op, c.bound, r, c.value, c.target, c.met)
		}
	}
}

func ptr(b bool) *bool { return &b }

func TestFormats(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2011: "2,011", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for _, c := range []struct {
		n          float64
		unit, want string
	}{{1, "round trips", "1 round trip"}, {3, "RPCs", "3 RPCs"}, {1.25, "round trips", "1.25 round trips"}} {
		if got := trips(c.n, c.unit); got != c.want {
			t.Errorf("trips(%v, %q) = %q, want %q", c.n, c.unit, got, c.want)
		}
	}
	if got := nodesText(map[int64]int{0: 3, 2: 1}, 4); got != "node 0: 3, node 2: 1" {
		t.Errorf("nodesText = %q", got)
	}
}

// TestRestsOn: the explanation puts each tracked ratio in floors, and is
// left out when an operation is missing.
func TestRestsOn(t *testing.T) {
	ops := []Op{
		{Peer: "nodeid", Op: "Acquire", P50: 600}, {Peer: "nodeid", Op: "Release", P50: 400},
		{Peer: "floor", Op: "UPDATE", P50: 200},
		{Peer: "etcd", Op: "claim (Grant, Get, Txn)", P50: 1200}, {Peer: "etcd", Op: "Revoke", P50: 300},
		{Peer: "redis", Op: "claim (EVALSHA)", P50: 100}, {Peer: "redis", Op: "release (EVALSHA)", P50: 40},
	}
	if got := strings.Join(restsOn(ops), "\n"); strings.Contains(got, "bare") {
		t.Errorf("without the bare claim, the explanation speaks of it:\n%s", got)
	}
	ops = append(ops, Op{Peer: "bare", Op: "claim (UPDATE, SKIP LOCKED)", P50: 240}, Op{Peer: "bare", Op: "release (UPDATE)", P50: 220})
	got := strings.Join(restsOn(ops), "\n")
	for _, want := range []string{
		"the claim costs 3.00 floors, etcd's Revoke (one Raft write and its fsync) 1.50 and its three-RPC claim 6.00",
		"within 2.00 floors",
		"2.00 floors against 1.50",
		"costs 2.00 Redis claims, and nodeid's claim costs 3.00 floors, which makes the 6.00×; ≤ 5× would need the claim within 2.50 floors",
		"Redis's claim costs 2.5× its release",
		"costs 1.20 floors, and its release 1.10: etcd's claim is 5.00× the bare claim, and the bare claim 2.40× Redis's",
		"beyond it (1.80 floors)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if r := restsOn(ops[1:]); r != nil {
		t.Errorf("without nodeid's Acquire: %q", r)
	}
}
