package floor

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/benchtest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/plancheck"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestFloorConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []FloorConfig{DefaultFloorConfig(), QuickFloorConfig()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if q := QuickFloorConfig(); !q.Quick || q.LargeIDs != 4096 || q.Iterations >= DefaultFloorConfig().Iterations {
		t.Errorf("the quick config: %+v", q)
	}
	for _, c := range []struct {
		field, value, label string
		change              func(*FloorConfig)
	}{
		{"Iterations", "99", "floor iterations", func(c *FloorConfig) { c.Iterations = 99 }},
		{"LargeIDs", "15", "floor large range", func(c *FloorConfig) { c.LargeIDs = 15 }},
		{"LargeIDs", "1048577", "floor large range", func(c *FloorConfig) { c.LargeIDs = 1<<20 + 1 }},
		{"Drift", "119", "drift claims", func(c *FloorConfig) { c.Drift = 119 }},
	} {
		cfg := DefaultFloorConfig()
		c.change(&cfg)
		err := cfg.Validate()
		var fe *measure.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Value != c.value || fe.Rule == "" || !strings.Contains(err.Error(), c.label) {
			t.Errorf("%s %s: got %#v (%v)", c.field, c.value, fe, err)
		}
	}
	if c := DefaultFloorConfig(); c.planSamples() != 200 || c.firstSamples() != 50 || c.driftWindow() != 1000 {
		t.Errorf("derived sizes: %d plan samples, %d first Acquires, drift window %d", c.planSamples(), c.firstSamples(), c.driftWindow())
	}
}

// TestRunFloorTiny runs the floor benchmark at its smallest on the test
// database and checks what it recorded: every item timed, the claim and
// the release one statement and one round trip each, the plan states, a
// drift on one node ID, the first Acquires counted, and the scratch tables
// gone.
func TestRunFloorTiny(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	cfg := FloorConfig{Iterations: MinIterations, LargeIDs: 64, Drift: MinDrift, Progress: benchtest.Log{T: t}}
	res, err := RunFloor(t.Context(), []session.Target{benchtest.Target(t, dsn)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Floor
	if f == nil || len(f.Servers) != 1 || f.SmallIDs != 1024 || f.LargeIDs != 64 || f.Iterations != MinIterations {
		t.Fatalf("results: %+v", f)
	}
	s := f.Servers[0]
	if s.Error != "" || s.Fsync == "" || s.Server == "" || s.Where != "the test database" {
		t.Fatalf("server: %+v", s)
	}
	if len(s.Items) != 11 {
		t.Errorf("%d items: %+v", len(s.Items), s.Items)
	}
	for _, it := range s.Items {
		if it.Latency.N != MinIterations || it.Latency.P50 <= 0 {
			t.Errorf("%s %s %d: %+v", it.Op, it.Mode, it.IDs, it.Latency)
		}
		// Each operation is one statement in one round trip, once its
		// statement is prepared (cache mode) during the warm-up.
		if it.Statements != int64(it.Latency.N) || it.RoundTrips != int64(it.Latency.N) {
			t.Errorf("%s %s %d: %d statements and %d round trips in %d operations", it.Op, it.Mode, it.IDs, it.Statements, it.RoundTrips, it.Latency.N)
		}
	}
	p := s.Plan
	if p == nil || p.Stale.N != cfg.planSamples() || p.AnalyzedNew.N != cfg.planSamples() || p.ControlAnalyzed.N != cfg.planSamples() || len(p.Checks) != 3 {
		t.Fatalf("plan: %+v", p)
	}
	for i, state := range []string{plancheck.PlanInitial, plancheck.PlanStale, plancheck.PlanFresh} {
		if c := p.Checks[i]; c.State != state || c.Error != "" || !strings.HasPrefix(c.Verdict, map[bool]string{true: "yes", false: "no"}[c.OnlyPrimaryKey]) ||
			strings.Contains(c.Verdict, "nodeid_bench_") {
			t.Errorf("plan check %d: %+v", i, c)
		}
	}
	if len(s.Plans) != 2 || s.Plans[0].Kind != "custom" || s.Plans[1].Kind != "generic" || s.Plans[0].IDs != cfg.LargeIDs ||
		!strings.Contains(s.Plans[0].Text, "<table>") || strings.Contains(s.Plans[0].Text, "nodeid_bench_") {
		t.Errorf("plans: %+v", s.Plans)
	}
	if d := s.Drift; d == nil || d.NodeIDs != 1 || d.Window != cfg.driftWindow() || d.First.N != d.Window || d.Last.N != d.Window || d.FloorLast.N != d.Window {
		t.Errorf("drift: %+v", d)
	}
	fa := s.First
	if fa == nil || fa.Samples != cfg.firstSamples() || fa.Acquire.N != fa.Samples || fa.Setup.N != fa.Samples || fa.ColdFloor.N != fa.Samples ||
		fa.Statements < int64(fa.Samples) || fa.RoundTrips < fa.Statements || fa.SetupRoundTrips < int64(fa.Samples) || len(fa.Sent) == 0 {
		t.Errorf("first Acquire: %+v", fa)
	}
	// The first claim is sent unprepared: one statement, in one round trip
	// of its own beside database/sql's liveness ping of a reused
	// connection (a prepared one took one more).
	if fa != nil && (fa.Statements != int64(fa.Samples) || fa.RoundTrips > 2*int64(fa.Samples)) {
		t.Errorf("first Acquire: %d statements and %d round trips in %d samples, want one statement and at most 2 round trips each",
			fa.Statements, fa.RoundTrips, fa.Samples)
	}
	if rows := s.Rows(f); len(rows) != 18 {
		t.Errorf("%d rows", len(rows))
	}
	benchtest.AssertDropped(t, db, res)
}

func TestRunFloorRefuses(t *testing.T) {
	t.Parallel()
	if _, err := RunFloor(t.Context(), nil, DefaultFloorConfig()); err == nil {
		t.Error("no target")
	}
	if _, err := RunFloor(t.Context(), []session.Target{{}}, DefaultFloorConfig()); err == nil {
		t.Error("a target without a connection")
	}
	tg := session.Target{Conn: benchtest.Target(t, "postgres://nobody@127.0.0.1:1/none").Conn, Where: "nowhere"}
	cfg := DefaultFloorConfig()
	cfg.Drift = 1
	var fe *measure.FieldError
	if _, err := RunFloor(t.Context(), []session.Target{tg}, cfg); !errors.As(err, &fe) || fe.Field != "Drift" {
		t.Errorf("a bad config: %v", err)
	}
}
