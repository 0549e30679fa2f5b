//go:build linux

package run

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// claims counts the claims ever made on the table of db.
func claims(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT coalesce(sum(epoch), 0) FROM snowflake_nodes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExportDistinctOverTable: the exports that identify a generator must
// tell apart every node ID of the table's recorded range, not only of the
// process's --range: two deployments of one table with --range 0-31 and
// --range 32-63 and the same worker ID export would both hand out W=0. A
// label (text around {node}) identifies no generator and does not count.
// Refusals exit with 2 before any claim and name the two node IDs; a
// table split on purpose between unrelated generators passes with
// --partition.
func TestExportDistinctOverTable(t *testing.T) {
	t.Parallel()
	run := func(dsn string, args ...string) clitest.Result {
		t.Helper()
		args = append([]string{"run", "--dsn", dsn}, args...)
		return harness.Run(t, append(args, "--", "sh", "-c", `echo "$W"`)...)
	}
	t.Run("two deployments of one table", func(t *testing.T) {
		db, dsn := pgtest.NewDB(t)
		harness.Must(t, "init", "--dsn", dsn, "--nodes", "64")
		for _, rng := range []string{"0-31", "32-63"} {
			r := run(dsn, "--range", rng, "--export", "W={node%32}")
			clitest.WantExit(t, r, cli.ExitUsage, "--export W={node%32}", "node IDs 0 and 32 of the range 0-63 of table snowflake_nodes both get W=0", "--partition")
		}
		if n := claims(t, db); n != 0 {
			t.Errorf("%d claims: a refused run claimed a node ID", n)
		}
		for _, rng := range []string{"0-31", "32-63"} {
			if r := run(dsn, "--range", rng, "--partition", "--export", "W={node%32}"); r.Code != 0 || r.Stdout != "0\n" {
				t.Errorf("--range %s --partition: %+v, want exit 0 and W=0", rng, r)
			}
		}
	})
	t.Run("a label beside a worker ID", func(t *testing.T) {
		db, dsn := pgtest.NewDB(t)
		harness.Must(t, "init", "--dsn", dsn) // node IDs 0-1023
		for _, args := range [][]string{
			{"--export", "W={node%32}", "--export", "LABEL=pod-{node}"},
			{"--range", "0-31", "--export", "W={node%32}", "--export", "LABEL=pod-{node}"},
			{"--partition", "--nodes", "64", "--export", "W={node%32}", "--export", "LABEL=pod-{node}"},
		} {
			clitest.WantExit(t, run(dsn, args...), cli.ExitUsage, "node IDs 0 and 32 of the range 0-", "both get W=0", "LABEL=pod-{node} is a label")
		}
		if n := claims(t, db); n != 0 {
			t.Errorf("%d claims: a refused run claimed a node ID", n)
		}
		r := run(dsn, "--range", "0-31", "--partition", "--export", "W={node%32}", "--export", "LABEL=pod-{node}")
		if r.Code != 0 || r.Stdout != "0\n" {
			t.Errorf("--range 0-31 --partition: %+v, want exit 0 and W=0", r)
		}
	})
	t.Run("a worker and a datacenter ID", func(t *testing.T) {
		_, dsn := pgtest.NewDB(t)
		harness.Must(t, "init", "--dsn", dsn)
		for _, args := range [][]string{
			{"--export", "W={node%32}", "--export", "D={node/32%32}"},
			{"--range", "0-31", "--export", "W={node%32}", "--export", "D={node/32%32}"},
		} {
			if r := run(dsn, args...); r.Code != 0 || r.Stdout != "0\n" {
				t.Errorf("%q: %+v, want exit 0 and W=0", args, r)
			}
		}
	})
	t.Run("--partition needs a range and exports", func(t *testing.T) {
		_, dsn := pgtest.NewDB(t)
		harness.Must(t, "init", "--dsn", dsn)
		clitest.WantExit(t, run(dsn, "--partition", "--export", "W={node%32}"), cli.ExitUsage, "--partition", "--range")
		clitest.WantExit(t, run(dsn, "--partition", "--range", "0-31"), cli.ExitUsage, "--partition", "--export")
	})
}

// TestExportLabelDigitsOverTable: a label of {node} whose digits do not
// tell apart the node IDs of the table's range, as HOSTNAME=web-{node%32}
// on a table of 1,024 (a program that takes its worker ID from the
// hostname's ordinal gets one on node IDs 0, 32, 64, ...), exits with 2
// before any claim, alone or beside numbers that tell the node IDs apart;
// over a --partition range it tells apart, it passes. Before, it was
// accepted unless a number beside it was refused.
func TestExportLabelDigitsOverTable(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn) // node IDs 0-1023
	run := func(args ...string) clitest.Result {
		t.Helper()
		args = append([]string{"run", "--dsn", dsn}, args...)
		return harness.Run(t, append(args, "--", "sh", "-c", `echo "$HOSTNAME"`)...)
	}
	for _, args := range [][]string{
		{"--export", "HOSTNAME=web-{node%32}"},
		{"--export", "HOSTNAME=web-{node%32}", "--export", "WORKER_ID={node}"},
		{"--export", "HOSTNAME=web-{node%32}", "--export", "WORKER_ID={node%32}", "--export", "DATACENTER_ID={node/32%32}"},
		{"--range", "0-31", "--export", "HOSTNAME=web-{node%32}", "--export", "WORKER_ID={node}"},
	} {
		clitest.WantExit(t, run(args...), cli.ExitUsage, "--export HOSTNAME=web-{node%32}",
			"node IDs 0 and 32 of the range 0-1023 of table snowflake_nodes both get HOSTNAME=web-0, whose digits read as the same number (0)", "--partition")
	}
	if n := claims(t, db); n != 0 {
		t.Errorf("%d claims: a refused run claimed a node ID", n)
	}
	r := run("--range", "0-31", "--partition", "--export", "HOSTNAME=web-{node%32}", "--export", "WORKER_ID={node%32}")
	if r.Code != 0 || r.Stdout != "web-0\n" {
		t.Errorf("--range 0-31 --partition: %+v, want exit 0 and web-0", r)
	}
	r = run("--export", "HOSTNAME=web-{node}", "--export", "WORKER_ID={node%32}", "--export", "DATACENTER_ID={node/32%32}")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "web-") {
		t.Errorf("HOSTNAME=web-{node} beside a worker and a datacenter ID: %+v, want exit 0", r)
	}
}
