package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/snowflake"
)

// gen is a generator in bwmarrin's layout, as a fleet runs them: a process
// (pod) that mints on node from unix millisecond from to to, one ID every
// every milliseconds, its step 0 in each.
type gen struct {
	pod        string
	node       int64
	from, to   int64
	every, seq int64 // seq: IDs in each of its milliseconds
}

// row is one ID of a column and the process that minted it.
type row struct {
	id  int64
	pod string
}

// t0 is the start of the generated columns: 2026-03-01T12:00:00Z.
const t0 = 1772366400000

// column returns the IDs the generators mint, in the order of the
// generators (not sorted: an audit judges a set).
func column(gens ...gen) []row {
	var out []row
	for _, g := range gens {
		for ms := g.from; ms < g.to; ms += g.every {
			for s := range max(g.seq, 1) {
				id, err := snowflake.DefaultLayout.Encode(snowflake.Parts{Ms: ms, Node: g.node, Seq: s})
				if err != nil {
					panic(err)
				}
				out = append(out, row{id.Int64(), g.pod})
			}
		}
	}
	return out
}

// cleanColumn: 8 pods on node IDs of their own, and node ID 7 handed
// from pod-a to pod-c half a second after pod-a's last ID, as a lease's
// next holder takes it over.
func cleanColumn() []row {
	var gens []gen
	for i := range int64(8) {
		gens = append(gens, gen{pod: "pod-" + strconv.FormatInt(100+i, 10), node: 100 + i, from: t0, to: t0 + 20_000, every: 20, seq: 2})
	}
	gens = append(gens, gen{pod: "pod-a", node: 7, from: t0, to: t0 + 10_000, every: 2},
		gen{pod: "pod-c", node: 7, from: t0 + 10_500, to: t0 + 20_000, every: 3})
	return column(gens...)
}

// plantedColumn is cleanColumn's fleet with two collisions planted: pod-b
// mints on node ID 7 from 5 s to 10 s beside pod-a (on odd milliseconds,
// pod-a on even ones: no ID in common, but both at once), and pod-x and
// pod-y both on node ID 9 for 2 s, the same milliseconds (every ID
// twice).
func plantedColumn() []row {
	return append(cleanColumn(), column(
		gen{pod: "pod-b", node: 7, from: t0 + 5_001, to: t0 + 10_000, every: 2},
		gen{pod: "pod-x", node: 9, from: t0 + 1_000, to: t0 + 3_000, every: 4},
		gen{pod: "pod-y", node: 9, from: t0 + 1_000, to: t0 + 3_000, every: 4},
	)...)
}

// writeColumn writes rows to a file, with their pods if by.
func writeColumn(t testing.TB, rows []row, by bool) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strconv.FormatInt(r.id, 10))
		if by {
			b.WriteString("\t" + r.pod)
		}
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkPlanted fails the test unless rep finds exactly what plantedColumn
// planted: 500 duplicates, all on node ID 9, and, with by, node ID 7 used
// by pod-a and pod-b at once from 5 s to 10 s.
func checkPlanted(t *testing.T, rep Report, by bool) {
	t.Helper()
	if rep.IDs != int64(len(plantedColumn())) || rep.Duplicates != 500 {
		t.Errorf("%d IDs, %d duplicates; want %d and 500", rep.IDs, rep.Duplicates, len(plantedColumn()))
	}
	var nodes []int64
	for _, n := range rep.Nodes {
		nodes = append(nodes, n.Node)
	}
	want := []int64{9}
	if by {
		want = []int64{7, 9}
	}
	if !slices.Equal(nodes, want) {
		t.Fatalf("node fields with evidence %v, want %v: %+v", nodes, want, rep.Nodes)
	}
	n9 := rep.Nodes[len(rep.Nodes)-1]
	if n9.Duplicates != 500 || n9.RangeCount < 1 || n9.Ranges[0].FromMs != t0+1_000 || n9.Ranges[len(n9.Ranges)-1].ToMs != t0+2_996 ||
		len(n9.Examples) == 0 || n9.Examples[0].Kind != "duplicate" {
		t.Errorf("node ID 9: %+v", n9)
	}
	if !by {
		return
	}
	if n9.RangeCount != 1 || !slices.Equal(n9.By, []string{"pod-x", "pod-y"}) {
		t.Errorf("node ID 9, by pod: %+v", n9)
	}
	n7 := rep.Nodes[0]
	if n7.Duplicates != 0 || n7.TwoPlaces == 0 || n7.RangeCount != 1 || !slices.Equal(n7.By, []string{"pod-a", "pod-b"}) {
		t.Fatalf("node ID 7: %+v", n7)
	}
	if g := n7.Ranges[0]; g.FromMs < t0+5_000 || g.FromMs > t0+5_001 || g.ToMs < t0+9_998 || g.ToMs > t0+9_999 {
		t.Errorf("node ID 7 used by two at once from %d to %d ms after t0, want 5000 to 9999", g.FromMs-t0, g.ToMs-t0)
	}
	if ex := n7.Examples[0]; ex.Kind != "two places" || len(ex.IDs) != 3 || !slices.Equal(ex.By, []string{"pod-b", "pod-a", "pod-b"}) &&
		!slices.Equal(ex.By, []string{"pod-a", "pod-b", "pod-a"}) {
		t.Errorf("node ID 7's first example: %+v", ex)
	}
}

func auditJSON(t *testing.T, r clitest.Result) Report {
	t.Helper()
	var rep Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	return rep
}

// TestAuditFiles: a generated column with planted collisions is found,
// with and without --by, and a clean one passes; exit codes 1 and 0.
func TestAuditFiles(t *testing.T) {
	t.Parallel()
	planted, plantedBy := writeColumn(t, plantedColumn(), false), writeColumn(t, plantedColumn(), true)
	clean, cleanBy := writeColumn(t, cleanColumn(), false), writeColumn(t, cleanColumn(), true)

	r := harness.Run(t, "audit", "-o", "json", "--by", "pod", plantedBy)
	clitest.WantExit(t, r, cli.ExitFailure, "audit found 500 duplicate IDs and 2 node fields with evidence of two users in "+count(int64(len(plantedColumn())))+" IDs")
	checkPlanted(t, auditJSON(t, r), true)

	r = harness.Run(t, "audit", "-o", "json", planted)
	clitest.WantExit(t, r, cli.ExitFailure, "500 duplicate IDs and 1 node field with evidence of two users")
	checkPlanted(t, auditJSON(t, r), false)

	for _, args := range [][]string{{clean}, {"--by", "pod", cleanBy}, {"-o", "json", "--by", "pod", cleanBy}} {
		r = harness.Run(t, append([]string{"audit"}, args...)...)
		if r.Code != 0 || r.Stderr != "" {
			t.Errorf("audit %v of a clean column: %+v", args, r)
		}
	}
	if !strings.Contains(harness.Must(t, "audit", "--by", "pod", cleanBy), "clean: no ID read twice, no node field used by two pod values at once") {
		t.Error("audit of a clean column does not say so")
	}
	// The table names the node fields, the ranges and the examples.
	r = harness.Run(t, "audit", "--by", "pod", plantedBy)
	for _, want := range []string{"duplicates: 500", "NODE  IDS", "pod-a, pod-b", "node 7: 1 time range",
		"  2026-03-01T12:00:05.00", "two places at once", "duplicate at 2026-03-01T12:00:01.000Z: ", "read from pod-x and pod-y"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the table does not say %q:\n%s", want, r.Stdout)
		}
	}
	// Standard input, and --within shorter than the pods' alternation.
	b, _ := os.ReadFile(plantedBy)
	r = harness.RunWith(t, string(b), nil, "audit", "-o", "json", "--by", "pod", "--within", "1ms", "-")
	if rep := auditJSON(t, r); r.Code != 1 || len(rep.Nodes) != 1 || rep.Nodes[0].Node != 9 {
		t.Errorf("--within 1ms: %+v", rep.Nodes)
	}
}

// TestAuditSpills: spilled in many small chunks, the audit reports what it
// reports from one chunk in memory.
func TestAuditSpills(t *testing.T) {
	t.Parallel()
	path := writeColumn(t, plantedColumn(), true)
	report := func(chunk int) (Report, int) {
		env, _, _ := clitest.Env("", nil)
		o := &Options{Env: env, Files: []string{path}, By: "pod", Within: defaultWithin, Examples: 3, chunk: chunk,
			layout: idlayout.IDLayout{Layout: snowflake.DefaultLayout, Order: idlayout.SnowflakeOrder}}
		rep, err := audit(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return rep, o.spilled
	}
	inMemory, none := report(defaultChunk)
	spilled, runs := report(1000)
	if none != 0 || runs < len(plantedColumn())/1000 {
		t.Errorf("%d runs spilled in chunks of %d, %d in chunks of 1000", none, defaultChunk, runs)
	}
	checkPlanted(t, spilled, true)
	if !reflect.DeepEqual(inMemory, spilled) {
		t.Errorf("spilled in chunks of 1000, the report differs:\n%+v\nin memory:\n%+v", spilled, inMemory)
	}
}

// TestAuditBadInput: a line that is not an ID names its line number; bad
// flags are usage errors.
func TestAuditBadInput(t *testing.T) {
	t.Parallel()
	file := func(body string) string {
		p := filepath.Join(t.TempDir(), "ids.txt")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := strconv.FormatInt(column(gen{node: 1, from: t0, to: t0 + 1, every: 1})[0].id, 10)
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{file(good + "\n" + good + "\n12x\n")}, []string{"ids.txt, line 3: \"12x\" is not an ID: an ID is a decimal number, digits 0-9 only"}},
		{[]string{file(good + "\n\n")}, []string{"line 2", "the line is empty"}},
		{[]string{file(good + " pod-a\n")}, []string{"line 1", "a line holds one ID"}},
		{[]string{"--by", "pod", file(good + "\tpod-a\n" + good + "\n")}, []string{"line 2", "is not an ID and its process", "with --by a line holds an ID and the value"}},
		{[]string{file("-5\n")}, []string{"line 1", "digits 0-9 only"}},
		{[]string{file("99999999999999999999\n")}, []string{"line 1", "above 9223372036854775807"}},
		{[]string{"--layout", "js53", file(good + "\n")}, []string{"line 1", "above 9007199254740991, the largest ID of a 53-bit layout"}},
		{[]string{"no/such/file"}, []string{"no/such/file"}},
		{[]string{"--query", "SELECT 1", "x.txt"}, []string{"--query and files both give the IDs"}},
		{[]string{"--query", "delete from t2"}, []string{"--query delete ...: it must be a SELECT", "audit only reads"}},
		{[]string{"--query", " -- the IDs\n/* all */ UPDATE t SET x = 1 RETURNING id"}, []string{"--query UPDATE ...: it must be a SELECT"}},
		{[]string{"--within", "-1s"}, []string{"--within"}},
		{[]string{"--examples", "1000"}, []string{"--examples 1000"}},
		{[]string{"--temp-dir", "/no/such/dir"}, []string{"--temp-dir /no/such/dir: it must be an existing directory"}},
		{[]string{"--layout", "twitter"}, []string{`--layout "twitter"`}},
		{[]string{"-o", "yaml"}, []string{`-o "yaml"`}},
	} {
		clitest.WantExit(t, harness.Run(t, append([]string{"audit"}, c.args...)...), cli.ExitUsage, c.says...)
	}
}

// TestAuditLayouts: the node field is counted in the layout given: swapped
// halves read back, and sonyflake's machine ID.
func TestAuditLayouts(t *testing.T) {
	t.Parallel()
	// Node ID 40 given the other way round (upper 8, lower 1): two copies.
	id := int64(1719379422144-snowflake.TwitterOrigin)<<22 | 8<<17 | 1<<12
	path := writeColumn(t, []row{{id, "a"}, {id, "b"}}, false)
	r := harness.Run(t, "audit", "-o", "json", "--swap-node-halves", path)
	rep := auditJSON(t, r)
	if r.Code != 1 || len(rep.Nodes) != 1 || rep.Nodes[0].Node != 40 || rep.Nodes[0].NodeField == nil || *rep.Nodes[0].NodeField != 257 {
		t.Errorf("--swap-node-halves: %+v", rep)
	}
	sony := int64(35000000000)<<24 | 3<<16 | 4242
	path = writeColumn(t, []row{{sony, "a"}, {sony + 1<<16, "a"}, {sony, "a"}}, false)
	rep = auditJSON(t, harness.Run(t, "audit", "-o", "json", "--layout", "sonyflake", path))
	if rep.Duplicates != 1 || len(rep.Nodes) != 1 || rep.Nodes[0].Node != 4242 || rep.Nodes[0].IDs != 3 {
		t.Errorf("sonyflake: %+v", rep)
	}
	// Epoch bits: the same millisecond and step under two claims.
	l := snowflake.Layout{Origin: snowflake.TwitterOrigin, NodeBits: 10, StepBits: 12, EpochBits: 2}
	a, _ := l.Encode(snowflake.Parts{Ms: t0, Node: 3, Epoch: 1, Seq: 5})
	b, _ := l.Encode(snowflake.Parts{Ms: t0, Node: 3, Epoch: 2, Seq: 5})
	path = writeColumn(t, []row{{a.Int64(), ""}, {b.Int64(), ""}}, false)
	rep = auditJSON(t, harness.Run(t, "audit", "-o", "json", "--epoch-bits", "2", path))
	if rep.Duplicates != 0 || len(rep.Nodes) != 1 || rep.Nodes[0].RepeatedSteps != 1 || rep.Nodes[0].Examples[0].Kind != "repeated step" {
		t.Errorf("epoch bits: %+v", rep)
	}
}

// TestAuditQuery: the same columns from PostgreSQL, through --query and a
// cursor: the planted one is found, the clean one passes; bad queries and
// bad rows are usage errors that name the row.
func TestAuditQuery(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	load := func(table string, rows []row) {
		ids := make([]int64, len(rows))
		pods := make([]string, len(rows))
		for i, r := range rows {
			ids[i], pods[i] = r.id, r.pod
		}
		clitest.ExecSQL(t, db, "CREATE TABLE "+table+" (id bigint, pod text, note text)")
		clitest.ExecSQL(t, db, "INSERT INTO "+table+" (id, pod) SELECT * FROM unnest($1::bigint[], $2::text[])", ids, pods)
	}
	load("planted", plantedColumn())
	load("clean", cleanColumn())

	r := harness.Run(t, "audit", "--dsn", dsn, "-o", "json", "--query", "SELECT id, pod FROM planted;", "--by", "pod")
	clitest.WantExit(t, r, cli.ExitFailure, "500 duplicate IDs and 2 node fields")
	checkPlanted(t, auditJSON(t, r), true)
	for _, q := range []string{"SELECT id::text FROM planted", "SELECT id::numeric(20) FROM planted"} {
		r = harness.Run(t, "audit", "--dsn", dsn, "-o", "json", "--query", q)
		clitest.WantExit(t, r, cli.ExitFailure, "500 duplicate IDs and 1 node field")
		checkPlanted(t, auditJSON(t, r), false)
	}
	if r := harness.Run(t, "audit", "--dsn", dsn, "--query", "SELECT id, note, pod FROM clean", "--by", "pod"); r.Code != 0 {
		t.Errorf("the clean table: %+v", r)
	}

	clitest.ExecSQL(t, db, "INSERT INTO clean (id, pod) VALUES (NULL, 'pod-z')")
	for _, c := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"--query", "SELECT id FROM clean", "--by", "host"}, cli.ExitUsage, []string{"--by host: the query returns no column of that name (its columns: id)"}},
		{[]string{"--query", "SELECT id, pod FROM clean ORDER BY id NULLS LAST", "--by", "pod"}, cli.ExitUsage,
			[]string{fmt.Sprintf("row %d of --query: its ID (the first column) is NULL", len(cleanColumn())+1)}},
		{[]string{"--query", "SELECT -1"}, cli.ExitUsage, []string{"row 1 of --query", `"-1" is not an ID`}},
		{[]string{"--query", "SELECT nope FROM clean"}, cli.ExitFailure, []string{"--query", "nope"}},
	} {
		clitest.WantExit(t, harness.Run(t, append([]string{"audit", "--dsn", clitest.WithUser(t, dsn, "postgres", "")}, c.args...)...), c.code, c.says...)
	}
}

// TestAuditOneID: one ID reads in the singular.
func TestAuditOneID(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "one.txt")
	if err := os.WriteFile(path, []byte("1805834298273538055\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := harness.Run(t, "audit", path)
	if r.Code != 0 || !strings.Contains(r.Stdout, "read 1 ID of 1 node field, stamped") {
		t.Errorf("audit of one ID: %+v", r)
	}
}
