package measure

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/benchtest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the default config: %v", err)
	}
	for _, c := range []struct {
		field, value string
		change       func(*Config)
	}{
		{"Only", `"nope"`, func(c *Config) { c.Only = []string{"herd", "nope"} }},
		{"Repeat", "0", func(c *Config) { c.Repeat = 0 }},
		{"HerdClaimers", "0", func(c *Config) { c.HerdClaimers = 0 }},
		{"HerdIDs", "511", func(c *Config) { c.HerdIDs = 511 }},
		{"HerdVariants", `"sql-fast"`, func(c *Config) { c.HerdVariants = []string{"sql-fast"} }},
		{"Duration", "50ms", func(c *Config) { c.Duration = 50 * time.Millisecond }},
		{"Concurrency", "2000", func(c *Config) { c.Concurrency = []int{8, 2000} }},
		{"Concurrency", "", func(c *Config) { c.Concurrency = nil }},
		{"ExecModes", `"simple"`, func(c *Config) { c.ExecModes = []string{"simple"} }},
		{"ScaleIDs", "1", func(c *Config) { c.ScaleIDs = []int{1} }},
		{"ScaleIDs", "1048577", func(c *Config) { c.ScaleIDs = []int{1<<20 + 1} }},
		{"Held", "1", func(c *Config) { c.Held = []float64{0, 1} }},
		{"Held", "NaN", func(c *Config) { c.Held = []float64{math.NaN()} }},
		{"Held", "-0.1", func(c *Config) { c.Held = []float64{-0.1} }},
		{"Samples", "0", func(c *Config) { c.Samples = 0 }},
		{"Ops", "0", func(c *Config) { c.Ops = 0 }},
		{"RenewWorkers", "100", func(c *Config) { c.RenewWorkers = []int{100}; c.RenewIDs = 50 }},
		{"RenewIDs", "0", func(c *Config) { c.RenewIDs = 0 }},
		{"Pgbench", "", func(c *Config) { c.Pgbench = "" }},
	} {
		cfg := DefaultConfig()
		c.change(&cfg)
		err := cfg.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Value != c.value || fe.Rule == "" {
			t.Errorf("%s %s: got %#v (%v)", c.field, c.value, fe, err)
		}
	}
}

func TestPgbenchScripts(t *testing.T) {
	t.Parallel()
	s := session.Statements{
		Claim:   "SELECT $1::text, $2::bigint, $3::bigint, $4::integer, $5::integer, $6::integer, $12 FROM t",
		Release: "UPDATE t SET x = COALESCE($4::bigint, x) WHERE node_id = $1::integer AND owner = $2::text AND epoch = $3::bigint",
	}
	if _, err := claimReleaseScript(s); err == nil || !strings.Contains(err.Error(), "$12") {
		t.Errorf("a parameter without a variable: %v", err)
	}
	s.Claim = strings.ReplaceAll(s.Claim, ", $12", "")
	got, err := claimReleaseScript(s)
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT :owner::text, :ttl::bigint, :horizon::bigint, :lo::integer, :hi::integer, NULL::integer FROM t \\gset\n" +
		"UPDATE t SET x = COALESCE(:after_ms::bigint, x) WHERE node_id = :node_id::integer AND owner = :owner::text AND epoch = :epoch::bigint;\n"
	if got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
	if f := floorScript("t", 1024); !strings.Contains(f, `\set n random(0, 1023)`) || strings.Count(f, "UPDATE t SET") != 2 {
		t.Errorf("floor script:\n%s", f)
	}
}

func TestParsePgbench(t *testing.T) {
	t.Parallel()
	out := `transaction type: claim.sql
number of transactions actually processed: 10234
number of failed transactions: 3 (0.029%)
latency average = 0.977 ms
initial connection time = 2.120 ms
tps = 1023.456789 (without initial connection time)
`
	r, err := parsePgbench(out)
	if err != nil || r.tps != 1023.456789 || r.failed != 3 {
		t.Errorf("parsePgbench = %+v, %v", r, err)
	}
	if _, err := parsePgbench("pgbench: error: connection refused\n"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("no tps line: %v", err)
	}
}

// tinyConfig runs every scenario in a second or two.
func tinyConfig() Config {
	c := DefaultConfig()
	c.HerdClaimers, c.HerdIDs = 6, 8
	c.Concurrency = []int{2}
	c.ExecModes = []string{report.ModeCache}
	c.Duration = 150 * time.Millisecond
	c.ScaleIDs = []int{16}
	c.Held = []float64{0, 0.5, 0.9}
	c.Samples = 5
	c.Ops = 8
	c.RenewWorkers = []int{2}
	c.RenewIDs = 16
	return c
}

// TestRunTiny runs the throughput scenarios on a tiny scale and checks the
// results' structure and that the scratch tables are gone. The herd and
// the scale scenarios run in the tests of nodeid bench, the round trips in
// TestRunCountsOnServer.
func TestRunTiny(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	cfg := tinyConfig()
	cfg.Only = []string{report.Overhead, report.Renewal}
	cfg.Pgbench = "pgbench-not-installed" // TestPgbench runs it
	cfg.Progress = benchtest.Log{T: t}
	res, err := Run(t.Context(), benchtest.Target(t, dsn), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("failed scenarios: %v", res.Failed)
	}
	if res.Herd != nil || res.Overhead == nil || res.Scale != nil || res.RoundTrips != nil || res.Renewal == nil {
		t.Fatalf("scenarios run: %+v", res)
	}
	for _, r := range res.Overhead.Runs {
		if r.Library <= 0 || r.Store <= 0 || r.Pgbench != 0 || r.LibraryCPU <= 0 {
			t.Errorf("overhead: %+v", r)
		}
	}
	if !strings.Contains(strings.Join(res.Env.Notes, " "), "pgbench-not-installed") {
		t.Errorf("no note of the missing pgbench: %v", res.Env.Notes)
	}
	for _, r := range res.Renewal.Runs {
		if r.Rate <= 0 || r.Refused != 0 || r.Error != "" || r.Latency.N == 0 {
			t.Errorf("renewal: %+v", r)
		}
	}
	benchtest.AssertDropped(t, db, res)

	var text strings.Builder
	if err := report.WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Library overhead:", "Renewal load:", "capacity", "(dropped)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunCountsOnServer counts statements with pg_stat_statements on a
// server of its own, and checks the sampler sees the lock waits of a herd
// that queues on one row.
func TestRunCountsOnServer(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t, "shared_preload_libraries=pg_stat_statements")
	db, dsn := srv.NewDB(t)
	cfg := tinyConfig()
	cfg.Only = []string{report.RoundTrips}
	cfg.Ops = 4
	tg := benchtest.Target(t, dsn)
	tg.Throwaway = true
	res, err := Run(t.Context(), tg, cfg)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("%v %v", err, res.Failed)
	}
	rt := res.RoundTrips
	if !rt.Server {
		t.Fatalf("no server counts: %s", rt.ServerNote)
	}
	if len(rt.Ops) != 3 {
		t.Errorf("operations counted: %+v", rt.Ops)
	}
	for _, op := range rt.Ops {
		// Exactly one statement per operation, on both sides.
		if op.N < int64(cfg.Ops) || op.OwnStatement != op.N || op.Other != 0 || op.Client != op.N || op.Writes < op.N {
			t.Errorf("%s: %+v", op.Op, op)
		}
	}
	if rt.First.Other < 5 || len(rt.FirstStatements) < 5 {
		t.Errorf("the first Acquire: %+v %v", rt.First, rt.FirstStatements)
	}
	if rt.Claims != rt.HistoryRows || rt.Claims < 2*int64(cfg.Ops) {
		t.Errorf("claims %d, history rows %d", rt.Claims, rt.HistoryRows)
	}
	benchtest.AssertDropped(t, db, res)
}

// TestPgbench runs the overhead scenario with pgbench: the claim+release
// script must run without a failed transaction on a real server.
func TestPgbench(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pgbench"); err != nil {
		// pgbench comes with PostgreSQL's server package: where the tests
		// must have a database, they must have it too.
		pgtest.Unavailable(t, fmt.Errorf("pgbench is not installed: %w", err))
	}
	_, dsn := pgtest.NewDB(t)
	cfg := tinyConfig()
	cfg.Only = []string{report.Overhead}
	cfg.Concurrency = []int{2}
	// pgbench runs whole seconds: at one (MinDuration rounds up to it), a
	// CI run with a busy loop beside it saw pgbench finish no transaction.
	cfg.Duration = 3 * time.Second
	res, err := Run(t.Context(), benchtest.Target(t, dsn), cfg)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("%v %v", err, res.Failed)
	}
	for _, r := range res.Overhead.Runs {
		if r.Error != "" || r.Pgbench <= 0 || r.Floor <= 0 || r.PgbenchCPU <= 0 {
			t.Errorf("overhead: %+v", r)
		}
	}
	if !strings.Contains(res.Overhead.Script, `\gset`) || strings.Contains(res.Overhead.Script, "$1") {
		t.Errorf("script:\n%s", res.Overhead.Script)
	}
}

func TestRunRefusesMoreConnectionsThanFree(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	cfg := DefaultConfig()
	cfg.Only = []string{report.Herd}
	cfg.HerdClaimers, cfg.HerdIDs = MaxClaimers, MaxClaimers
	_, err := Run(t.Context(), benchtest.Target(t, dsn), cfg)
	if err == nil || !strings.Contains(err.Error(), "connections") || !strings.Contains(err.Error(), "max_connections") {
		t.Errorf("Run with %d claimers: %v", MaxClaimers, err)
	}
}

// TestRoundTripsOnEveryNodeID: the round trips take every node ID of the
// range after the first Acquire has released its own, so that release
// must leave the node ID claimable at once.
func TestRoundTripsOnEveryNodeID(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	cfg := tinyConfig()
	cfg.Only = []string{report.RoundTrips}
	cfg.Ops = 1024 // the whole default range
	res, err := Run(t.Context(), benchtest.Target(t, dsn), cfg)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("%v %v", err, res.Failed)
	}
	if rt := res.RoundTrips; rt.IDs != cfg.Ops || len(rt.Ops) < 2 || rt.Ops[0].N != int64(cfg.Ops) {
		t.Errorf("round trips on %d node IDs: %+v", rt.IDs, rt.Ops)
	}
	benchtest.AssertDropped(t, db, res)
}
