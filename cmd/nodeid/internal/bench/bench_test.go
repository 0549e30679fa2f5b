package bench

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/floor"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestBenchBadInput: every bad flag value is refused before connecting,
// with exit code 2 and a message naming the flag, the value and the rule.
func TestBenchBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"--herd", "0"}, []string{"--herd 0:", "1 to 4096"}},
		{[]string{"--herd", "600", "--herd-ids", "512"}, []string{"--herd-ids 512:", "at least the 600 claimers"}},
		{[]string{"--herd-variants", "library,fast"}, []string{`--herd-variants "fast":`, "sql-no-skip-locked"}},
		{[]string{"--held", "0,1"}, []string{"--held 1:", "below 1"}},
		{[]string{"--only", "herd,speed"}, []string{`--only "speed":`, "roundtrips"}},
		{[]string{"--exec-modes", "simple"}, []string{`--exec-modes "simple":`, "cache_statement or exec"}},
		{[]string{"--duration", "10ms"}, []string{"--duration 10ms:", "100ms to 10m0s"}},
		{[]string{"--concurrency", "1,0"}, []string{"--concurrency 0:", "1 to 4096"}},
		{[]string{"--scale-ids", "1"}, []string{"--scale-ids 1:", "2 to 1048576"}},
		{[]string{"--samples", "-1"}, []string{"--samples -1:"}},
		{[]string{"--renew-ids", "10", "--renew-workers", "20"}, []string{"--renew-workers 20:", "at most the 10 leases"}},
		{[]string{"--repeat", "21"}, []string{"--repeat 21:", "1 to 20"}},
		{[]string{"--table", "snowflake_nodes"}, []string{"--table snowflake_nodes:", "scratch tables of its own"}},
		{[]string{"extra"}, []string{"no arguments"}},
		{[]string{"--held", "half"}, []string{"--held", "half"}},
		{[]string{"--floor", "--herd", "3"}, []string{"--herd: not with --floor"}},
		{[]string{"--floor", "--only", "herd"}, []string{"--only: not with --floor"}},
		{[]string{"--quick"}, []string{"--quick: only with --floor"}},
		{[]string{"--drift", "200"}, []string{"--drift: only with --floor"}},
		{[]string{"--floor", "--iterations", "5"}, []string{"--iterations 5:", "100 to 1000000"}},
		{[]string{"--floor", "--quick", "--large-ids", "3"}, []string{"--large-ids 3:", "16 to 1048576"}},
		{[]string{"--floor", "--drift", "10"}, []string{"--drift 10:", "120 to"}},
	} {
		r := harness.Run(t, append([]string{"bench", "--dsn", "postgres://nobody@127.0.0.1:1/none"}, c.args...)...)
		clitest.WantExit(t, r, cli.ExitUsage, c.wants...)
	}
}

// benchArgs is a run of a few seconds.
var benchArgs = []string{"bench", "-q", "--only", "herd,scale", "--herd", "4", "--herd-ids", "8",
	"--scale-ids", "16", "--held", "0,0.5", "--samples", "3"}

// TestBenchRun runs a tiny benchmark on a database given by --dsn with a
// password, and checks the report, the JSON, that the scratch tables are
// gone, and that the password is printed nowhere.
func TestBenchRun(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const password = "bench-Secret-7x" // the test server trusts local connections
	u.User = url.UserPassword(u.User.Username(), password)
	out := filepath.Join(t.TempDir(), "bench.json")
	r := harness.Run(t, append(benchArgs, "--dsn", u.String(), "--json", out)...)
	if r.Code != 0 {
		t.Fatalf("exit code %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"command:    nodeid bench --held=0,0.5 --herd=4 --herd-ids=8 --only=herd,scale --samples=3 --scale-ids=16",
		"machine:", "server:", "settings:", "Herd start: 4 concurrent Acquires", "library", "sql-advisory-lock",
		"Scale:", "fresh", "Targets:", "lowest-free order holds", "(dropped)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Herd == nil || len(res.Herd.Runs) != len(report.HerdVariants) || res.Scale == nil || len(res.Scale.Points) != 6 ||
		res.Overhead != nil || !res.Env.Dropped || len(res.Env.Tables) != 2 {
		t.Errorf("results: herd %v, scale %v, overhead %v, tables %v dropped %v", res.Herd != nil, res.Scale != nil, res.Overhead != nil, res.Env.Tables, res.Env.Dropped)
	}
	for _, s := range [][]byte{[]byte(r.Stdout), []byte(r.Stderr), b} {
		if strings.Contains(string(s), password) {
			t.Errorf("the password was printed: %s", s)
		}
	}
	var left int
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*) FROM pg_class WHERE relname LIKE 'nodeid\_bench\_%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d scratch relations left behind (%v)", left, err)
	}
}

// TestBenchThrowawayServer: without --dsn or DATABASE_URL the command
// starts a server of its own with pg_stat_statements, and removes it.
func TestBenchThrowawayServer(t *testing.T) {
	t.Parallel()
	pgtest.Shared(t) // skips, or fails under NODEID_TEST_REQUIRE_DB=1, without PostgreSQL
	if os.Getenv(pgtest.EnvDSN) != "" {
		t.Skipf("%s is set: the throwaway server would be that one", pgtest.EnvDSN)
	}
	r := harness.Run(t, "bench", "-q", "--only", "scale", "--scale-ids", "16", "--held", "0", "--samples", "2")
	if r.Code != 0 {
		t.Fatalf("exit code %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"throwaway PostgreSQL", "max_connections=700", "shared_preload_libraries=pg_stat_statements", "(dropped)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestBenchFloorSizes: --floor measures at the sizes, --quick at
// the smoke run's, and a size given beside --quick wins.
func TestBenchFloorSizes(t *testing.T) {
	t.Parallel()
	var got []floor.FloorConfig
	h := clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
		return []*cobra.Command{NewCmdBench(env, func(_ context.Context, o *Options) error {
			if !o.Floor {
				t.Error("not a floor run")
			}
			got = append(got, o.FloorConfig)
			return nil
		})}
	}}
	dsn := []string{"--dsn", "postgres://nobody@127.0.0.1:1/none"}
	h.Must(t, append([]string{"bench", "--floor"}, dsn...)...)
	h.Must(t, append([]string{"bench", "--floor", "--quick"}, dsn...)...)
	h.Must(t, append([]string{"bench", "--floor", "--quick", "--iterations", "150"}, dsn...)...)
	want := []floor.FloorConfig{floor.DefaultFloorConfig(), floor.QuickFloorConfig(), floor.QuickFloorConfig()}
	want[2].Iterations = 150
	if len(got) != len(want) {
		t.Fatalf("%d runs", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// floorArgs is the smallest floor run.
var floorArgs = []string{"bench", "-q", "--floor", "--iterations", "100", "--large-ids", "64", "--drift", "120"}

// TestBenchFloorRun runs the smallest floor benchmark on a database given
// by --dsn and checks the report, the JSON and that the scratch tables
// are gone.
func TestBenchFloorRun(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	out := filepath.Join(t.TempDir(), "floor.json")
	r := harness.Run(t, append(floorArgs, "--dsn", dsn, "--json", out)...)
	if r.Code != 0 {
		t.Fatalf("exit code %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"command:    nodeid bench --drift=120 --floor --iterations=100 --large-ids=64", "elapsed:",
		"The claim at the floor: 100 turns", "THE FLOOR", "Registry.Acquire, 1,024 node IDs", "Lease.Release, 64 node IDs, exec mode (PgBouncer)", "skipped: the database was given by --dsn",
		"statistics never gathered after the fill", "a new process's first Registry.Acquire", "the claim's generic plan", "(dropped)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.Stdout)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res report.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Floor == nil || len(res.Floor.Servers) != 1 || res.Floor.Servers[0].Error != "" || res.Herd != nil || !res.Env.Dropped {
		t.Errorf("results: %+v", res.Floor)
	}
	var left int
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*) FROM pg_class WHERE relname LIKE 'nodeid\_bench\_%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d scratch relations left behind (%v)", left, err)
	}
}

// TestBenchFloorThrowawayServers: without a database, --floor measures two
// throwaway servers, one with fsync on and one with fsync off.
func TestBenchFloorThrowawayServers(t *testing.T) {
	t.Parallel()
	pgtest.Shared(t) // skips, or fails under NODEID_TEST_REQUIRE_DB=1, without PostgreSQL
	if os.Getenv(pgtest.EnvDSN) != "" {
		t.Skipf("%s is set: the throwaway server would be that one", pgtest.EnvDSN)
	}
	r := harness.Run(t, floorArgs...)
	if r.Code != 0 {
		t.Fatalf("exit code %d: %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"fsync on: throwaway PostgreSQL", "fsync=on, synchronous_commit=on, full_page_writes=on",
		"fsync off: throwaway PostgreSQL", "fsync=off, synchronous_commit=on, full_page_writes=off", "(dropped)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "FAILED") {
		t.Errorf("a server failed:\n%s", r.Stdout)
	}
}
