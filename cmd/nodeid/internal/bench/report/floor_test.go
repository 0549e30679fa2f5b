package report

import (
	"math"
	"strings"
	"testing"
	"time"
)

func floorDist(p50ms, p99ms float64) Dist {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return Dist{N: 100, Min: ms(p50ms / 2), P50: ms(p50ms), P90: ms(p99ms), P99: ms(p99ms), Max: ms(p99ms)}
}

// floorFixture is one server with every item: the floor at 0.1 ms, the
// claim at 0.25 ms (2.5×, met) and 0.4 ms (4×, missed), the release at
// 0.3 ms (3×, missed) and 0.2 ms (2×, met).
func floorFixture() *FloorResult {
	f := &FloorResult{Iterations: 100, SmallIDs: 1024, LargeIDs: 65536, Free: 4, Drift: 1200, DriftWindow: 100}
	item := func(op, mode string, ids int, p50 float64, rt int64) FloorItem {
		return FloorItem{Op: op, Mode: mode, IDs: ids, Latency: floorDist(p50, 2*p50), Statements: 100, RoundTrips: rt}
	}
	s := FloorServer{Where: "here", Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on",
		Items: []FloorItem{
			item(FloorSelect1, ModeCache, 0, 0.02, 100),
			item(FloorUpdate, ModeCache, 0, 0.1, 100),
			item(FloorUpdate, ModeExec, 0, 0.15, 100),
			item(FloorAcquire, ModeCache, 1024, 0.25, 100),
			item(FloorRelease, ModeCache, 1024, 0.3, 100),
			item(FloorAcquire, ModeCache, 65536, 0.4, 100),
			item(FloorRelease, ModeCache, 65536, 0.2, 100),
			item(FloorAcquire, ModeExec, 1024, 1.0, 100),
			item(FloorRelease, ModeExec, 1024, 0.5, 100),
		},
		Plan: &FloorPlan{IDs: 65536, Stale: floorDist(10, 20), Analyzed: floorDist(0.5, 1), StaleNew: floorDist(0.6, 1), AnalyzedNew: floorDist(0.5, 1),
			ControlStale: floorDist(0.42, 1), ControlAnalyzed: floorDist(0.4, 1),
			Checks: []FloorPlanCheck{{State: "stale", Verdict: "no: Seq Scan"}, {State: "fresh", OnlyPrimaryKey: true, Verdict: "yes: Index Scan using h_pkey"}}},
		Drift: &FloorDrift{IDs: 1024, Claims: 1200, Window: 100, First: floorDist(0.2, 0.4), Last: floorDist(0.22, 0.5),
			ReleaseFirst: floorDist(0.1, 0.2), ReleaseLast: floorDist(0.1, 0.2), FloorFirst: floorDist(0.1, 0.2), FloorLast: floorDist(0.1, 0.2), NodeIDs: 1},
		First: &FloorFirst{Samples: 5, Setup: floorDist(2, 4), SetupRoundTrips: 10, Acquire: floorDist(0.6, 1), RoundTrips: 35, Statements: 15, MaxRoundTrips: 7,
			Sent: []string{"SELECT min_node", "-- nodeid claim"}},
	}
	f.Servers = []FloorServer{s}
	return f
}

func TestFloorRows(t *testing.T) {
	t.Parallel()
	f := floorFixture()
	rows := f.Servers[0].Rows(f)
	byKey := map[string]FloorRow{}
	var keys []string
	for _, r := range rows {
		byKey[r.Key] = r
		keys = append(keys, r.Key)
	}
	want := []string{"select1", "update", "update/exec", "acquire/1024/cache_statement", "release/1024/cache_statement",
		"acquire/65536/cache_statement", "release/65536/cache_statement", "acquire/1024/exec", "release/1024/exec",
		"plan-stale", "plan-stale-new", "plan-analyzed", "drift", "first", "setup"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("rows %v\nwant %v", keys, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for _, c := range []struct {
		key    string
		ratio  float64
		base   string
		target string
		met    bool
	}{
		{"select1", 0.2, "the floor", "", false},
		{"update", 1, "the floor", "", false},
		{"update/exec", 1.5, "the floor", "", false},
		{"acquire/1024/cache_statement", 2.5, "the floor", "≤ 3×", true},
		{"release/1024/cache_statement", 3, "the floor", "≤ 2.5×", false},
		{"acquire/65536/cache_statement", 4, "the floor", "≤ 3×", false},
		{"release/65536/cache_statement", 2, "the floor", "≤ 2.5×", true},
		{"acquire/1024/exec", 10, "the floor", "", false}, // the PgBouncer variant: unbound
		{"plan-stale", 20, "the same after ANALYZE", "≤ 1.5×", false},
		{"plan-stale-new", 1.2, "the same after ANALYZE", "≤ 1.5×", true},
		{"plan-analyzed", 5, "the floor", "", false},
		{"drift", 1.1, "claims 1–100", "≤ 1.2×", true},
		{"first", 2.4, "a steady claim", "≤ 2×, ≤ 3 round trips", false},
		{"setup", 20, "the floor", "", false},
	} {
		r := byKey[c.key]
		if !near(r.Ratio, c.ratio) || r.Base != c.base || r.Target != c.target || r.Met != c.met {
			t.Errorf("%s: ratio %v over %q, target %q met %v; want %v over %q, %q %v", c.key, r.Ratio, r.Base, r.Target, r.Met, c.ratio, c.base, c.target, c.met)
		}
	}
	if r := byKey["first"]; !near(r.RoundTrips, 7) || !near(r.BaseP50, 0.25) {
		t.Errorf("first: %+v", r)
	}
	if r := byKey["plan-stale"]; !strings.Contains(r.Note, "1.05×") || byKey["plan-stale-new"].Note != "" {
		t.Errorf("control: %q, %q", r.Note, byKey["plan-stale-new"].Note)
	}
	if r := byKey["drift"]; r.Note != "Release 1.00×, the floor in the same turns 1.00×" || !strings.Contains(r.Label, "claims 1,101–1,200 of 1,200") {
		t.Errorf("drift: %+v", r)
	}
	if r := byKey["drift"]; r.RoundTrips >= 0 || r.FormatRoundTrips() != "–" {
		t.Errorf("drift round trips: %v", r.RoundTrips)
	}
	if got := byKey["acquire/1024/cache_statement"].FormatRatio(); got != "2.50× the floor (0.100 ms)" {
		t.Errorf("FormatRatio = %q", got)
	}
	if got := byKey["release/1024/cache_statement"].FormatTarget(true); got != "≤ 2.5× (missed)" {
		t.Errorf("FormatTarget = %q", got)
	}
	if got := byKey["release/1024/cache_statement"].FormatTarget(false); got != "≤ 2.5×" {
		t.Errorf("FormatTarget(false) = %q", got)
	}
	if got := byKey["update/exec"].FormatTarget(true); got != "–" {
		t.Errorf("an unbound row's target: %q", got)
	}

	// A first Acquire within 2× but in more round trips misses.
	f.Servers[0].First.Acquire = floorDist(0.3, 1)
	if r := rowOf(f, "first"); r.Met || !near(r.Ratio, 1.2) {
		t.Errorf("first in 7 round trips: %+v", r)
	}
	f.Servers[0].First.MaxRoundTrips = 3
	if r := rowOf(f, "first"); !r.Met {
		t.Errorf("first in 3 round trips: %+v", r)
	}

	// Without the floor, nothing has a ratio to it, nor a target.
	f.Servers[0].Items = f.Servers[0].Items[2:]
	for _, r := range f.Servers[0].Rows(f) {
		if r.Base == "the floor" || (r.Key == "acquire/1024/cache_statement" && r.Bound()) {
			t.Errorf("without the floor: %+v", r)
		}
	}
}

func rowOf(f *FloorResult, key string) FloorRow {
	for _, r := range f.Servers[0].Rows(f) {
		if r.Key == key {
			return r
		}
	}
	return FloorRow{}
}

func TestWriteFloor(t *testing.T) {
	t.Parallel()
	f := floorFixture()
	res := &Results{Command: "nodeid bench --floor", Floor: f}
	var b strings.Builder
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"command:    nodeid bench --floor", "The claim at the floor: 100 turns", "targets reported, never enforced",
		"fsync on: here", "THE FLOOR", "2.50× the floor (0.100 ms)", "≤ 3× (met)", "≤ 2.5× (missed)",
		"control, an analysed table's claims in the same turns: 1.05×", "primary key, stale: no: Seq Scan",
		"sent 2 statements: SELECT min_node; -- nodeid claim"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "server:") || strings.Contains(out, "pgbench:") {
		t.Errorf("a floor run's header describes one server:\n%s", out)
	}
	f.Quick = true
	b.Reset()
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "smoke run") || strings.Contains(out, "(met)") || strings.Contains(out, "(missed)") {
		t.Errorf("the smoke run judged something:\n%s", out)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1024: "1,024", 65536: "65,536", 1048576: "1,048,576", -1200: "-1,200"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFloorColdControl: the control of a new process's first Acquire says
// how it compares with a steady claim, and that it alone is past the first
// Acquire's target when it is.
func TestFloorColdControl(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cold float64
		want string
	}{
		{0.6, "the first Acquire over it: 1.00×; the control over a steady claim: 2.40×, past the first Acquire's ≤ 2× before any of the claim's own work"},
		{0.4, "the first Acquire over it: 1.50×; the control over a steady claim: 1.60×"},
	} {
		f := floorFixture()
		f.Servers[0].First.ColdFloor = floorDist(c.cold, 1)
		var note string
		for _, r := range f.Servers[0].Rows(f) {
			if r.Key == "cold-floor" {
				note = r.Note
			}
		}
		if note != c.want {
			t.Errorf("control at %.1f ms: note %q, want %q", c.cold, note, c.want)
		}
	}
}
