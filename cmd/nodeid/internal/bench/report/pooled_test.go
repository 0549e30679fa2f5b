package report

import (
	"math"
	"strings"
	"testing"
	"time"
)

// pooledFixture is floorFixture with a PgBouncer: the pooled floor at
// 0.2 ms, the claim through it at 0.4 ms (2×, met) and 0.6 ms (3×,
// missed), the release at 0.5 ms (2.5×, missed) and 0.3 ms (1.5×, met).
func pooledFixture() *FloorResult {
	f := floorFixture()
	s := &f.Servers[0]
	s.Pooler = "throwaway PgBouncer 1.18.0 at 127.0.0.1:6432 in transaction mode"
	// The direct exec mode's items give way to the pooled ones.
	var items []FloorItem
	for _, it := range s.Items {
		if it.Mode != ModeExec || it.Op == FloorUpdate {
			items = append(items, it)
		}
	}
	item := func(op string, ids int, p50 float64) FloorItem {
		return FloorItem{Op: op, Mode: ModePooled, IDs: ids, Latency: floorDist(p50, 2*p50), Statements: 100, RoundTrips: 100}
	}
	s.Items = append(items, item(FloorUpdate, 0, 0.2),
		item(FloorAcquire, 1024, 0.4), item(FloorRelease, 1024, 0.5),
		item(FloorAcquire, 65536, 0.6), item(FloorRelease, 65536, 0.3))
	return f
}

func TestFloorPooledRows(t *testing.T) {
	t.Parallel()
	f := pooledFixture()
	byKey := map[string]FloorRow{}
	var keys []string
	for _, r := range f.Servers[0].Rows(f) {
		byKey[r.Key] = r
		keys = append(keys, r.Key)
	}
	want := []string{"select1", "update", "update/exec", "update/pgbouncer", "acquire/1024/cache_statement", "release/1024/cache_statement",
		"acquire/65536/cache_statement", "release/65536/cache_statement", "acquire/1024/pgbouncer", "release/1024/pgbouncer",
		"acquire/65536/pgbouncer", "release/65536/pgbouncer", "plan-stale"}
	if got := strings.Join(keys[:len(want)], " "); got != strings.Join(want, " ") {
		t.Fatalf("rows %v\nwant %v", keys, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for _, c := range []struct {
		key    string
		ratio  float64
		base   string
		target string
		met    bool
		note   string
	}{
		{"update/pgbouncer", 2, "the floor", "", false, ""},
		{"acquire/1024/pgbouncer", 2, "the pooled floor", "≤ 2.5×", true, "over the floor without PgBouncer: 4.00×"},
		{"release/1024/pgbouncer", 2.5, "the pooled floor", "≤ 2×", false, "over the floor without PgBouncer: 5.00×"},
		{"acquire/65536/pgbouncer", 3, "the pooled floor", "≤ 2.5×", false, "over the floor without PgBouncer: 6.00×"},
		{"release/65536/pgbouncer", 1.5, "the pooled floor", "≤ 2×", true, "over the floor without PgBouncer: 3.00×"},
	} {
		r := byKey[c.key]
		if !near(r.Ratio, c.ratio) || r.Base != c.base || r.Target != c.target || r.Met != c.met || r.Note != c.note {
			t.Errorf("%s: ratio %v over %q, target %q met %v, note %q; want %v over %q, %q %v, %q", c.key, r.Ratio, r.Base, r.Target, r.Met, r.Note,
				c.ratio, c.base, c.target, c.met, c.note)
		}
	}

	// With fsync off the floor flushes nothing: the pooled rows are unbound.
	f.Servers[0].Fsync = "off"
	if r := rowOf(f, "acquire/1024/pgbouncer"); r.Bound() || r.Ratio != 2 {
		t.Errorf("fsync off: %+v", r)
	}
	// A server that commits without waiting for the flush says so: the
	// pooler passes on no synchronous_commit of the client's.
	f.Servers[0].SynchronousCommit = "off"
	if r := rowOf(f, "update/pgbouncer"); !strings.Contains(r.Note, "synchronous_commit=off") {
		t.Errorf("synchronous_commit off: %+v", r)
	}

	var b strings.Builder
	f = pooledFixture()
	if err := WriteText(&b, &Results{Command: "nodeid bench --floor", Floor: f}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pooler: throwaway PgBouncer 1.18.0", "THE POOLED FLOOR", "Registry.Acquire, 1,024 node IDs, through PgBouncer",
		"2.00× the pooled floor (0.200 ms)", "≤ 2.5× (met)", "≤ 2× (missed)", "over the floor without PgBouncer: 4.00×"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "skipped") || strings.Contains(out, "no pooler") {
		t.Errorf("a run through PgBouncer says it skipped it:\n%s", out)
	}
}

// TestFloorPoolerSkipped: without PgBouncer the exec mode's rows are the
// direct ones, unbound, and a row says the pooled targets were skipped:
// neither met nor missed.
func TestFloorPoolerSkipped(t *testing.T) {
	t.Parallel()
	f := floorFixture()
	f.Servers[0].PoolerSkipped = "no pgbouncer on PATH or in /usr/sbin (apt-get install pgbouncer)"
	r := rowOf(f, ModePooled)
	if r.Skipped == "" || r.Bound() || r.Met || r.Target == "" || r.FormatTarget(true) != "skipped" {
		t.Errorf("the skipped row: %+v", r)
	}
	if r := rowOf(f, "acquire/1024/exec"); r.Bound() || !strings.Contains(r.Label, "exec mode (PgBouncer)") {
		t.Errorf("the direct exec mode's row: %+v", r)
	}
	var b strings.Builder
	if err := WriteText(&b, &Results{Command: "nodeid bench --floor", Floor: f}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"through PgBouncer, transaction mode, exec mode", "skipped: no pgbouncer on PATH"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "through PgBouncer") && (strings.Contains(line, "(met)") || strings.Contains(line, "(missed)")) {
			t.Errorf("a skipped row was judged: %s", line)
		}
	}
}

// renewalFixture has a direct and a pooled run at 4 and 16 workers in two
// repetitions: at 4 the pooled rate is 0.9× (met); at 16 it is 0.5× but
// the server's time per renewal 1.1× (met in its server-time form). The
// backends spend 100 µs of CPU per renewal directly and 150 through
// PgBouncer, the client 80 either way.
func renewalFixture() *RenewalResult {
	rn := &RenewalResult{IDs: 4096, Duration: Duration(2 * time.Second), ExecMode: ModeCache, Pooler: "throwaway PgBouncer"}
	run := func(rep, w int, rate, serverUs float64, pooler time.Duration) RenewalRun {
		n := int64(rate * 2)
		backend := 100 * time.Microsecond
		if pooler > 0 {
			backend = 150 * time.Microsecond
		}
		return RenewalRun{Rep: rep, Workers: w, Rate: rate, Renewed: n, Latency: floorDist(1, 2), Elapsed: Duration(2 * time.Second),
			ClientCPU: Duration(time.Duration(n) * 80 * time.Microsecond), PoolerCPU: Duration(pooler * time.Duration(n)),
			BackendCPU: Duration(backend * time.Duration(n)),
			Server:     &ServerTime{Calls: n, PlanMs: float64(n) * serverUs / 1000 / 10, ExecMs: float64(n) * serverUs / 1000 * 9 / 10}}
	}
	for rep := 1; rep <= 2; rep++ {
		rn.Runs = append(rn.Runs, run(rep, 4, 1000, 100, 0), run(rep, 16, 2000, 200, 0))
		rn.Pooled = append(rn.Pooled, run(rep, 4, 900, 110, 50*time.Microsecond), run(rep, 16, 1000, 220, 60*time.Microsecond))
	}
	return rn
}

func TestRenewalPooling(t *testing.T) {
	t.Parallel()
	rn := renewalFixture()
	rows := rn.Pooling()
	if len(rows) != 2 || rows[0].Workers != 4 || rows[1].Workers != 16 {
		t.Fatalf("rows: %+v", rows)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	a, b := rows[0], rows[1]
	if !near(a.Ratio.Median, 0.9) || !a.Met || !near(a.ServerRatio.Median, 1.1) || !near(a.ServerDirect.Median, 100) || !near(a.PlanDirect.Median, 10) {
		t.Errorf("4 workers: %+v", a)
	}
	// The CPU bound at 16: (80 + 100) / (80 + 150 + 60) µs per renewal.
	if !near(b.BackendDirect.Median, 100) || !near(b.BackendRatio.Median, 1.5) || !near(b.Bound.Median, 180.0/290) {
		t.Errorf("16 workers, CPU: %+v", b)
	}
	if !near(b.Ratio.Median, 0.5) || b.Met || !b.ServerMet || !near(b.PoolerCPU.Median, 60) || !near(b.PoolerShare.Median, 0.06) || !near(b.ClientPooled.Median, 80) {
		t.Errorf("16 workers: %+v", b)
	}
	if v := a.Verdict(); v != "pooled at 0.90× the direct rate, target ≥ 0.8× (met)" {
		t.Errorf("verdict at 4: %q", v)
	}
	if v := b.Verdict(); !strings.Contains(v, "0.50× the direct rate, target ≥ 0.8× (missed)") || !strings.Contains(v, "pooled at 1.10× direct, target ≤ 1.2×") ||
		!strings.Contains(v, "PgBouncer spent 60 µs of CPU per renewal, 0.06 of a core") || !strings.Contains(v, ": met;") ||
		!strings.Contains(v, "the server's CPU per renewal pooled at 1.50× direct") || !strings.HasSuffix(v, "this machine allows at most 0.62× the direct rate through PgBouncer") {
		t.Errorf("verdict at 16: %q", v)
	}
	// A pooled run that failed pairs with nothing.
	rn.Pooled[1].Error = "boom"
	if rows := rn.Pooling(); rows[1].Ratio.N != 1 {
		t.Errorf("a failed run was compared: %+v", rows[1])
	}
	// Without server time the server-time form cannot be met.
	rn = renewalFixture()
	for i := range rn.Runs {
		rn.Runs[i].Server = nil
	}
	if r := rn.Pooling()[1]; r.ServerMet || !strings.Contains(r.Verdict(), "no server time") {
		t.Errorf("without server time: %+v, %q", r, r.Verdict())
	}

	var sb strings.Builder
	if err := WriteText(&sb, &Results{Renewal: renewalFixture()}); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"Renewal load through PgBouncer against directly, side by side: throwaway PgBouncer, exec mode; directly in cache_statement",
		"PgBouncer CPU µs/renewal", "4 workers: pooled at 0.90×", "16 workers: pooled at 0.50×"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "[met] renewal through PgBouncer, 16 workers: ≥ 0.8 × the direct rate, or where PgBouncer's CPU binds the server's time per renewal ≤ 1.2 × direct: "+
		"0.50 [0.50–0.50]× (1000 [1000–1000]/s against 2000 [2000–2000]/s); server time 1.10 [1.10–1.10]× (220 [220–220] µs against 200 [200–200] µs); PgBouncer 60 [60–60] µs") {
		t.Errorf("the targets lack the pooled renewals:\n%s", out)
	}
	rn = renewalFixture()
	rn.Pooled, rn.Pooler, rn.PoolerSkipped = nil, "", "the database was given by --dsn"
	sb.Reset()
	if err := WriteText(&sb, &Results{Renewal: rn}); err != nil {
		t.Fatal(err)
	}
	if out := sb.String(); !strings.Contains(out, "through PgBouncer: skipped (target ≥ 0.8× the direct rate not judged): the database was given by --dsn") {
		t.Errorf("the skipped pooled runs:\n%s", out)
	}
}
