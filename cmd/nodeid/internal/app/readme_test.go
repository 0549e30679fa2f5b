package app

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// readmeExample is a command of the console blocks of clitest.DocsPage and
// what the page says it prints, stdout then stderr.
type readmeExample struct {
	args []string
	want string
}

// readmeExamples returns the examples of clitest.DocsPage whose command is
// one of cmds.
func readmeExamples(t *testing.T, cmds ...string) []readmeExample {
	t.Helper()
	b, err := os.ReadFile(clitest.DocsPage)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     []readmeExample
		cur     *readmeExample
		console bool
	)
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "```console":
			console = true
		case console && line == "```":
			flush()
			console = false
		case console && strings.HasPrefix(line, "$ "):
			flush()
			args := strings.Fields(strings.TrimPrefix(line, "$ "))
			if len(args) > 1 && args[0] == "nodeid" && contains(cmds, args[1]) {
				cur = &readmeExample{args: args[1:]}
			}
		case console && cur != nil:
			cur.want += line + "\n"
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDocsExamples: the examples of docs/commands.md of the commands whose
// output does not depend on the time of the run print what the page shows,
// on the history the page's examples come from.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn)
	// Node ID 0: ingest-1 released it, billing-7 holds it. The IDs of the
	// examples: one of ingest-1; one stamped 400 ms before billing-7's
	// claim; one of 2020, when nobody held node ID 0.
	clitest.ExecSQL(t, db, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(0, 1, 'ingest-1', '2026-11-30T12:32:46.122954Z', 0, '2026-11-30T12:32:47.626105Z', 'released', 1796041967325, 1),
		(0, 2, 'billing-7', '2026-11-30T12:32:48.829333Z', 1796041967325, NULL, NULL, NULL, 1)`)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'billing-7', epoch = 2, acquired_at = '2026-11-30T12:32:48.829333Z',
		expires_at = now() + interval '1 hour', horizon_ms = 1796042028828 WHERE node_id = 0`)
	_, empty := pgtest.NewDB(t) // prune's: no claim, whatever the date
	harness.Must(t, "init", "--dsn", empty)

	examples := readmeExamples(t, "decode", "who", "prune", "lst", "completion")
	if len(examples) < 9 {
		t.Fatalf("only %d examples found in %s", len(examples), clitest.DocsPage)
	}
	for _, ex := range examples {
		env := map[string]string{cli.EnvDatabaseURL: dsn}
		if ex.args[0] == "prune" {
			env[cli.EnvDatabaseURL] = empty
		}
		e, out, errb := clitest.Env("", env)
		e.Loc = time.UTC
		harness.Exec(e, ex.args)
		if got := out.String() + errb.String(); got != ex.want {
			t.Errorf("nodeid %s prints\n%s\n%s says\n%s", strings.Join(ex.args, " "), got, clitest.DocsPage, ex.want)
		}
	}
}

// TestDocsFieldNames: the field names and columns of show and list that
// docs/commands.md shows are those the binary prints ("timeline" was
// documented long after the binary printed "generation").
func TestDocsFieldNames(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2")
	clitest.ExecSQL(t, db, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(0, 1, 'w', now() - interval '1 hour', 0, now() - interval '30 minutes', 'released', 1796062480611, 1)`)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = '', epoch = 1, acquired_at = now() - interval '1 hour', expires_at = now() - interval '30 minutes', horizon_ms = 1796062480611 WHERE node_id = 0`)
	page, err := os.ReadFile(clitest.DocsPage)
	if err != nil {
		t.Fatal(err)
	}
	columns := regexp.MustCompile(`\S+(?: \S+)*`) // words one space apart
	// keys returns the first word of each line of a key-value block, up
	// to its blank line, and the columns of the header line after it.
	keys := func(s string) (kv, head []string) {
		block, rest, _ := strings.Cut(s, "\n\n")
		for _, line := range strings.Split(block, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				kv = append(kv, f[0])
			}
		}
		header, _, _ := strings.Cut(rest, "\n")
		return kv, columns.FindAllString(header, -1)
	}
	_, doc, ok := strings.Cut(string(page), "==> nodeid show 0: the history of node ID 0\n")
	if !ok {
		t.Fatalf("%s shows no output of nodeid show", clitest.DocsPage)
	}
	docKV, docHead := keys(doc)
	binKV, binHead := keys(harness.Must(t, "show", "0", "-o", "wide", "--dsn", dsn))
	if strings.Join(docKV, " ") != strings.Join(binKV, " ") || strings.Join(docHead, "|") != strings.Join(binHead, "|") {
		t.Errorf("%s shows show's fields %q and columns %q; the binary prints %q and %q", clitest.DocsPage, docKV, docHead, binKV, binHead)
	}
	listHead, _, _ := strings.Cut(harness.Must(t, "list", "--dsn", dsn), "\n")
	wideHead, _, _ := strings.Cut(harness.Must(t, "list", "-o", "wide", "--dsn", dsn), "\n")
	lists := regexp.MustCompile(`(?m)^NODE +STATE .*$`).FindAllString(string(page), -1)
	if len(lists) == 0 {
		t.Fatalf("%s shows no output of nodeid list", clitest.DocsPage)
	}
	for _, line := range lists {
		got, want := columns.FindAllString(line, -1), columns.FindAllString(listHead, -1)
		if len(got) > len(want) { // -o wide
			want = columns.FindAllString(wideHead, -1)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s shows list's columns %q; the binary prints %q", clitest.DocsPage, got, want)
		}
	}
}
