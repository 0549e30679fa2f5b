package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/ from the generator")

// goldenCase is one set of inputs of the report and the golden file its
// rendering must equal.
type goldenCase struct {
	name                                 string
	res                                  *bench.Results
	snowflake, snowflakeStat             string
	statements, statementsStat           string
	lockWaits                            string
	snowflakeCmd, statementsCmd, lockCmd string
	benchstatCmd, script                 string
	elapsed                              time.Duration
	floor                                *bench.Results // a floor run's, or nil
}

// TestGolden renders every fixture and compares the report with its golden
// file, byte for byte: a change of the report's text shows as a change of
// testdata/*.md.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			got := renderCase(t, c)
			path := filepath.Join("testdata", c.name+".md")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("the report of %s differs from %s (go test -run TestGolden -update rewrites it):\n%s", c.name, path, firstDiff(string(want), string(got)))
			}
		})
	}
}

// renderCase writes the case's inputs to files, runs the generator on them
// and returns the report.
func renderCase(t *testing.T, c goldenCase) []byte {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(c.res)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name, text string) string {
		if text == "" {
			return ""
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	results := file("bench.json", string(b))
	floor := ""
	if c.floor != nil {
		fb, err := json.Marshal(c.floor)
		if err != nil {
			t.Fatal(err)
		}
		floor = file("floor.json", string(fb))
	}
	out := filepath.Join(dir, "docs", "BENCHMARKS.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	err = run(results, file("snowflake.txt", c.snowflake), file("snowflake.stat", c.snowflakeStat), c.snowflakeCmd,
		file("statements.txt", c.statements), file("statements.stat", c.statementsStat), c.statementsCmd,
		c.benchstatCmd, file("lockwaits.txt", c.lockWaits), c.lockCmd, c.script, c.elapsed, out, filepath.Dir(out), floor)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return "no line differs"
}

const (
	fixSnowflakeCmd  = "go test -run '^$' -bench . -count 2 ./snowflake"
	fixStatementsCmd = "go test -run '^$' -bench Statement -count 2 ./internal/bench"
	fixLockCmd       = "go -C tools run ./lockwaits -claimers 512 -ids 1024 -variants library,sql -repeat 2"
	fixBenchstatCmd  = "go run golang.org/x/perf/cmd/benchstat@latest"
)

// goldenCases are the fixtures: a full run with every section, one that
// missed targets of each kind; a partial run with failed scenarios and no
// Go benchmarks; the small fixture of TestReport; and a run of nothing.
func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "full", res: fullFixture(), snowflake: fullSnowflake, snowflakeStat: fullSnowflakeStat,
			statements: fullStatements, statementsStat: fullStatementsStat, lockWaits: fullLockWaits,
			snowflakeCmd: fixSnowflakeCmd, statementsCmd: fixStatementsCmd, lockCmd: fixLockCmd, benchstatCmd: fixBenchstatCmd,
			script: "scripts/bench.sh", elapsed: 19*time.Minute + 40*time.Second, floor: floorFixture()},
		{name: "partial", res: partialFixture(), snowflakeCmd: fixSnowflakeCmd, statementsCmd: fixStatementsCmd,
			benchstatCmd: fixBenchstatCmd, script: "scripts/bench.sh"},
		{name: "small", res: fixture(), snowflake: snowflakeOut, snowflakeCmd: "go test ./snowflake",
			benchstatCmd: "benchstat", script: "scripts/bench.sh", elapsed: time.Minute},
		{name: "empty", res: &bench.Results{Command: "nodeid bench --only herd"}, snowflakeCmd: fixSnowflakeCmd,
			benchstatCmd: fixBenchstatCmd, script: "scripts/bench.sh"},
	}
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// dist is a latency distribution with the given p50 and p99, in
// milliseconds.
func dist(p50, p99 float64) bench.Dist {
	return bench.Dist{N: 500, Min: ms(p50 / 3), P50: ms(p50), P90: ms((p50 + p99) / 2), P99: ms(p99), Max: ms(p99 * 1.2)}
}

// fullFixture is a run of every scenario, repeated, that missed a target
// of each kind: lock waits in the herd, the overhead at concurrency 1,
// the lowest-free order at one scale point, one statement per renewal.
func fullFixture() *bench.Results {
	res := &bench.Results{Command: "nodeid bench --repeat=2"}
	e := &res.Env
	e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.GoVersion = "Test EPYC", 2, 2, "linux/amd64", "go1.26.8"
	e.LoadStart, e.LoadEnd = "0.52 0.61 0.70", "3.10 2.20 1.40"
	e.Server = "PostgreSQL 15.18 on x86_64-pc-linux-gnu"
	e.Where = "throwaway PostgreSQL (local) at 127.0.0.1:5999, database nodeid_1_1"
	e.Settings = []bench.Setting{
		{Name: "fsync", Value: "off", Source: "command line"},
		{Name: "full_page_writes", Value: "off", Source: "command line"},
		{Name: "listen_addresses", Value: "127.0.0.1", Source: "command line"},
		{Name: "max_connections", Value: "700", Source: "command line"},
		{Name: "port", Value: "5999", Source: "command line"},
		{Name: "unix_socket_directories", Value: "/tmp/x", Source: "command line"},
	}
	e.Pgbench = "pgbench (PostgreSQL) 15.18"
	e.Started = time.Date(2026, 11, 30, 2, 14, 49, 0, time.UTC)
	e.Elapsed = bench.Duration(13*time.Minute + 28*time.Second)
	e.Notes = []string{"pg_stat_statements was created in the scratch database", "the load average rose above 2 during the herd"}
	e.Config.Ops = 1000

	res.Herd = &bench.HerdResult{Claimers: 512, IDs: 1024, ExecMode: bench.ModeCache}
	herd := map[string]struct {
		p50, p99, wall float64
		lockSamples    int
		samples        int
		maxWaiters     int
		failed         int
		events         map[string]int
	}{
		bench.HerdLibrary:  {300, 1650, 1714, 4, 16, 9, 0, map[string]int{"LWLock:BufferContent": 157, "LWLock:LockManager": 48, "Lock:transactionid": 9, "LWLock:WALInsert": 5, "LWLock:WALWrite": 4, "Lock:extend": 3, "IO:DataFileRead": 2}},
		bench.HerdSQL:      {305, 580, 617, 6, 11, 8, 0, map[string]int{"LWLock:LockManager": 88, "Lock:transactionid": 8, "LWLock:BufferContent": 7}},
		bench.HerdNoSkip:   {308, 978, 1006, 56, 59, 289, 3, map[string]int{"Lock:tuple": 279, "Lock:transactionid": 38, "LWLock:LockManager": 3}},
		bench.HerdAdvisory: {895, 1722, 1846, 1517, 1522, 508, 0, map[string]int{"Lock:advisory": 508, "LWLock:LockManager": 156}},
	}
	for rep := 1; rep <= 2; rep++ {
		k := float64(rep) * 0.1 // the second repetition runs 10% slower
		for _, v := range bench.HerdVariants {
			h := herd[v]
			ok := 512 - h.failed*rep
			res.Herd.Runs = append(res.Herd.Runs, bench.HerdRun{Rep: rep, Variant: v,
				Latency: dist(h.p50*(0.9+k), h.p99*(0.9+k)), Wall: bench.Duration(ms(h.wall * (0.9 + k))),
				Succeeded: ok, Failed: 512 - ok, Distinct: ok,
				Waits:  bench.Waits{Samples: h.samples / 2, LockSamples: h.lockSamples / 2, MaxLockWaiters: h.maxWaiters - rep + 1, Events: h.events},
				Millis: []float64{h.p50 / 3, h.p50, h.p99, h.wall}})
		}
	}

	res.Overhead = &bench.OverheadResult{IDs: 1024, Duration: bench.Duration(6 * time.Second), Pgbench: e.Pgbench,
		Script: "\\set node random(:lo, :hi)\nWITH free AS (SELECT 1) SELECT node_id \\gset\nUPDATE t SET owner = NULL WHERE node_id = :node_id;",
		Floor:  "UPDATE f SET n = n + 1 WHERE id = 1;\nUPDATE f SET n = n + 1 WHERE id = 2;",
		Vars:   []string{"lo=0", "hi=1023"}, Chunks: 3, Chunk: bench.Duration(2 * time.Second)}
	for rep := 1; rep <= 2; rep++ {
		k := 1 + 0.05*float64(rep)
		for _, m := range []struct {
			mode, pgb string
			scale     float64
		}{{bench.ModeCache, "prepared", 1}, {bench.ModeExec, "extended", 0.3}} {
			for _, c := range []struct {
				n                     int
				lib, store, pgb, flr  float64
				libCPU, stCPU, pgbCPU float64
			}{{1, 2777, 2900, 4500, 9000, 207, 190, 52}, {8, 4051, 4100, 4316, 12000, 150, 140, 45}, {32, 2500, 2400, 1058, 11000, 120, 118, 60}} {
				res.Overhead.Runs = append(res.Overhead.Runs, bench.OverheadRun{Rep: rep, Mode: m.mode, PgbenchMode: m.pgb, Concurrency: c.n,
					Library: c.lib * m.scale * k, Store: c.store * m.scale * k, Emptied: c.lib * m.scale * k * 0.8,
					Pgbench: c.pgb * m.scale * (2 - k), Floor: c.flr * k,
					LibraryCPU: c.libCPU * k, StoreCPU: c.stCPU * k, PgbenchCPU: c.pgbCPU * k})
			}
		}
	}

	res.Scale = &bench.ScaleResult{Samples: 500, ExecMode: bench.ModeCache}
	for _, ids := range []int{1024, 65536} {
		for rep := 1; rep <= 2; rep++ {
			k := 1 + 0.1*float64(rep)
			point := func(f float64, state string, p50 float64, violations int) {
				res.Scale.Points = append(res.Scale.Points, bench.ScalePoint{Rep: rep, IDs: ids, Fraction: f, State: state,
					Held: int(f * float64(ids)), Latency: dist(p50*k, 2*p50*k), OrderChecked: 10, OrderViolations: violations})
			}
			for _, f := range []float64{0, 0.5, 0.9, 0.999} {
				point(f, bench.StateHeld, 0.4+0.02*f, 0)
			}
			point(0.999, bench.StateUnvacuumed, 1.7, 0)
			point(0, bench.StateLapsed, 0.9, 0)
			v := 0
			if ids == 65536 && rep == 2 {
				v = 1
			}
			point(0.5, bench.StateLapsed, 0.8, v)
		}
		res.Scale.Plans = append(res.Scale.Plans, bench.Plan{IDs: ids, Fraction: 0.999, State: bench.StateHeld, Kind: "custom",
			Text: "Update on t  (actual time=0.040..0.041 rows=1 loops=1)\n  ->  Limit  (actual time=0.020..0.021 rows=1 loops=1)\n        ->  Index Scan using t_free_idx on t"})
	}
	res.Scale.Plans = append(res.Scale.Plans, bench.Plan{IDs: 1024, Fraction: 0.5, State: bench.StateLapsed, Kind: "generic",
		Text: "Update on t\n  ->  Sort\n        ->  Index Scan using t_lapse_idx on t\n"})

	res.RoundTrips = &bench.RoundTripResult{Server: true, ExecMode: bench.ModeCache, IDs: 1024, Claims: 1001, HistoryRows: 1001,
		First: bench.OpCount{Op: "first acquire", N: 1, OwnStatement: 1, Other: 11, Client: 7, Writes: 12},
		FirstStatements: []bench.StmtCalls{
			{Query: "SELECT to_regclass($1)", Calls: 2},
			{Query: "CREATE TABLE IF NOT EXISTS t (...)", Calls: 1},
			{Query: "INSERT INTO t SELECT generate_series($1, $2) ON CONFLICT DO NOTHING", Calls: 1},
			{Query: "WITH free AS (...) UPDATE t ...", Calls: 1},
		},
		Ops: []bench.OpCount{
			{Op: "acquire", N: 1000, OwnStatement: 1000, Client: 1000, Writes: 1004},
			{Op: "release", N: 1000, OwnStatement: 1000, Client: 1000, Writes: 1000},
			{Op: "renewal", N: 1000, OwnStatement: 1000, Other: 2, Client: 1000, Writes: 1000, Note: "two statements of the sampler fell in the window"},
			{Op: "renewal (idle connection)", N: 24, OwnStatement: 24, Client: 24, Writes: 48, Note: "each renewal's connection was idle for longer than a second"},
		}}

	res.Renewal = &bench.RenewalResult{IDs: 65536, Duration: bench.Duration(6 * time.Second), ExecMode: bench.ModeCache}
	for rep := 1; rep <= 2; rep++ {
		for i, w := range []int{1, 2, 4, 8} {
			rate := []float64{4000, 7000, 11939, 11000}[i] * (0.95 + 0.1*float64(rep-1))
			res.Renewal.Runs = append(res.Renewal.Runs, bench.RenewalRun{Rep: rep, Workers: w, Rate: rate, Renewed: int64(rate * 6),
				Latency: dist(0.2*float64(w), 0.9*float64(w))})
		}
	}
	return res
}

// partialFixture is a run in which two scenarios failed, repeated once,
// without the Go benchmarks, the lock-wait diagnosis or server-side counts,
// and with the herd's variants in part.
func partialFixture() *bench.Results {
	res := &bench.Results{Command: "nodeid bench --repeat=1"}
	e := &res.Env
	e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.GoVersion = "Test CPU", 4, 4, "linux/arm64", "go1.26.8"
	e.LoadStart, e.LoadEnd = "0.10 0.10 0.10", "0.90 0.50 0.30"
	e.Server = "PostgreSQL 17.2"
	e.Where = "the server of NODEID_TEST_DSN"
	e.Started = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e.Elapsed = bench.Duration(3 * time.Minute)
	e.Config.Ops = 100
	res.Failed = map[string]string{"scale": "context deadline exceeded", "renewal": "too many clients already"}
	res.Herd = &bench.HerdResult{Claimers: 8, IDs: 16, ExecMode: bench.ModeExec}
	for i, v := range []string{bench.HerdLibrary, bench.HerdSQL} {
		d := float64(i + 2)
		res.Herd.Runs = append(res.Herd.Runs, bench.HerdRun{Rep: 1, Variant: v, Latency: dist(d, 3*d), Wall: bench.Duration(ms(4 * d)),
			Succeeded: 8, Distinct: 8, Waits: bench.Waits{Samples: 3, LockSamples: 1, MaxLockWaiters: 2, Events: map[string]int{"Lock:transactionid": 2}},
			Millis: []float64{d, 2 * d, 3 * d}})
	}
	res.Overhead = &bench.OverheadResult{IDs: 64, Duration: bench.Duration(2 * time.Second), Script: "SELECT 1", Floor: "UPDATE f SET n = 1", Chunks: 1, Chunk: bench.Duration(1500 * time.Millisecond)}
	res.Overhead.Runs = []bench.OverheadRun{{Rep: 1, Mode: bench.ModeExec, PgbenchMode: "extended", Concurrency: 4, Library: 900, Store: 950, Pgbench: 1000, Floor: 2000}}
	res.RoundTrips = &bench.RoundTripResult{ServerNote: "pg_stat_statements is not loaded (shared_preload_libraries)", ExecMode: bench.ModeExec,
		First: bench.OpCount{Op: "first acquire", N: 1, Client: 6, Writes: 6},
		Ops:   []bench.OpCount{{Op: "acquire", N: 100, Client: 100, Writes: 100}}}
	return res
}

// floorFixture is a floor run on two servers, fsync on and off: the
// claim misses its target on the first and meets it on the second; the
// stale-statistics claim misses through the connection from before the
// fill; the second server has no drift, having failed.
func floorFixture() *bench.Results {
	res := &bench.Results{Command: "nodeid bench --floor"}
	e := &res.Env
	e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.GoVersion = "Test EPYC", 2, 2, "linux/amd64", "go1.26.8"
	e.LoadStart, e.LoadEnd = "0.40 0.50 0.60", "1.10 0.90 0.70"
	e.Started = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	e.Elapsed = bench.Duration(6*time.Minute + 12*time.Second)
	f := &bench.FloorResult{Iterations: 2000, SmallIDs: 1024, LargeIDs: 65536, Free: 4, PlanSamples: 200, FirstSamples: 50, Drift: 12000, DriftWindow: 1000}
	res.Floor = f
	server := func(fsync string, floor float64, drift bool) bench.FloorServer {
		item := func(op, mode string, ids int, p50 float64) bench.FloorItem {
			return bench.FloorItem{Op: op, Mode: mode, IDs: ids, Latency: dist(p50, 3*p50), Statements: 500, RoundTrips: 500}
		}
		s := bench.FloorServer{Where: "throwaway PostgreSQL (local) at 127.0.0.1:5999, database nodeid_1_1", Server: "PostgreSQL 15.18",
			Fsync: fsync, SynchronousCommit: "on", FullPageWrites: fsync, Elapsed: bench.Duration(3 * time.Minute),
			Items: []bench.FloorItem{
				item(bench.FloorSelect1, bench.ModeCache, 0, 0.02),
				item(bench.FloorUpdate, bench.ModeCache, 0, floor),
				item(bench.FloorUpdate, bench.ModeExec, 0, floor+0.03),
				item(bench.FloorAcquire, bench.ModeCache, 1024, 0.5),
				item(bench.FloorRelease, bench.ModeCache, 1024, 0.3),
				item(bench.FloorAcquire, bench.ModeCache, 65536, 0.55),
				item(bench.FloorRelease, bench.ModeCache, 65536, 0.3),
				item(bench.FloorAcquire, bench.ModeExec, 1024, 1.3),
				item(bench.FloorRelease, bench.ModeExec, 1024, 0.4),
				item(bench.FloorAcquire, bench.ModeExec, 65536, 1.35),
				item(bench.FloorRelease, bench.ModeExec, 65536, 0.4),
			},
			Plan: &bench.FloorPlan{IDs: 65536, Stale: dist(40, 60), Analyzed: dist(0.55, 1), StaleNew: dist(0.6, 1), AnalyzedNew: dist(0.55, 1),
				ControlStale: dist(0.56, 1), ControlAnalyzed: dist(0.55, 1),
				Checks: []bench.FloorPlanCheck{
					{State: "initial", Verdict: "no: Bitmap Heap Scan using t_history_ended_idx"},
					{State: "stale", OnlyPrimaryKey: true, Verdict: "yes: ModifyTable (write), Index Scan using t_history_pkey"},
					{State: "fresh", OnlyPrimaryKey: true, Verdict: "yes: ModifyTable (write), Index Scan using t_history_pkey"}}},
			Plans: []bench.Plan{{IDs: 65536, Fraction: 0.9999, State: bench.StateHeld, Kind: "custom",
				Text: "Append  (actual time=20.1..20.2 rows=1 loops=1)\n  CTE lo\n    ->  Index Scan using <table>_pkey on <table> t_1\n          Rows Removed by Filter: 65536\n"}},
			First: &bench.FloorFirst{Samples: 50, Setup: dist(3, 6), SetupRoundTrips: 100, Acquire: dist(5, 9), ColdFloor: dist(1, 2), RoundTrips: 350, Statements: 150, MaxRoundTrips: 7,
				Sent: []string{"SELECT min_node, max_node, max_ttl_ms, replication, generation, generation_at,", "-- nodeid claim"}},
		}
		if drift {
			s.Drift = &bench.FloorDrift{IDs: 1024, Claims: 12000, Window: 1000, First: dist(0.45, 0.8), Last: dist(1.1, 1.6),
				ReleaseFirst: dist(0.3, 0.5), ReleaseLast: dist(0.33, 0.5), FloorFirst: dist(floor, 0.3), FloorLast: dist(floor, 0.3), NodeIDs: 1}
		} else {
			s.Error = "drift: acquire: context deadline exceeded"
		}
		return s
	}
	f.Servers = []bench.FloorServer{server("on", 0.115, true), server("off", 0.2, false)}
	return res
}

const fullSnowflake = `goos: linux
goarch: amd64
pkg: github.com/nodeid/nodeid/snowflake
cpu: Test EPYC
BenchmarkSideBySide/cap-2   100  1120 ns/op  1.000 bwmarrin-cap-fraction  0.999 fenced-cap-fraction  1.000 open-cap-fraction
BenchmarkSideBySide/g=1-2   100  165 ns/op   43.8 bwmarrin-ns/id  39.2 fenced-ns/id  0.90 fenced/bwmarrin  38.9 open-ns/id  0.89 open/bwmarrin
BenchmarkSideBySide/g=8-2   100  385 ns/op   136.3 bwmarrin-ns/id  85.4 fenced-ns/id  0.63 fenced/bwmarrin  80.3 open-ns/id  0.59 open/bwmarrin
BenchmarkCap/impl=bwmarrin-2   100  244.0 ns/op  1.001 cap-fraction
BenchmarkCap/impl=fenced-2     100  243.9 ns/op  0.998 cap-fraction
BenchmarkBelowCap/g=1/impl=bwmarrin-2  1000  46.8 ns/op
BenchmarkBelowCap/g=1/impl=fenced-2    1000  41.3 ns/op
BenchmarkBelowCap/g=8/impl=bwmarrin-2  1000  128.3 ns/op
BenchmarkBelowCap/g=8/impl=fenced-2    1000  79.2 ns/op
BenchmarkPGLease/impl=pglease-2        1000  52.0 ns/op
BenchmarkSideBySide/cap-2   100  1130 ns/op  1.000 bwmarrin-cap-fraction  0.997 fenced-cap-fraction  1.000 open-cap-fraction
BenchmarkSideBySide/g=1-2   100  166 ns/op   44.0 bwmarrin-ns/id  39.5 fenced-ns/id  0.90 fenced/bwmarrin  38.7 open-ns/id  0.88 open/bwmarrin
BenchmarkSideBySide/g=8-2   100  386 ns/op   131.8 bwmarrin-ns/id  84.2 fenced-ns/id  0.64 fenced/bwmarrin  81.6 open-ns/id  0.62 open/bwmarrin
BenchmarkCap/impl=bwmarrin-2   100  244.3 ns/op  1.000 cap-fraction
BenchmarkCap/impl=fenced-2     100  244.3 ns/op  0.999 cap-fraction
BenchmarkBelowCap/g=1/impl=bwmarrin-2  1000  44.1 ns/op
BenchmarkBelowCap/g=1/impl=fenced-2    1000  40.9 ns/op
BenchmarkBelowCap/g=8/impl=bwmarrin-2  1000  126.0 ns/op
BenchmarkBelowCap/g=8/impl=fenced-2    1000  80.4 ns/op
BenchmarkPGLease/impl=pglease-2        1000  55.0 ns/op
PASS
ok  	github.com/nodeid/nodeid/snowflake	12.3s
`

const fullSnowflakeStat = `goos: linux
goarch: amd64
pkg: github.com/nodeid/nodeid/snowflake
         │  bwmarrin   │               fenced                │
         │   sec/op    │   sec/op     vs base                │
Cap-2      244.2n ± 0%   244.1n ± 0%       ~ (p=1.000 n=2)
`

const fullStatements = `goos: linux
goarch: amd64
pkg: github.com/nodeid/nodeid/internal/bench
BenchmarkStatement/mode=cache_statement/op=claim-2         3000  414000 ns/op
BenchmarkStatement/mode=cache_statement/op=renew-2         9000  124000 ns/op
BenchmarkStatement/mode=cache_statement/op=update-floor-2  9000   90000 ns/op
BenchmarkStatement/mode=exec/op=claim-2                    2000  677000 ns/op
BenchmarkStatement/mode=exec/op=update-floor-2             8000  149000 ns/op
BenchmarkStatement/mode=cache_statement/op=claim-2         3000  307000 ns/op
BenchmarkStatement/mode=cache_statement/op=renew-2         9000  141000 ns/op
BenchmarkStatement/mode=cache_statement/op=update-floor-2  9000   85000 ns/op
BenchmarkStatement/mode=exec/op=claim-2                    2000  689000 ns/op
BenchmarkStatement/mode=exec/op=update-floor-2             8000  131000 ns/op
`

const fullStatementsStat = `                            │   claim    │   renew    │ update-floor │
                            │   sec/op   │   sec/op   │    sec/op    │
Statement/mode=exec-2         683.0µ ± ∞ ¹                140.0µ ± ∞ ¹
`

const fullLockWaits = `variant  rep  waits > 5 ms  lock                                        while
library  1    17            ShareLock on transaction                    while locking updated version of tuple in relation herd table
library  2    4             ExclusiveLock on extension of herd_history  –
sql      1    0
`
