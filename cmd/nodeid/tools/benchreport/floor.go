package main

import (
	"fmt"
	"strings"
	"time"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// floorSection is the section "The claim at the floor", from the results
// of `nodeid bench --floor --json` (a run of its own, on servers of its
// own).
type floorSection struct {
	Command            string // the command that produced it
	Elapsed, Started   string
	LoadStart, LoadEnd string
	Machine            string // CPU, cores, OS, Go
	Quick              bool
	Iterations         int
	SmallIDs, LargeIDs int
	Free               int
	PlanSamples        int
	FirstSamples       int
	Drift, DriftWindow int
	Servers            []floorServer
	// Head and Rule are the table's header and separator rows, whose
	// columns depend on the number of servers.
	Head, Rule string
	Rows       []floorLine
	Notes      []string       // what rows' figures rest on, per server
	Checks     []floorCheck   // the plan inspector's verdicts, by state
	Sent       []string       // the statements of a new process's first Acquire (first server)
	First      *floorFirstSum // nil when not measured
	Failed     []string       // servers whose measurement failed, with why
	// Plans are the claim's plans at the large range on the first server
	// that has them (PlansOn names it), their Text without trailing
	// newlines.
	Plans   []bench.Plan
	PlansOn string
}

// floorServer describes one server of the run.
type floorServer struct {
	Label, Where, Server   string
	Fsync, SyncCommit, FPW string
	Elapsed                string
}

// floorLine is one row of the table: the item, what its ratio is over,
// its cells on each server, its round trips and its target.
type floorLine struct {
	Label, Over string
	Cells       []floorCell
	RoundTrips  string
	Target      string
}

// floorCell is one server's figures of a row.
type floorCell struct{ P50, P99, Ratio string }

// floorCheck is the plan inspector's verdict in one state, per server.
type floorCheck struct {
	State    string
	Verdicts []string
}

// floorFirstSum is what the prose says of a new process's first Acquire,
// on the first server.
type floorFirstSum struct {
	RoundTrips, Statements, SetupRoundTrips string
}

// floorStates describes the states of the plan inspector's checks.
var floorStates = map[string]string{
	"initial": "before the fill: the history as the DDL left it, never analysed",
	"stale":   "after the fill, statistics never gathered since",
	"fresh":   "after `ANALYZE`",
}

// newFloor computes the section from a floor run's results, or nil.
func newFloor(res *bench.Results) *floorSection {
	f := res.Floor
	if f == nil {
		return nil
	}
	e := res.Env
	v := &floorSection{Command: res.Command, Elapsed: time.Duration(e.Elapsed).String(), Started: e.Started.Format(time.RFC3339),
		LoadStart: e.LoadStart, LoadEnd: e.LoadEnd,
		Machine: fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s, %s", e.CPU, e.Cores, e.GOMAXPROCS, e.OS, e.GoVersion),
		Quick:   f.Quick, Iterations: f.Iterations, SmallIDs: f.SmallIDs, LargeIDs: f.LargeIDs, Free: f.Free,
		PlanSamples: f.PlanSamples, FirstSamples: f.FirstSamples, Drift: f.Drift, DriftWindow: f.DriftWindow}
	head, rule := []string{"item", "ratio over"}, []string{"---", "---"}
	rowsOf := make([][]bench.FloorRow, len(f.Servers))
	for i := range f.Servers {
		s := &f.Servers[i]
		v.Servers = append(v.Servers, floorServer{Label: s.Label(), Where: s.Where, Server: s.Server, Fsync: orDash(s.Fsync),
			SyncCommit: orDash(s.SynchronousCommit), FPW: orDash(s.FullPageWrites), Elapsed: time.Duration(s.Elapsed).String()})
		if s.Error != "" {
			v.Failed = append(v.Failed, s.Label()+": "+s.Error)
		}
		head = append(head, s.Label()+": p50 ms", "p99 ms", "ratio")
		rule = append(rule, "---", "---", "---")
		rowsOf[i] = s.Rows(f)
		for _, r := range rowsOf[i] {
			if r.Note != "" {
				v.Notes = append(v.Notes, fmt.Sprintf("%s, %s: %s", s.Label(), strings.TrimSpace(r.Label), r.Note))
			}
		}
	}
	head, rule = append(head, "round trips", "target"), append(rule, "---", "---")
	v.Head, v.Rule = "| "+strings.Join(head, " | ")+" |", "|"+strings.Repeat("---|", len(rule))
	// The rows in the order of the first server that has them.
	var keys []string
	seen := map[string]bool{}
	for _, rows := range rowsOf {
		for _, r := range rows {
			if !seen[r.Key] {
				seen[r.Key] = true
				keys = append(keys, r.Key)
			}
		}
	}
	for _, k := range keys {
		line := floorLine{RoundTrips: "–", Target: "–"}
		for i := range f.Servers {
			cell := floorCell{"–", "–", "–"}
			for _, r := range rowsOf[i] {
				if r.Key != k {
					continue
				}
				if line.Label == "" {
					line.Label, line.Over, line.RoundTrips = r.Label, orDash(r.Base), r.FormatRoundTrips()
					if r.Bound() {
						line.Target = r.Target
					}
				}
				cell = floorCell{P50: fmt.Sprintf("%.3f", r.P50), P99: fmt.Sprintf("%.3f", r.P99), Ratio: "–"}
				if r.Ratio > 0 {
					cell.Ratio = fmt.Sprintf("%.2f× of %.3f ms", r.Ratio, r.BaseP50)
					if r.Bound() && !f.Quick {
						cell.Ratio += map[bool]string{true: ", met", false: ", **missed**"}[r.Met]
					}
				}
			}
			line.Cells = append(line.Cells, cell)
		}
		v.Rows = append(v.Rows, line)
	}
	for _, state := range []string{"initial", "stale", "fresh"} {
		c := floorCheck{State: floorStates[state]}
		any := false
		for i := range f.Servers {
			verdict := "–"
			if p := f.Servers[i].Plan; p != nil {
				for _, pc := range p.Checks {
					if pc.State == state {
						any = true
						verdict = pc.Verdict
						if pc.Error != "" {
							verdict = "could not inspect: " + pc.Error
						}
					}
				}
			}
			c.Verdicts = append(c.Verdicts, verdict)
		}
		if any {
			v.Checks = append(v.Checks, c)
		}
	}
	for i := range f.Servers {
		if len(f.Servers[i].Plans) > 0 {
			v.PlansOn = f.Servers[i].Label()
			for _, p := range f.Servers[i].Plans {
				p.Text = strings.TrimRight(p.Text, "\n")
				v.Plans = append(v.Plans, p)
			}
			break
		}
	}
	for i := range f.Servers {
		if fa := f.Servers[i].First; fa != nil && fa.Samples > 0 {
			v.Sent = fa.Sent
			v.First = &floorFirstSum{RoundTrips: perSample(fa.RoundTrips, fa.Samples), Statements: perSample(fa.Statements, fa.Samples),
				SetupRoundTrips: perSample(fa.SetupRoundTrips, fa.Samples)}
			break
		}
	}
	return v
}

// perSample writes n over samples with at most two decimals: "7", "6.5".
func perSample(n int64, samples int) string {
	s := fmt.Sprintf("%.2f", float64(n)/float64(samples))
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// floorHeading is the section's heading, by which spliceFloor finds it.
const floorHeading = "## The claim at the floor"

// spliceFloor returns page with its floor section replaced by section
// (which starts with floorHeading): the old section runs to the next
// heading of its level. A page without one gets it before "## Missed
// targets and why", or at its end.
func spliceFloor(page, section string) string {
	section = strings.TrimRight(section, "\n") + "\n\n"
	if i := strings.Index(page, "\n"+floorHeading+"\n"); i >= 0 {
		start := i + 1
		end := len(page)
		if j := strings.Index(page[start+len(floorHeading):], "\n## "); j >= 0 {
			end = start + len(floorHeading) + j + 1
		}
		return page[:start] + section + page[end:]
	}
	if i := strings.Index(page, "\n## Missed targets and why\n"); i >= 0 {
		return page[:i+1] + section + page[i+1:]
	}
	return strings.TrimRight(page, "\n") + "\n\n" + section
}
