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
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--max-ttl", "10s"), cli.ExitUsage, "never lowered", "1m0s")
	// Wider than the default layout: a warning.
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--range", "0-2047"), cli.ExitOK, "do not fit the default Snowflake layout", "WithNodeBits")
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
	for _, tc := range []struct{ age, out, left string }{
		{"30d", "deleted 2 history rows (claims that ended more than 30d ago)\n", "open,recent"},
		{"30d", "deleted no history rows: no claim ended more than 30d ago\n", "open,recent"},
		{"12h", "deleted 1 history row (a claim that ended more than 12h ago)\n", "open"},
	} {
		if out := harness.Must(t, "prune", "--dsn", dsn, "--older-than", tc.age); out != tc.out {
			t.Errorf("prune --older-than %s: %q, want %q", tc.age, out, tc.out)
		}
		if got := owners(); got != tc.left {
			t.Errorf("history after prune --older-than %s: %s; want %s kept", tc.age, got, tc.left)
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
