package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// Report is what an audit found, as -o json writes it.
type Report struct {
	IDs    int64  `json:"ids"`    // IDs read
	Layout string `json:"layout"` // the layout they were read in
	// By names what tells processes apart (--by); null without it.
	By *string `json:"by"`
	// Duplicates counts the copies of IDs read more than once, beyond the
	// first of each.
	Duplicates int64 `json:"duplicates"`
	// NodesSeen counts the node fields the IDs hold.
	NodesSeen int64 `json:"nodes_seen"`
	// From and To are the first and the last time unit of the IDs.
	From   *time.Time `json:"from"`
	FromMs *int64     `json:"from_ms"`
	To     *time.Time `json:"to"`
	ToMs   *int64     `json:"to_ms"`
	// Nodes are the node fields with evidence of two users, by node.
	Nodes []NodeReport `json:"nodes"`
}

// NodeReport is the evidence that two processes used one node field.
type NodeReport struct {
	Node int64 `json:"node"`
	// NodeField is the node field as the IDs hold it, when its halves are
	// swapped back (--swap-node-halves).
	NodeField *int64 `json:"node_field,omitempty"`
	IDs       int64  `json:"ids"`
	// Duplicates counts the copies of IDs of this node field read more
	// than once, beyond the first of each.
	Duplicates int64 `json:"duplicates"`
	// RepeatedSteps counts IDs whose time unit and sequence another ID of
	// the node field has, with other epoch bits: two claims in one unit.
	RepeatedSteps int64 `json:"repeated_steps"`
	// TwoPlaces counts the times the node field went from one process to
	// another and back within --within, or had two in one time unit.
	TwoPlaces int64 `json:"two_places"`
	// By lists the processes involved (at most 10).
	By []string `json:"by,omitempty"`
	// Ranges are the time ranges the evidence spans, merged (at most 10),
	// of RangeCount.
	Ranges     []Range   `json:"ranges"`
	RangeCount int       `json:"range_count"`
	Examples   []Example `json:"examples"`
}

// Range is a span of time, both ends included.
type Range struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	FromMs int64     `json:"from_ms"`
	ToMs   int64     `json:"to_ms"`
}

// Example is one piece of evidence: the IDs that show it, and the
// processes they came from.
type Example struct {
	// Kind is "duplicate" (an ID read more than once), "repeated step"
	// (the same time unit and sequence with other epoch bits) or "two
	// places" (the node field used by two processes at once).
	Kind   string    `json:"kind"`
	Time   time.Time `json:"time"`
	UnixMs int64     `json:"unix_ms"`
	IDs    []string  `json:"ids"` // strings: JSON numbers lose precision above 2^53
	By     []string  `json:"by,omitempty"`
}

func formatID(id int64) string { return strconv.FormatInt(id, 10) }

// Clean reports whether the audit found nothing.
func (r Report) Clean() bool { return r.Duplicates == 0 && len(r.Nodes) == 0 }

// Summary is the one line that says what the audit found.
func (r Report) Summary() string {
	if r.Clean() {
		return fmt.Sprintf("no duplicate and no node field with evidence of two users in %s IDs", count(r.IDs))
	}
	var parts []string
	if r.Duplicates > 0 {
		parts = append(parts, plural(r.Duplicates, "duplicate ID", "duplicate IDs"))
	}
	if n := len(r.Nodes); n > 0 {
		parts = append(parts, plural(int64(n), "node field with evidence of two users", "node fields with evidence of two users"))
	}
	return fmt.Sprintf("%s in %s IDs", strings.Join(parts, " and "), count(r.IDs))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}

// count writes n with thousands separators: 10,000,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeTable writes the report for people.
func writeTable(w io.Writer, r Report) error {
	fmt.Fprintf(w, "layout: %s\n", r.Layout)
	span := ""
	if r.From != nil {
		span = ", stamped " + cli.Exact(*r.From) + " to " + cli.Exact(*r.To)
	}
	fmt.Fprintf(w, "read %s of %s%s\n", plural(r.IDs, "ID", "IDs"), plural(r.NodesSeen, "node field", "node fields"), span)
	if r.Clean() {
		what := "no ID read twice (--by, naming what tells processes apart, finds node fields two of them used at once)"
		if r.By != nil {
			what = "no ID read twice, no node field used by two " + cli.Printable(*r.By) + " values at once"
		}
		_, err := fmt.Fprintf(w, "clean: %s\n", what)
		return err
	}
	fmt.Fprintf(w, "duplicates: %s\n", count(r.Duplicates))
	if len(r.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := cli.NewTable(w)
	by := "BY"
	if r.By != nil {
		by = strings.ToUpper(cli.Printable(*r.By))
	}
	t.Row("NODE", "IDS", "DUPLICATES", "REPEATED STEPS", "TWO PLACES", "FROM", "TO", by)
	for _, n := range r.Nodes {
		from, to := "-", "-"
		if len(n.Ranges) > 0 {
			from, to = cli.Exact(n.Ranges[0].From), cli.Exact(n.Ranges[len(n.Ranges)-1].To)
		}
		node := strconv.FormatInt(n.Node, 10)
		if n.NodeField != nil {
			node += " (field " + strconv.FormatInt(*n.NodeField, 10) + ")"
		}
		t.Row(node, count(n.IDs), count(n.Duplicates), count(n.RepeatedSteps), count(n.TwoPlaces), from, to, listed(n.By))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, n := range r.Nodes {
		fmt.Fprintf(w, "\nnode %d: %s\n", n.Node, plural(int64(n.RangeCount), "time range", "time ranges"))
		for _, g := range n.Ranges {
			fmt.Fprintf(w, "  %s to %s\n", cli.Exact(g.From), cli.Exact(g.To))
		}
		if n.RangeCount > len(n.Ranges) {
			fmt.Fprintf(w, "  ... and %d more\n", n.RangeCount-len(n.Ranges))
		}
		for _, ex := range n.Examples {
			kind := ex.Kind
			if kind == "two places" {
				kind = "two places at once"
			}
			fmt.Fprintf(w, "  %s at %s: %s\n", kind, cli.Exact(ex.Time), describe(ex))
		}
	}
	return nil
}

// describe writes an example's IDs, each with its process if known.
func describe(ex Example) string {
	var parts []string
	for i, id := range ex.IDs {
		switch {
		case len(ex.By) == len(ex.IDs):
			parts = append(parts, id+" ("+cli.Printable(ex.By[i])+")")
		default:
			parts = append(parts, id)
		}
	}
	s := strings.Join(parts, ", ")
	if ex.Kind == "duplicate" && len(ex.By) > 0 {
		var by []string
		for _, b := range ex.By {
			by = append(by, cli.Printable(b))
		}
		s += " read from " + strings.Join(by, " and ")
	}
	return s
}

func listed(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = cli.Printable(v)
	}
	return strings.Join(out, ", ")
}
