package table

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	clitest.Golden(t, "schema", harness.Must(t, "schema", "--table", "ids.nodes", "--range", "8-15"))
	if out := harness.Must(t, "schema"); !strings.Contains(out, "VALUES (0, 1023, 60000,") {
		t.Errorf("default schema does not record 0-1023 and a maximum TTL of 1m:\n%s", out)
	}
}

func TestInit(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	if out := harness.Must(t, "init", "--dsn", dsn, "--range", "10-13", "--max-ttl", "30s"); out != "table snowflake_nodes is ready (history snowflake_nodes_history, configuration snowflake_nodes_config): node IDs 10-13, 4 rows, maximum TTL 30s, replication async\n" {
		t.Errorf("init: %q", out)
	}
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET epoch = 9, owner = 'keep', expires_at = now() + interval '1h' WHERE node_id = 10`)
	// Again, without a range: the table keeps its own.
	if out := harness.Must(t, "init", "--dsn", dsn); !strings.HasSuffix(out, "node IDs 10-13, 4 rows, maximum TTL 30s, replication async\n") {
		t.Errorf("init without a range: %q", out)
	}
	// Again, wider: adds rows, touches none.
	if out := harness.Must(t, "init", "--dsn", dsn, "--nodes", "16", "--max-ttl", "1m"); !strings.HasSuffix(out, "node IDs 0-15, 16 rows, maximum TTL 1m0s, replication async\n") {
		t.Errorf("second init: %q", out)
	}
	var (
		n     int
		owner string
		epoch int64
	)
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*), max(owner), max(epoch) FROM snowflake_nodes`).Scan(&n, &owner, &epoch); err != nil {
		t.Fatal(err)
	}
	if n != 16 || owner != "keep" || epoch != 9 {
		t.Errorf("after two inits: %d rows, owner %q, epoch %d; want 16 rows and node 10 untouched", n, owner, epoch)
	}
	// Narrower: never narrowed, and said so; a lower maximum TTL refused.
	r := harness.Run(t, "init", "--dsn", dsn, "--nodes", "8")
	clitest.WantExit(t, r, cli.ExitOK, "keeps its range 0-15", "never narrowed")
	if !strings.HasSuffix(r.Stdout, "node IDs 0-15, 16 rows, maximum TTL 1m0s, replication async\n") {
		t.Errorf("narrower init: %q", r.Stdout)
	}
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--max-ttl", "10s"), cli.ExitConflict, "never lowered", "1m0s", "give 1m0s or more")
	harness.Must(t, "init", "--dsn", dsn, "--max-ttl", "1m0s") // the advice, followed
	// Wider than the layout's node field: refused, naming the value and
	// the rule; with the layout's node bits given, done without a word.
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--range", "0-2047"), cli.ExitUsage,
		"--range 0-2047: node IDs above 1023 do not fit the 10 node bits of the IDs' layout (--layout bwmarrin)", "--node-bits 11 or more holds 0-2047")
	if r := harness.Run(t, "init", "--dsn", dsn, "--range", "0-2047", "--node-bits", "11"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("init --range 0-2047 --node-bits 11: %+v", r)
	}
	// Kept as it is, with the default layout: a warning.
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn), cli.ExitOK, "holds node IDs 0-2047", "above 1023 do not fit the 10 node bits", "WithNodeBits")
	// A schema-qualified table needs its schema.
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--table", "nope.ids"), cli.ExitFailure, "schema", "nope")
}

func TestInitBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--range", "5-1"}, "above the last"},
		{[]string{"--range", "0-1048576"}, "out of range"},
		{[]string{"--range", "x"}, "FIRST-LAST"},
		{[]string{"--range", "1-x"}, "last node ID"},
		{[]string{"--nodes", "0"}, "--nodes 0"},
		{[]string{"--nodes", "1048577"}, "--nodes 1048577"},
		{[]string{"--nodes", "-4"}, "--nodes -4"},
		{[]string{"--nodes", "4", "--range", "0-3"}, "--nodes and --range both"},
		{[]string{"--table", "1abc"}, "digit"},
	} {
		for _, cmd := range []string{"init", "schema"} {
			clitest.WantExit(t, harness.Run(t, append([]string{cmd}, tc.args...)...), cli.ExitUsage, tc.want)
		}
	}
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"--range", "0-1048575"}, []string{"--range 0-1048575: node IDs above 1023 do not fit the 10 node bits", "--node-bits 20 or more"}},
		{[]string{"--nodes", "1025"}, []string{"--nodes 1025: node IDs above 1023", "--node-bits 11 or more holds 0-1024"}},
		{[]string{"--range", "0-255", "--layout", "js53", "--node-bits", "7"}, []string{"--range 0-255: node IDs above 127 do not fit the 7 node bits", "--layout js53, --node-bits 7"}},
		{[]string{"--node-bits", "0"}, []string{"--node-bits 0: it must be 1 to 20"}},
		{[]string{"--node-bits", "21"}, []string{"--node-bits 21: it must be 1 to 20"}},
		{[]string{"--layout", "sonyflake"}, []string{`--layout "sonyflake"`}},
	} {
		clitest.WantExit(t, harness.Run(t, append([]string{"init"}, tc.args...)...), cli.ExitUsage, tc.wants...)
	}
}

// TestInitConfirmsManyRows: creating or adding more than 65,536 rows asks
// first, and without a yes changes nothing, saying how many rows and how
// to go ahead (--yes).
func TestInitConfirmsManyRows(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	rows := func() (n int) {
		t.Helper()
		var exists bool
		if err := db.QueryRowContext(clitest.Ctx(t), `SELECT to_regclass('snowflake_nodes') IS NOT NULL`).Scan(&exists); err != nil || !exists {
			return -1
		}
		if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*) FROM snowflake_nodes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// refused checks that r failed, after the question, with the one line
	// of its error holding every one of wants.
	refused := func(r clitest.Result, question string, wants ...string) {
		t.Helper()
		q, msg, _ := strings.Cut(r.Stderr, "\n")
		if r.Code != cli.ExitFailure || q != question+" [y/N] " || strings.Count(msg, "\n") != 1 {
			t.Errorf("exit code %d, stderr %q; want code %d, the question %q and one line", r.Code, r.Stderr, cli.ExitFailure, question)
		}
		for _, w := range wants {
			if !strings.Contains(msg, w) {
				t.Errorf("stderr %q does not say %q", msg, w)
			}
		}
	}
	wide := []string{"init", "--dsn", dsn, "--range", "0-99999", "--node-bits", "17"}
	create := "Create table snowflake_nodes with node IDs 0-99999, 100,000 rows?"
	refused(harness.RunWith(t, "", nil, wide...), create,
		"nodeid: --range 0-99999 creates table snowflake_nodes with 100,000 rows, and more than 65,536 are created only when confirmed", "pass --yes")
	refused(harness.RunWith(t, "n\n", nil, wide...), create, "the answer was not yes; nothing changed")
	if n := rows(); n != -1 {
		t.Fatalf("the table exists (%d rows) after init was not confirmed", n)
	}

	harness.Must(t, "init", "--dsn", dsn, "--nodes", "4")
	refused(harness.RunWith(t, "", nil, wide...), "Widen the range of table snowflake_nodes from 0-3 to 0-99999, adding 99,996 rows?",
		"nodeid: --range 0-99999 adds 99,996 rows to table snowflake_nodes", "pass --yes")
	if n := rows(); n != 4 {
		t.Fatalf("%d rows after a widening that was not confirmed, want 4", n)
	}
	// 99,996 rows take seconds on a loaded machine: more than init's
	// default --timeout of 10s.
	if r := harness.Run(t, append(wide, "--yes", "--timeout", "2m")...); r.Code != 0 || !strings.Contains(r.Stdout, "node IDs 0-99999, 100000 rows") || r.Stderr != "" {
		t.Errorf("init --yes: %+v", r)
	}
	// Nothing more to add: no question. Its DDL reads the 100,000 rows
	// again, which took more than 10s beside other suites too.
	if r := harness.RunWith(t, "", nil, append(wide, "--timeout", "2m")...); r.Code != 0 || r.Stderr != "" {
		t.Errorf("init of the range the table has: %+v", r)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2")
	clitest.ExecSQL(t, db, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(0, 1, 'old', now() - interval '40 days', 0, now() - interval '31 days', 'released', 1, 1),
		(0, 2, 'old', now() - interval '31 days', 1, now() - interval '30 days 1 hour', 'expired', 2, 1),
		(0, 3, 'recent', now() - interval '2 days', 2, now() - interval '1 day', 'released', 3, 1),
		(1, 1, 'open', now() - interval '90 days', 0, NULL, NULL, NULL, 1)`)
	owners := func() string {
		t.Helper()
		var s string
		if err := db.QueryRowContext(clitest.Ctx(t), `SELECT string_agg(owner, ',' ORDER BY owner) FROM snowflake_nodes_history`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const all = "old,old,open,recent"
	// Counted, nothing deleted.
	if out := harness.Must(t, "prune", "--dsn", dsn, "--older-than", "30d", "--dry-run"); out != "would delete 2 history rows (claims that ended more than 30d ago); nothing deleted (--dry-run)\n" {
		t.Errorf("prune --dry-run: %q", out)
	}
	if got := owners(); got != all {
		t.Errorf("history after prune --dry-run: %s; want %s", got, all)
	}
	// Asked, no answer (stdin not a terminal, empty): nothing deleted.
	r := harness.Run(t, "prune", "--dsn", dsn, "--older-than", "1s")
	wantRefused(t, r, "Delete 3 history rows (claims that ended more than 1s ago) from snowflake_nodes_history?", "not pruned: no answer on stdin; pass --yes")
	if got := owners(); got != all {
		t.Errorf("history after prune without an answer: %s; want %s", got, all)
	}
	// Answered no: nothing deleted.
	r = harness.RunWith(t, "n\n", nil, "prune", "--dsn", dsn, "--older-than", "1s")
	wantRefused(t, r, "not pruned: the answer was not yes")
	if got := owners(); got != all {
		t.Errorf("history after prune answered no: %s; want %s", got, all)
	}
	// Answered yes.
	r = harness.RunWith(t, "y\n", nil, "prune", "--dsn", dsn, "--older-than", "30d")
	if r.Code != 0 || r.Stdout != "deleted 2 history rows (claims that ended more than 30d ago)\n" {
		t.Errorf("prune answered yes: %+v", r)
	}
	for _, tc := range []struct{ age, out, left string }{
		{"30d", "deleted no history rows: no claim ended more than 30d ago\n", "open,recent"},
		{"12h", "deleted 1 history row (a claim that ended more than 12h ago)\n", "open"},
	} {
		if out := harness.Must(t, "prune", "--dsn", dsn, "--older-than", tc.age, "--yes"); out != tc.out {
			t.Errorf("prune --older-than %s: %q, want %q", tc.age, out, tc.out)
		}
		if got := owners(); got != tc.left {
			t.Errorf("history after prune --older-than %s: %s; want %s kept", tc.age, got, tc.left)
		}
	}
	// Nothing to delete: nothing to ask.
	if out := harness.Must(t, "prune", "--dsn", dsn, "--older-than", "1s"); out != "deleted no history rows: no claim ended more than 1s ago\n" {
		t.Errorf("prune with nothing to delete: %q", out)
	}
}

// wantRefused checks that r exited 1, saying wants on stderr.
func wantRefused(t *testing.T, r clitest.Result, wants ...string) {
	t.Helper()
	if r.Code != cli.ExitFailure || r.Stdout != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", r.Code, r.Stdout)
	}
	for _, w := range wants {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, r.Stderr)
		}
	}
}

// TestPruneHelp: --older-than is required, so its help shows no default.
func TestPruneHelp(t *testing.T) {
	t.Parallel()
	out := harness.Must(t, "prune", "--help")
	if !strings.Contains(out, "ago (required)\n") || strings.Contains(out, "default 0s") {
		t.Errorf("prune --help:\n%s", out)
	}
}

func TestPruneBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "prune"), cli.ExitUsage, "--older-than is required")
	clitest.WantExit(t, harness.Run(t, "prune", "--older-than", "0s"), cli.ExitUsage, "must be positive")
	clitest.WantExit(t, harness.Run(t, "prune", "--older-than", "-3d"), cli.ExitUsage, "negative")
	clitest.WantExit(t, harness.Run(t, "prune", "--older-than", "a while"), cli.ExitUsage, "not a duration")
	clitest.WantExit(t, harness.Run(t, "prune", "--older-than", "1.5d"), cli.ExitUsage, "whole number")
}
