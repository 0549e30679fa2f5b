//go:build linux

package run

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestExportTemplates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tmpl        string
		node, epoch int64
		want        string
	}{
		{"{node}", 40, 3, "40"},
		{"{node%32}", 40, 3, "8"},
		{"{node/32}", 40, 3, "1"},
		{"{node/32%32}", 1023, 3, "31"},
		{"{node%32/2}", 63, 3, "15"},
		{"{epoch%4}", 40, 7, "3"},
		{"w{node%32}-d{node/32%32}-e{epoch}", 1000, 9, "w8-d31-e9"},
		{"{{node}}={node}", 5, 1, "{node}=5"},
		{"plain text", 5, 1, "plain text"},
		{"", 5, 1, ""},
		{"{node%9223372036854775807}", 12, 1, "12"},
	} {
		e, err := parseExport("X=" + c.tmpl)
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		if got := e.value(c.node, c.epoch); got != c.want {
			t.Errorf("%q at node %d epoch %d: %q, want %q", c.tmpl, c.node, c.epoch, got, c.want)
		}
	}
	for _, c := range []struct{ arg, says string }{
		{"X={nod}", `unknown field "nod"`},
		{"X={}", `unknown field ""`},
		{"X={ node}", `unknown field " node"`},
		{"X={node/0}", "/0 divides by zero"},
		{"X={node%00}", "%0 divides by zero"},
		{"X={node%}", "% must be followed by a whole number"},
		{"X={node%-3}", "% must be followed by a whole number"},
		{"X={node*2}", `unknown field "node*2"`},
		{"X={node%32x}", `unexpected "x"`},
		{"X={node%99999999999999999999}", "the number is above"},
		{"X={node", "is not closed"},
		{"X=a}b", "a lone }"},
		{"X={node}{", "is not closed"},
		{"1X={node}", `"1X" is not an environment variable's name`},
		{"A-B={node}", `"A-B" is not`},
		{"={node}", `"" is not`},
		{"NODEID_NODE={node}", "clashes with the variables nodeid run sets"},
		{"nodeid_x={node}", "clashes"},
		{"WORKER_ID", "must be NAME=TEMPLATE"},
	} {
		_, err := parseExport(c.arg)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want an error saying %q", c.arg, err, c.says)
		}
	}
}

func TestExportDistinct(t *testing.T) {
	t.Parallel()
	flags := func(args ...string) *exportFlags {
		f := &exportFlags{}
		for _, a := range args {
			if err := f.Set(a); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	for _, c := range []struct {
		args []string
		r    cli.NodeRange
		says string // "" if accepted
	}{
		{[]string{"WORKER_ID={node%32}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "node IDs 0 and 32 of the range 0-1023 both get WORKER_ID=0"},
		{[]string{"WORKER_ID={node%32}"}, cli.NodeRange{Lo: 0, Hi: 31}, ""},
		{[]string{"WORKER_ID={node%32}"}, cli.NodeRange{Lo: 32, Hi: 63}, ""},
		{[]string{"WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}"}, cli.NodeRange{Lo: 0, Hi: 1024}, "node IDs 0 and 1024"},
		{[]string{"WORKER_ID={node%32}", "DATACENTER_ID={node/64}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "node IDs 0 and 32"},
		// A label is judged by its digits: the last are node/32, and the
		// first, which C's atoi reads, node%32.
		{[]string{"ID={node%32}-{node/32}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "node IDs 0 and 1 of the range 0-1023 get ID=0-0 and ID=1-0, whose last digits read as the same number (0)"},
		{[]string{"ID={node%32}{node/32}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "node IDs 1 and 320 of the range 0-1023 get ID=10 and ID=010, which read as the same number (ID=10)"}, // 1|0 and 0|10
		{[]string{"E={epoch}"}, cli.NodeRange{Lo: 0, Hi: 1}, "every export uses {epoch}"},
		{[]string{"E={epoch}"}, cli.NodeRange{Lo: 7, Hi: 7}, ""},
		{[]string{"E={epoch}-{node}"}, cli.NodeRange{Lo: 0, Hi: 1}, "every export uses {epoch}"},
		{[]string{"E={epoch}", "W={node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "E={epoch} is a number of {epoch} alone, which tells no node IDs of the range 0-1023 apart"},
		{[]string{"E=e{epoch}", "W={node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"W={node}{epoch}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "every export uses {epoch}"},
		{[]string{"W={node%32}", "LABEL=pod-{node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, "both get W=0 (LABEL=pod-{node} is a label"},
		{[]string{"W={node%32}", "A=a{node}", "B={node}-"}, cli.NodeRange{Lo: 0, Hi: 1023}, "(A=a{node} and B={node}- are labels"},
		{[]string{"LABEL=pod-{node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"W={node%32}", "E=e{epoch%4}"}, cli.NodeRange{Lo: 0, Hi: 63}, "node IDs 0 and 32 of the range 0-63 both get W=0 (E=e{epoch%4} is a label"},
		{[]string{"W={node%32}", "E={epoch%4}"}, cli.NodeRange{Lo: 0, Hi: 31}, "E={epoch%4} is a number of {epoch} alone"},
		{[]string{"W={node%32}", "E= +{epoch%4}"}, cli.NodeRange{Lo: 0, Hi: 31}, "E= +{epoch%4} is a number of {epoch} alone"},
		{[]string{"W={node%32}", "E={epoch%4}"}, cli.NodeRange{Lo: 5, Hi: 5}, ""},
		// An export that tells the node IDs apart on its own is judged
		// alone; those that do not must do it together.
		{[]string{"DATACENTER={node/32}", "WORKER={node%32}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"DATACENTER={node/32}", "WORKER={node%32}", "INSTANCE={node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"INSTANCE={node}", "SHARD={node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, ""},
		{[]string{"WORKER_ID={node%32}", "INSTANCE={node}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			"node IDs 0 and 32 of the range 0-1023 both get WORKER_ID=0 (INSTANCE={node} tells every node ID apart on its own, so it is judged alone: a generator that reads WORKER_ID without it gets one ID on both)"},
		{[]string{"W={node%32}", "D={node/64}", "I={node}", "J=1{node}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			"both get W=0 D=0 (I={node} and J=1{node} tell every node ID apart on their own, so they are judged alone: a generator that reads W and D without them gets one ID on both)"},
	} {
		err := flags(c.args...).distinct(c.r, "the range "+c.r.String(), false)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%v over %s: %v", c.args, c.r, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%v over %s: %v, want an error saying %q", c.args, c.r, err, c.says)
		}
	}
}

// TestExportDistinctReadsNumbers: exports that identify a generator are
// told apart by the numbers generators read from them, not by their text.
// A template of two placeholders writes a leading zero when the first is
// 0, and most generators read 015 as 15 (Integer.parseInt, int, Atoi),
// some as octal 13 (Long.decode, strtol with base 0, YAML 1.1): either way
// the same worker ID as another node ID's 15 or 13.
func TestExportDistinctReadsNumbers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		r    cli.NodeRange
		says []string // nil if accepted
	}{
		// Node 10 writes 010, node 100 writes 10: both worker ID 10.
		{[]string{"WORKER_ID={node/100}{node%100}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 10 and 100 of the range 0-1023 get WORKER_ID=010 and WORKER_ID=10, which read as the same number (WORKER_ID=10)"}},
		// D is 010 for node 320 (32*10) and 10 for node 512 (32*16).
		{[]string{"W={node%32}", "D={node/512}{node/32%16}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 320 and 512 of the range 0-1023 get W=0 D=010 and W=0 D=10, which read as the same numbers (W=0 D=10)"}},
		// Node 12 writes 112; node 160 writes 0160, octal 112.
		{[]string{"W={node/8%10}{node}"}, cli.NodeRange{Lo: 0, Hi: 255},
			[]string{"node IDs 12 and 160 of the range 0-255 get W=112 and W=0160, which read as the same number (W=112) where a leading 0 means octal"}},
		// 00 to 09 for nodes 0 to 9, the node ID itself from 10 on: 08
		// and 09 are no octal numbers, which C's strtol with base 0 reads
		// as 0, stopping at the 8, as it reads node 0's 00.
		{[]string{"W={node/10}{node%10}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 0 and 8 of the range 0-1023 get W=00 and W=08, which read as the same number (W=0) where a leading 0 means octal and the reading stops at an 8 or 9"}},
		{[]string{"W={node/10}{node%10}"}, cli.NodeRange{Lo: 10, Hi: 1023}, nil},
		// Digits are part of the number: 1{node%32} is 10 for nodes 0
		// and 32, and identifies the generator as {node%32} does.
		{[]string{"WORKER_ID=1{node%32}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 0 and 32 of the range 0-1023 both get WORKER_ID=10"}},
		{[]string{"WORKER_ID=1{node%32}", "POD=pod-{node}"}, cli.NodeRange{Lo: 0, Hi: 31}, nil},
		{[]string{"W={node/100}{node%100}"}, cli.NodeRange{Lo: 100, Hi: 999}, nil},
		// Whitespace, a sign and a base are what readers skip or take:
		// the values are numbers, checked as such. A base is what readers
		// that take the leading decimal digits stop at: 0x{node} is 0 to
		// them (TestExportHexValueReadByLeadingDigits).
		{[]string{"W= {node}\t", "X=+{node}", "Y=-{node}"}, cli.NodeRange{Lo: 0, Hi: 1023}, nil},
		{[]string{"W= {node}\t", "Z=0x{node}", "V=#{node}", "U=0XfF{node}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 0 and 1 of the range 0-1023 get Z=0x0 and Z=0x1, which read as the same number (Z=0) where the reading takes the leading decimal digits"}},
		{[]string{"W=+{node/100}{node%100}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 10 and 100 of the range 0-1023 get W=+010 and W=+10, which read as the same number (W=10)"}},
		// Node 10 writes 0x010, node 100 0x10: both 16 in hexadecimal,
		// in every reading.
		{[]string{"W=0x{node/100}{node%100}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 10 and 100 of the range 0-1023 get W=0x010 and W=0x10, which read as the same number (W=16)"}},
		{[]string{"W= {node/100}{node%100}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{`get W=" 010" and W=" 10", which read as the same number (W=10)`}},
		{[]string{"W=-{node/100}{node%100}"}, cli.NodeRange{Lo: 0, Hi: 1023},
			[]string{"node IDs 10 and 100 of the range 0-1023 get W=-010 and W=-10, which read as the same number (W=-10)"}},
	} {
		f := &exportFlags{}
		for _, a := range c.args {
			if err := f.Set(a); err != nil {
				t.Fatal(err)
			}
		}
		err := f.distinct(c.r, "the range "+c.r.String(), false)
		switch {
		case c.says == nil && err != nil:
			t.Errorf("%v over %s: %v", c.args, c.r, err)
		case c.says != nil && err == nil:
			t.Errorf("%v over %s: accepted, want an error saying %q", c.args, c.r, c.says)
		case c.says != nil:
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%v over %s: %v, want an error saying %q", c.args, c.r, err, s)
				}
			}
		}
	}
}

// FuzzExportTemplate: the parser never panics; what it accepts evaluates
// without panicking, to text free of braces unless escaped, and a template
// without braces is its own value.
func FuzzExportTemplate(f *testing.F) {
	for _, s := range []string{"{node}", "{node%32}", "{node/32%32}", "w{epoch%4}-{node}", "{{}}", "{node/0}", "}", "{", "{nod}", "{node%99999999999999999999}"} {
		f.Add(s, int64(40), int64(3))
	}
	f.Fuzz(func(t *testing.T, tmpl string, node, epoch int64) {
		if node < 0 || epoch < 0 {
			return // fields are never negative
		}
		e, err := parseExport("X=" + tmpl)
		if err != nil {
			if !strings.Contains(err.Error(), "template") {
				t.Errorf("%q: the error does not name the template: %v", tmpl, err)
			}
			return
		}
		v := e.value(node, epoch)
		if !strings.ContainsAny(tmpl, "{}") && v != tmpl {
			t.Errorf("%q: value %q, want the text itself", tmpl, v)
		}
		braces := strings.Count(tmpl, "{{") + strings.Count(tmpl, "}}")
		if braces == 0 && strings.ContainsAny(v, "{}") {
			t.Errorf("%q: value %q has a brace", tmpl, v)
		}
	})
}

// TestExportUsage: bad exports, and exports that do not tell the node IDs
// of the range apart, are usage errors naming the template, before any
// claim: the table is not even created.
func TestExportUsage(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"--export", "WORKER_ID={nod%32}"}, []string{`"WORKER_ID={nod%32}"`, `unknown field "nod"`}},
		{[]string{"--export", "WORKER_ID={node/0}"}, []string{`"WORKER_ID={node/0}"`, "divides by zero"}},
		{[]string{"--export", "WORKER-ID={node}"}, []string{`"WORKER-ID" is not an environment variable's name`}},
		{[]string{"--export", "NODEID_WORKER={node}"}, []string{"NODEID_WORKER clashes"}},
		{[]string{"--export", "WORKER_ID={node%32}"}, []string{"--export WORKER_ID={node%32}", "node IDs 0 and 32 of the range 0-1023"}},
		{[]string{"--range", "0-63", "--export", "W={node%32}", "--export", "D={node/64}"}, []string{"W={node%32},D={node/64}", "node IDs 0 and 32 of the range 0-63"}},
	} {
		args := append([]string{"run", "--dsn", dsn, "--create"}, c.args...)
		r := harness.Run(t, append(args, "--", "true")...)
		clitest.WantExit(t, r, cli.ExitUsage, c.says...)
	}
	var exists bool
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT to_regclass('snowflake_nodes') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("a refused run created the table: the exports were checked after a claim")
	}
	// The table's range decides when --range is not given.
	harness.Must(t, "init", "--dsn", dsn, "--range", "32-63")
	r := harness.Run(t, "run", "--dsn", dsn, "--export", "WORKER_ID={node%32}", "--", "sh", "-c", `echo "$WORKER_ID"`)
	if r.Code != 0 || r.Stdout != "0\n" {
		t.Errorf("WORKER_ID={node%%32} on the table's range 32-63: %+v, want exit 0 and 0 (node 32)", r)
	}
	harness.Must(t, "init", "--dsn", dsn, "--range", "32-64")
	r = harness.Run(t, "run", "--dsn", dsn, "--export", "WORKER_ID={node%32}", "--", "true")
	clitest.WantExit(t, r, cli.ExitUsage, "node IDs 32 and 64 of the range 32-64")
}

// TestExportEnv: the exports reach the command, beside NODEID_NODE, and
// replace variables of the same name it would inherit.
func TestExportEnv(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	t.Setenv("SEQUENCE_WORKERID", "inherited")
	r := harness.Run(t, "run", "--dsn", dsn, "--create", "--range", "1000-1000",
		"--export", "SEQUENCE_WORKERID={node%32}", "--export", "SEQUENCE_DATACENTERID={node/32%32}", "--export", "TAG=n{node}e{epoch}{{x}}",
		"--", "sh", "-c", `echo "$NODEID_NODE $SEQUENCE_WORKERID $SEQUENCE_DATACENTERID $TAG"; env | grep -c '^SEQUENCE_WORKERID='`)
	if want := "1000 8 31 n1000e1{x}\n1\n"; r.Code != 0 || r.Stdout != want {
		t.Errorf("%+v, want exit 0 and %q", r, want)
	}
}

// genHolder describes a generator under "nodeid run --export".
type genHolder struct {
	lang string // java, python or node
	dir  string
	run  *runProc
}

// genCommand is the command running the generator of lang with layout,
// minting into dir.
func genCommand(t *testing.T, lang, layout, dir string) []string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "export"))
	if err != nil {
		t.Fatal(err)
	}
	switch lang {
	case "java":
		return []string{clitest.RequireRuntime(t, "java"), filepath.Join(src, "Gen.java"), layout, dir}
	case "python":
		return []string{clitest.RequireRuntime(t, "python3"), filepath.Join(src, "gen.py"), layout, dir}
	case "node":
		return []string{clitest.RequireRuntime(t, "node"), filepath.Join(src, "gen.mjs"), layout, dir}
	}
	t.Fatalf("no generator in %s", lang)
	return nil
}

// readGenIDs returns the IDs minted into dir: whole lines only.
func readGenIDs(t *testing.T, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[:len(lines)-1] { // the last is being written, or empty
			v, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				t.Fatalf("%s/%s: line %q: %v", dir, e.Name(), line, err)
			}
			ids = append(ids, v)
		}
	}
	return ids
}

// stampOf is the unix millisecond of an ID of both layouts (Twitter
// epoch, 22 low bits).
func stampOf(id int64) int64 { return id>>22 + 1288834974657 }

// waitMinting waits until the generator of h has minted for 300ms.
func waitMinting(t *testing.T, h *genHolder) {
	t.Helper()
	testkit.Until(t, 90*time.Second, h.lang+" minting into "+h.dir, testkit.True(func() bool {
		if h.run.exited() {
			t.Fatalf("nodeid run of the %s generator exited; stderr: %s", h.lang, h.run.stderr.String())
		}
		ids := readGenIDs(t, h.dir)
		if len(ids) == 0 {
			return false
		}
		lo, hi := slices.Min(ids), slices.Max(ids)
		return stampOf(hi)-stampOf(lo) >= 300
	}))
}

// checkIDs is the checker over the holders' outputs, in order of their
// takeovers: it returns the number of IDs minted more than once, and of
// holders that stamped at or before the last stamp of the one before; it
// fails the test if an ID lacks the worker fields want.
func checkIDs(t *testing.T, want int64, holders []*genHolder) (dups, early int) {
	t.Helper()
	seen := map[int64]bool{}
	prevLast := int64(0)
	for _, h := range holders {
		ids := readGenIDs(t, h.dir)
		if len(ids) == 0 {
			t.Fatalf("the %s generator minted nothing", h.lang)
		}
		for _, id := range ids {
			if id>>12&1023 != want {
				t.Errorf("%s: ID %d has the worker fields %d, want %d", h.lang, id, id>>12&1023, want)
			}
			if seen[id] {
				dups++
			}
			seen[id] = true
		}
		first, last := stampOf(slices.Min(ids)), stampOf(slices.Max(ids))
		t.Logf("%s: %d IDs stamped %s to %s", h.lang, len(ids), cli.ExactMs(first), cli.ExactMs(last))
		if first <= prevLast {
			early++
			t.Logf("%s stamped %s, not after the previous holder's last stamp %s", h.lang, cli.ExactMs(first), cli.ExactMs(prevLast))
		}
		prevLast = last
	}
	return dups, early
}

// EnvTestLong set to 1 makes the language tests longer: the 10-bit chain
// of TestExportTakeover gets a Java holder too (CI runs without it).
const EnvTestLong = "NODEID_TEST_LONG"

// TestExportTakeover runs real generators in Java, Python and Node.js
// under "nodeid run --export", in the two layouts of the frameworks (5+5
// worker and datacenter bits: Java, Python, Node.js; 10 worker bits:
// Node.js, Python, and Java with NODEID_TEST_LONG=1), each taking node ID
// 40 over from the one before (started with --wait while it runs, then the one
// before stopped with SIGTERM), and the checker over all their IDs: 0
// duplicates. Then the checker is shown to catch a broken holder: one
// whose generator stamps from a clock set back (through the test hook, for
// it alone), as one stamping from another host's clock would.
func TestExportTakeover(t *testing.T) {
	t.Parallel()
	exports := map[string][]string{
		"5+5": {"--export", "SEQUENCE_WORKERID={node%32}", "--export", "SEQUENCE_DATACENTERID={node/32%32}"},
		"10":  {"--export", "WORKER_ID={node}"},
	}
	// Node ID 40 is worker 8, datacenter 1 in 5+5 bits: 1<<5|8 = 40, the
	// same 10 bits as worker 40 in the 10-bit layout.
	const node = 40
	chains := []struct {
		layout string
		langs  []string
	}{
		{"5+5", []string{"java", "python", "node"}},
		{"10", []string{"node", "python"}},
	}
	if os.Getenv(EnvTestLong) == "1" {
		chains[1].langs = append(chains[1].langs, "java")
	}
	for _, c := range chains {
		t.Run(c.layout, func(t *testing.T) {
			t.Parallel()
			s := newFenceSetup(t)
			args := func(wait bool, command ...string) []string {
				a := []string{"--dsn", s.dsn, "--create", "--range", "40-40", "--ttl", fenceTTL}
				if wait {
					a = append(a, "--wait")
				}
				a = append(a, exports[c.layout]...)
				return append(append(a, "--"), command...)
			}
			var holders []*genHolder
			for i, lang := range c.langs {
				h := &genHolder{lang: lang, dir: t.TempDir()}
				h.run = startHolder(t, s.clock, args(i > 0, genCommand(t, lang, c.layout, h.dir)...)...)
				if i > 0 {
					prev := holders[i-1]
					if err := prev.run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
						t.Fatal(err)
					}
					if code := prev.run.wait(t, 60*time.Second); code != 0 && code != 128+int(syscall.SIGTERM) && code != 143 {
						t.Errorf("the %s holder exited with %d", prev.lang, code)
					}
				}
				waitMinting(t, h)
				holders = append(holders, h)
			}
			last := holders[len(holders)-1]
			if err := os.WriteFile(filepath.Join(last.dir, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			last.run.wait(t, 60*time.Second)
			if dups, early := checkIDs(t, node, holders); dups != 0 || early != 0 {
				t.Errorf("%d IDs minted twice across the takeovers; %d holders stamped before the previous one's last stamp", dups, early)
			}
		})
	}
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		s := newFenceSetup(t)
		args := func(command ...string) []string {
			a := append([]string{"--dsn", s.dsn, "--create", "--range", "40-40", "--ttl", fenceTTL}, exports["5+5"]...)
			return append(append(a, "--"), command...)
		}
		h1 := &genHolder{lang: "python", dir: t.TempDir()}
		h1.run = startHolder(t, s.clock, args(genCommand(t, "python", "5+5", h1.dir)...)...)
		waitMinting(t, h1)
		if err := os.WriteFile(filepath.Join(h1.dir, "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		h1.run.wait(t, 60*time.Second)
		ids := readGenIDs(t, h1.dir)
		first := stampOf(slices.Min(ids))
		// The second holder's generator reads this clock, set back to 8 s
		// before the first holder's first stamp; nodeid run itself reads
		// the true one. The generator reads the offset when it starts,
		// which a loaded machine delays by seconds: its clock must still be
		// before the first holder's stamps then, and run through them.
		back := filepath.Join(t.TempDir(), "clock-back")
		if err := os.WriteFile(back, []byte(strconv.FormatInt(first-8000-time.Now().UnixMilli(), 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h2 := &genHolder{lang: "node (clock set back)", dir: t.TempDir()}
		command := append([]string{"env", EnvTestClockFile + "=" + back}, genCommand(t, "node", "5+5", h2.dir)...)
		h2.run = startHolder(t, s.clock, args(command...)...)
		testkit.Until(t, 60*time.Second, "the second generator stamping into the first's milliseconds", testkit.True(func() bool {
			if h2.run.exited() {
				t.Fatalf("the second nodeid run exited; stderr: %s", h2.run.stderr.String())
			}
			ids := readGenIDs(t, h2.dir)
			return len(ids) > 0 && stampOf(slices.Max(ids)) >= first+200
		}))
		if err := os.WriteFile(filepath.Join(h2.dir, "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		h2.run.wait(t, 60*time.Second)
		dups, _ := checkIDs(t, node, []*genHolder{h1, h2})
		t.Logf("the checker found %d duplicates in the broken variant", dups)
		if dups == 0 {
			t.Error("the checker found no duplicate where the second generator stamped from a clock set back over the first's stamps")
		}
	})
}

// parseExports parses --export arguments.
func parseExports(t *testing.T, args ...string) *exportFlags {
	t.Helper()
	f := &exportFlags{}
	for _, a := range args {
		if err := f.Set(a); err != nil {
			t.Fatalf("--export %s: %v", a, err)
		}
	}
	return f
}

// TestExportEpochNumberRefusedWhateverElseIsExported: an export whose
// value is a number of {epoch} alone is refused over a range of more than
// one node ID, as docs/export.md says, whatever else is exported: on a new
// table every node ID's first claim has epoch 1, so every process gets
// WORKER_ID=1. Before, it was refused only when every export used the
// epoch: a constant (REGION=eu) or a label beside it had it accepted.
func TestExportEpochNumberRefusedWhateverElseIsExported(t *testing.T) {
	t.Parallel()
	r := cli.NodeRange{Lo: 0, Hi: 1023}
	if err := parseExports(t, "WORKER_ID={epoch%32}").distinct(r, "the range 0-1023", false); err == nil {
		t.Fatalf("WORKER_ID={epoch%%32} alone accepted; the test's premise is wrong")
	}
	for _, extra := range []string{"REGION=eu", "POD=pod-{node}", "INSTANCE={node}"} {
		err := parseExports(t, "WORKER_ID={epoch%32}", extra).distinct(r, "the range 0-1023", false)
		if err == nil {
			t.Errorf("--export WORKER_ID={epoch%%32} --export %s over 0-1023: accepted; want it refused as WORKER_ID={epoch%%32} alone is (an export of {epoch} alone identifies nothing)", extra)
		} else if !strings.Contains(err.Error(), "WORKER_ID={epoch%32} is a number of {epoch} alone") {
			t.Errorf("--export WORKER_ID={epoch%%32} --export %s: %v; want the error to name the export and why", extra, err)
		}
	}
}

// TestExportNumberWithTextReadersSkip: text that number readers skip or
// take as a sign or a base leaves an export a number, checked as one:
// " 8" and "8 " are 8 to Python's int, JavaScript's Number, C's strtol
// (leading) and Spring's binder (which trims all whitespace); "+8" is 8 to
// Integer.parseInt, int, Atoi, Number and strtol; "0x8" is 8 to strtol
// with base 0, Long.decode, int(v, 0), Number and Spring's NumberUtils.
// Each gives nodes 0 and 32 one worker ID. Before, an export with any text
// but digits was taken for a label and not checked at all.
func TestExportNumberWithTextReadersSkip(t *testing.T) {
	t.Parallel()
	r := cli.NodeRange{Lo: 0, Hi: 1023}
	for _, tmpl := range []string{" {node%32}", "{node%32} ", "{node%32}\n", "+{node%32}", "0x{node%32}", "#{node%32}"} {
		err := parseExports(t, "WORKER_ID="+tmpl).distinct(r, "the range 0-1023", false)
		if err == nil {
			t.Errorf("--export WORKER_ID=%q over 0-1023: accepted; nodes 0 and 32 get values %q and %q, which those readers read as one worker ID",
				tmpl, parseExports(t, "W="+tmpl).list[0].value(0, 1), parseExports(t, "W="+tmpl).list[0].value(32, 1))
		} else if !strings.Contains(err.Error(), "node IDs 0 and 32") {
			t.Errorf("--export WORKER_ID=%q: %v", tmpl, err)
		}
	}
	// Other text still makes a label, judged by its digits
	// (TestExportLabelDigitsTellNodeIDsApart): refused over 0-1023, where
	// they repeat, and accepted over 0-31, where 0x{node%32}- would be 0
	// for every node ID to C's atoi if it were a number.
	for _, tmpl := range []string{"pod-{node%32}", "0x{node%32}-", "x{node%32}", "+ {node%32}", "0x {node%32}"} {
		err := parseExports(t, "LABEL="+tmpl).distinct(r, "the range 0-1023", false)
		if err == nil || !strings.Contains(err.Error(), "LABEL="+tmpl+" is a label, but a program may take its worker ID from the digits in it") {
			t.Errorf("--export LABEL=%q over 0-1023: %v; want it taken for a label, and refused for its digits", tmpl, err)
		}
		if err := parseExports(t, "LABEL="+tmpl).distinct(cli.NodeRange{Lo: 0, Hi: 31}, "the range 0-31", false); err != nil {
			t.Errorf("--export LABEL=%q over 0-31: %v; want it taken for a label", tmpl, err)
		}
	}
}

// TestExportUnrelatedNumberDoesNotMaskAWorkerID: an identifying export
// that tells the node IDs apart on its own (an instance number for logs
// and metrics) is judged alone, and does not make a colliding worker ID
// beside it acceptable: a generator that reads WORKER_ID={node%32} gets
// worker ID 0 on node IDs 0, 32, 64, ... whatever INSTANCE={node} says.
// Before, every number counted towards one joint key, and the pair was
// accepted. docs/export.md names exactly this export as the bug the check
// is for.
func TestExportUnrelatedNumberDoesNotMaskAWorkerID(t *testing.T) {
	t.Parallel()
	r := cli.NodeRange{Lo: 0, Hi: 1023}
	err := parseExports(t, "WORKER_ID={node%32}", "INSTANCE={node}").distinct(r, "the range 0-1023", false)
	if err == nil {
		t.Errorf("--export WORKER_ID={node%%32} --export INSTANCE={node} over 0-1023: accepted; a generator that reads WORKER_ID gets worker ID 0 on node IDs 0, 32, 64, ...")
	} else if !strings.Contains(err.Error(), "node IDs 0 and 32 of the range 0-1023 both get WORKER_ID=0") {
		t.Errorf("--export WORKER_ID={node%%32} --export INSTANCE={node}: %v; want the error to name the export and two node IDs that share its value", err)
	}
	// Exports that tell them apart together still do, beside it.
	if err := parseExports(t, "DATACENTER_ID={node/32}", "WORKER_ID={node%32}", "INSTANCE={node}").distinct(r, "the range 0-1023", false); err != nil {
		t.Errorf("DATACENTER_ID={node/32} WORKER_ID={node%%32} INSTANCE={node}: %v", err)
	}
	// --partition, for a table split between generators, judges the
	// exports over --range alone.
	if err := parseExports(t, "WORKER_ID={node%32}", "INSTANCE={node}").distinct(cli.NodeRange{Lo: 32, Hi: 63}, "the range 32-63", true); err != nil {
		t.Errorf("WORKER_ID={node%%32} INSTANCE={node} over 32-63 with --partition: %v", err)
	}
}

// TestExportTwitterPairWithinOneDatacenterBlock: the 5+5-bit recipe of the
// help and docs/export.md (hutool, MyBatis-Plus, flake-idgen,
// @sapphire/snowflake) over a table or --partition range that lies inside
// one block of 32 node IDs. WORKER_ID={node%32} then tells every node ID
// apart on its own, so rule 3 sets it aside, and DATACENTER_ID, which is
// constant over the range, was judged alone and refused; yet the pair a
// generator reads is (0..31, constant): distinct under every reader, and
// DATACENTER_ID=0, the same value as plain text, is accepted. What is left
// once the exports that tell the node IDs apart on their own are set aside
// is judged only if it varies over the range.
func TestExportTwitterPairWithinOneDatacenterBlock(t *testing.T) {
	for _, c := range []struct {
		r    cli.NodeRange
		args []string
	}{
		{cli.NodeRange{Lo: 0, Hi: 31}, []string{"DATACENTER_ID={node/32%32}", "WORKER_ID={node%32}"}},
		{cli.NodeRange{Lo: 0, Hi: 31}, []string{"SEQUENCE_WORKERID={node%32}", "SEQUENCE_DATACENTERID={node/32%32}"}},
		{cli.NodeRange{Lo: 32, Hi: 63}, []string{"FLAKE_DATACENTER={node/32%32}", "FLAKE_WORKER={node%32}"}},
		{cli.NodeRange{Lo: 0, Hi: 15}, []string{"SNOWFLAKE_WORKER_ID={node/32%32}", "SNOWFLAKE_PROCESS_ID={node%32}"}},
	} {
		if err := parseExports(t, c.args...).distinct(c.r, "the range "+c.r.String(), true); err != nil {
			t.Errorf("%v over %s: refused, though the pair is distinct for every reader: %v", c.args, c.r, err)
		}
	}
}

// TestExportHexValueReadByLeadingDigits: a value with 0x or # is read in
// hexadecimal by some readers (strtol with base 0, Long.decode, Number)
// and by its leading decimal digits by others (C's atoi and strtol with
// base 10, JavaScript's parseInt(v, 10)), which stop at the x or the #:
// 0x5 is 0 to them, and #5 is 0 (NaN to parseInt). WORKER_ID=0x{node}
// gives every node ID worker ID 0 there, and is refused as
// WORKER_ID=0{node%1} would be. Before, only the hexadecimal reading was
// checked, and it was accepted.
func TestExportHexValueReadByLeadingDigits(t *testing.T) {
	t.Parallel()
	r := cli.NodeRange{Lo: 0, Hi: 1023}
	const rule = "where the reading takes the leading decimal digits and stops at the first other character"
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"WORKER_ID=0x{node}"}, "--export WORKER_ID=0x{node}: node IDs 0 and 1 of the range 0-1023 get WORKER_ID=0x0 and WORKER_ID=0x1, which read as the same number (WORKER_ID=0) " + rule},
		{[]string{"WORKER_ID=#{node}"}, "node IDs 0 and 1 of the range 0-1023 get WORKER_ID=#0 and WORKER_ID=#1, which read as the same number (WORKER_ID=0) " + rule},
		{[]string{"WORKER_ID=0XfF{node}"}, "get WORKER_ID=0XfF0 and WORKER_ID=0XfF1, which read as the same number (WORKER_ID=0) " + rule},
		{[]string{"WORKER_ID= -0x{node}"}, `get WORKER_ID=" -0x0" and WORKER_ID=" -0x1", which read as the same number (WORKER_ID=0) ` + rule},
		{[]string{"WORKER_ID=+#{node}"}, "get WORKER_ID=+#0 and WORKER_ID=+#1, which read as the same number (WORKER_ID=0) " + rule},
		// A datacenter ID in hexadecimal is 0 to those readers, and the
		// worker ID beside it repeats every 32 node IDs.
		{[]string{"WORKER_ID={node%32}", "DATACENTER_ID=0x{node/32%32}"}, "node IDs 0 and 32 of the range 0-1023 get WORKER_ID=0 DATACENTER_ID=0x0 and WORKER_ID=0 DATACENTER_ID=0x1, which read as the same numbers (WORKER_ID=0 DATACENTER_ID=0) " + rule},
		// In hexadecimal it tells the node IDs apart on its own, so it is
		// judged alone, whatever is beside it.
		{[]string{"WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}", "INSTANCE=0x{node}"}, "node IDs 0 and 1 of the range 0-1023 get INSTANCE=0x0 and INSTANCE=0x1, which read as the same number (INSTANCE=0) " + rule},
	} {
		err := parseExports(t, c.args...).distinct(r, "the range 0-1023", false)
		if err == nil {
			t.Errorf("%v over 0-1023: accepted; C's atoi and JavaScript's parseInt(v, 10) read one worker ID for every node ID", c.args)
		} else if !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v over 0-1023: %v\nwant an error saying %q", c.args, err, c.says)
		}
	}
	// A label is still a label.
	if err := parseExports(t, "WORKER_ID={node}", "TRACE=pod-0x{node}").distinct(r, "the range 0-1023", false); err != nil {
		t.Errorf("WORKER_ID={node} TRACE=pod-0x{node} over 0-1023: %v", err)
	}
	if err := parseExports(t, "WORKER_ID=0x{node}").distinct(cli.NodeRange{Lo: 5, Hi: 5}, "the range 5-5", false); err != nil {
		t.Errorf("WORKER_ID=0x{node} over the one node ID 5: %v", err)
	}
}

// TestExportNumberBesideHidesNoOtherReading: an export that tells the node
// IDs apart on its own as most readers read it is judged alone under every
// reading, whatever is exported beside it. WORKER_ID={node/10}{node%10}
// writes 00 and 08 for node IDs 0 and 8, both 0 to C's strtol with base 0,
// and is refused alone; beside PORT=80{node%10} (800 and 808) it was
// judged together with it, the pair told the node IDs apart under every
// reading, and it was accepted, though a generator that reads WORKER_ID so
// gets worker ID 0 on node IDs 0, 8 and 9 whatever PORT says.
func TestExportNumberBesideHidesNoOtherReading(t *testing.T) {
	t.Parallel()
	r := cli.NodeRange{Lo: 0, Hi: 1023}
	const says = "node IDs 0 and 8 of the range 0-1023 get WORKER_ID=00 and WORKER_ID=08, which read as the same number (WORKER_ID=0) where a leading 0 means octal and the reading stops at an 8 or 9"
	for _, beside := range [][]string{nil, {"PORT=80{node%10}"}, {"PORT=80{node%10}", "POD=pod-{node}"}, {"SHARD={node%10}"}} {
		args := append([]string{"WORKER_ID={node/10}{node%10}"}, beside...)
		err := parseExports(t, args...).distinct(r, "the range 0-1023", false)
		if err == nil {
			t.Errorf("%v over 0-1023: accepted; C's strtol with base 0 reads WORKER_ID=00 and WORKER_ID=08 as worker ID 0", args)
		} else if !strings.Contains(err.Error(), says) {
			t.Errorf("%v over 0-1023: %v\nwant an error saying %q", args, err, says)
		}
	}
	// Exports that tell the node IDs apart only together are still judged
	// together, beside it or not.
	for _, args := range [][]string{
		{"WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}", "PORT=80{node%10}"},
		{"WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}", "INSTANCE={node}"},
	} {
		if err := parseExports(t, args...).distinct(r, "the range 0-1023", false); err != nil {
			t.Errorf("%v over 0-1023: %v", args, err)
		}
	}
}

// TestExportLabelDigitsTellNodeIDsApart: a label of {node} (text around
// the number, as HOSTNAME=web-{node%32}) is judged on its own by the
// digits a program may take from it: a StatefulSet-style ordinal
// (int(name.rsplit('-', 1)[1]), ${HOSTNAME##*-}), a regular expression's
// run of digits, or all of them together. Each run of digits that varies
// over the range, and all the digits together, must tell the node IDs
// apart, whatever is exported beside it; a run that is the same for every
// node ID (k8s, v2, us-east-1) is the label's own text. Before, a label
// was not judged at all: HOSTNAME=web-{node%32} over 0-1023 was accepted
// alone, beside WORKER_ID={node}, and beside a worker and a datacenter ID,
// though a program that derives its worker ID from the hostname's ordinal
// gets one on node IDs 0, 32, 64, ...
func TestExportLabelDigitsTellNodeIDsApart(t *testing.T) {
	t.Parallel()
	all := cli.NodeRange{Lo: 0, Hi: 1023}
	const web0 = "node IDs 0 and 32 of the range 0-1023 both get HOSTNAME=web-0, whose digits read as the same number (0): HOSTNAME=web-{node%32} is a label"
	for _, c := range []struct {
		args []string
		r    cli.NodeRange
		says string // "" if accepted
	}{
		// The label alone, beside a number that tells the node IDs apart
		// on its own, and beside numbers that do it together.
		{[]string{"HOSTNAME=web-{node%32}"}, all, web0},
		{[]string{"HOSTNAME=web-{node%32}", "WORKER_ID={node}"}, all, web0},
		{[]string{"HOSTNAME=web-{node%32}", "WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}"}, all, web0},
		{[]string{"HOSTNAME=web-{node%32}", "INSTANCE={node}", "WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}"}, all, web0},
		{[]string{"HOSTNAME=web-{node%32}", "WORKER_ID={node%32}"}, all, web0},
		// Every run of digits that varies is judged, the last first.
		{[]string{"ID=w{node%32}-d{node/32%32}", "WORKER_ID={node}"}, all,
			"node IDs 0 and 1 of the range 0-1023 get ID=w0-d0 and ID=w1-d0, whose last digits read as the same number (0)"},
		{[]string{"ID=w{node/32%32}-d{node}", "WORKER_ID={node}"}, all,
			"node IDs 0 and 1 of the range 0-1023 get ID=w0-d0 and ID=w0-d1, whose first digits read as the same number (0)"},
		{[]string{"POD=pod-{node}-{node%32}", "WORKER_ID={node}"}, all,
			"node IDs 0 and 32 of the range 0-1023 get POD=pod-0-0 and POD=pod-32-0, whose last digits read as the same number (0)"},
		{[]string{"HOST=v2-{node%32}-x1", "WORKER_ID={node}"}, all,
			"node IDs 0 and 32 of the range 0-1023 both get HOST=v2-0-x1, whose digits of run 2 of 3 read as the same number (0)"},
		// Each run tells node IDs 500-520 apart (0 to 20; 52 to 63, then 0
		// to 8), but not the digits together, as re.sub(r"\D", "", v) reads
		// them: 1-53 and 15-3 are both 153.
		{[]string{"ID={node%100}-{node%64}"}, cli.NodeRange{Lo: 500, Hi: 520},
			"node IDs 501 and 515 of the range 500-520 get ID=1-53 and ID=15-3, whose digits together read as the same number (153)"},
		// The last run is node/32, and C's atoi reads the first: 8 from
		// 8-1 (node 40), as from 8-0 (node 8).
		{[]string{"ID={node%32}-{node/32}"}, all, "node IDs 0 and 1 of the range 0-1023 get ID=0-0 and ID=1-0, whose last digits read as the same number (0)"},
		// A run is read as numbers are: 00 and 08 are 0 to C's strtol
		// with base 0, 010 and 08 are 8 where a leading 0 means octal.
		{[]string{"HOSTNAME=web-{node/10}{node%10}", "WORKER_ID={node}"}, all,
			"node IDs 0 and 8 of the range 0-1023 get HOSTNAME=web-00 and HOSTNAME=web-08, whose digits read as the same number (0) where a leading 0 means octal and the reading stops at an 8 or 9"},
		{[]string{"HOSTNAME=web-0{node}", "WORKER_ID={node}"}, all,
			"node IDs 8 and 10 of the range 0-1023 get HOSTNAME=web-08 and HOSTNAME=web-010, whose digits read as the same number (8) where a leading 0 means octal"},
		// The epoch changes with every claim: digits that mix it with the
		// node ID's tell nothing apart for sure.
		{[]string{"HOSTNAME=web-{node}-{epoch}", "WORKER_ID={node}"}, all, "HOSTNAME=web-{node}-{epoch} reads both {node} and {epoch}"},
		{[]string{"W={node}{epoch}", "INSTANCE={node}"}, all, "W={node}{epoch} reads both {node} and {epoch}"},
		// Labels whose digits tell the node IDs apart, or are the label's
		// own text, pass.
		{[]string{"POD=pod-{node}"}, all, ""},
		{[]string{"HOSTNAME=web-{node}", "WORKER_ID={node%32}", "DATACENTER_ID={node/32%32}"}, all, ""},
		{[]string{"POD=k8s-{node}", "A=us-east-1-web-{node}", "B=pod-{node}-v2", "C=api-v0-{node}", "D={node}-pod", "E=pod-0x{node}", "F=db01-{node}"}, all, ""},
		{[]string{"HOSTNAME=web-{node%32}", "WORKER_ID={node%32}"}, cli.NodeRange{Lo: 0, Hi: 31}, ""},
		{[]string{"ZONE=zone-{node/32}", "WORKER_ID={node%32}"}, cli.NodeRange{Lo: 32, Hi: 63}, ""},
		{[]string{"GEN=g{epoch}", "WORKER_ID={node}"}, all, ""},
		{[]string{"HOSTNAME=web-{node}-{epoch}"}, cli.NodeRange{Lo: 7, Hi: 7}, ""},
	} {
		err := parseExports(t, c.args...).distinct(c.r, "the range "+c.r.String(), false)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%v over %s: %v", c.args, c.r, err)
		case c.says != "" && err == nil:
			t.Errorf("%v over %s: accepted; want an error saying %q", c.args, c.r, c.says)
		case c.says != "" && !strings.Contains(err.Error(), c.says):
			t.Errorf("%v over %s: %v\nwant an error saying %q", c.args, c.r, err, c.says)
		}
	}
}

// TestExportDocsExamples: the exports docs/export.md shows are judged as
// it says. Each recipe of its table passes over the table's range, 0-1023
// (or the recipe's --range), and so does each command marked "# accepted"
// (with --partition, over its --range); each refusal it quotes ("nodeid:
// --export ...: ..., ...") is what run says over 0-1023 of
// snowflake_nodes, up to the "...".
func TestExportDocsExamples(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(clitest.RepoRoot, "docs", "export.md"))
	if err != nil {
		t.Fatal(err)
	}
	exportArg := regexp.MustCompile(`--export '([^']*)'`)
	rangeArg := regexp.MustCompile(`--range (\d+)-(\d+)`)
	const over = "the range 0-1023 of table snowflake_nodes"
	recipes, accepted, refusals := 0, 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		var args []string
		for _, m := range exportArg.FindAllStringSubmatch(line, -1) {
			args = append(args, m[1])
		}
		r, partition := cli.DefaultRange, strings.Contains(line, "--partition")
		if m := rangeArg.FindStringSubmatch(line); m != nil {
			lo, _ := strconv.ParseInt(m[1], 10, 64)
			hi, _ := strconv.ParseInt(m[2], 10, 64)
			r = cli.NodeRange{Lo: lo, Hi: hi}
		}
		switch {
		case strings.HasPrefix(line, "| ") && len(args) > 0:
			recipes++
			if err := parseExports(t, args...).distinct(r, "the range "+r.String(), false); err != nil {
				t.Errorf("the recipe %q over %s: %v", args, r, err)
			}
		case strings.HasSuffix(line, "# accepted"):
			accepted++
			judged := cli.DefaultRange
			if partition {
				judged = r
			}
			if err := parseExports(t, args...).distinct(judged, "the range "+judged.String(), partition); err != nil {
				t.Errorf("%s\n%v", line, err)
			}
		case strings.HasPrefix(line, "nodeid: --export "):
			refusals++
			want, ok := strings.CutSuffix(strings.TrimPrefix(line, "nodeid: "), ", ...")
			list, _, _ := strings.Cut(strings.TrimPrefix(want, "--export "), ": ")
			err := parseExports(t, strings.Split(list, ",")...).distinct(cli.DefaultRange, over, false)
			if !ok || err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("docs/export.md says:\n%s\nrun says:\n%v", line, err)
			}
		}
	}
	if recipes < 5 || accepted < 3 || refusals < 4 {
		t.Errorf("%d recipes, %d accepted commands, %d refusals found in docs/export.md: the test no longer reads it", recipes, accepted, refusals)
	}
}
