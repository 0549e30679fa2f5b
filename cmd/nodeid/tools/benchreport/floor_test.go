package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

func TestSpliceFloor(t *testing.T) {
	const (
		head   = "# Benchmarks\n\nintro\n\n## 6. Generation\n\ng\n\n"
		missed = "## Missed targets and why\n\nNone.\n"
	)
	a, b := floorHeading+"\n\nA\n", floorHeading+"\n\nB\n\nmore B\n"
	once := spliceFloor(head+missed, a)
	if once != head+a+"\n"+missed {
		t.Errorf("inserted:\n%s", once)
	}
	twice := spliceFloor(once, b)
	if twice != head+b+"\n"+missed {
		t.Errorf("replaced:\n%s", twice)
	}
	if again := spliceFloor(twice, b); again != twice {
		t.Errorf("not idempotent:\n%s", again)
	}
	if got := spliceFloor(head, a); got != head+a+"\n" {
		t.Errorf("appended:\n%q", got)
	}
	last := strings.TrimRight(head, "\n") + "\n\n" + a
	if got := spliceFloor(last, b); got != strings.TrimRight(head, "\n")+"\n\n"+b+"\n" {
		t.Errorf("replaced at the end:\n%q", got)
	}
}

// TestFloorOnly puts the floor section into a report and leaves the rest
// of it as it was, the second time in place of the first.
func TestFloorOnly(t *testing.T) {
	dir := t.TempDir()
	b, err := json.Marshal(floorFixture())
	if err != nil {
		t.Fatal(err)
	}
	floor, out := filepath.Join(dir, "floor.json"), filepath.Join(dir, "BENCHMARKS.md")
	page := "# Benchmarks\n\n## 1. Herd start\n\nfigures\n\n## Missed targets and why\n\nNone.\n"
	for p, s := range map[string]string{floor: string(b), out: page} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var first string
	for i := range 2 {
		if err := runFloorOnly(floor, out); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got := string(md)
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("the second run changed the page")
		}
		for _, want := range []string{"# Benchmarks\n\n## 1. Herd start\n\nfigures\n\n## The claim at the floor\n", "`nodeid bench --floor`, 6m12s",
			"| item | ratio over | fsync on: p50 ms | p99 ms | ratio | fsync off: p50 ms | p99 ms | ratio | round trips | target |",
			"4.35× of 0.115 ms, **missed**", "\n## Missed targets and why\n\nNone.\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: the page lacks %q:\n%s", i+1, want, got)
			}
		}
		if strings.Count(got, floorHeading) != 1 {
			t.Errorf("run %d: %d floor sections", i+1, strings.Count(got, floorHeading))
		}
	}
	notFloor := filepath.Join(dir, "bench.json")
	nb, _ := json.Marshal(&bench.Results{Command: "nodeid bench"})
	if err := os.WriteFile(notFloor, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runFloorOnly(notFloor, out); err == nil || !strings.Contains(err.Error(), "no floor results") {
		t.Errorf("results without a floor run: %v", err)
	}
	if err := runFloorOnly("", out); err == nil {
		t.Error("-floor-only without -floor")
	}
}
