package demo

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var ok bool
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestDemoWithDSN: given a database, the demo runs in a scratch table,
// drops it at the end, and leaves the other tables alone. Its workers are
// processes of their own (this test binary, as the command).
func TestDemoWithDSN(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "8")
	r := harness.Run(t, "demo", "--dsn", dsn)
	if r.Code != 0 {
		t.Fatalf("demo: exit code %d, stderr %s", r.Code, r.Stderr)
	}
	clitest.CheckDemoOutput(t, r.Stdout)
	if !strings.Contains(r.Stdout, "Dropped the scratch tables nodeid_demo, nodeid_demo_history and nodeid_demo_config.") {
		t.Errorf("the demo does not say it dropped its tables:\n%s", r.Stdout)
	}
	for _, name := range []string{"nodeid_demo", "nodeid_demo_history", "nodeid_demo_config"} {
		if tableExists(t, db, name) {
			t.Errorf("the demo left its table %s", name)
		}
	}
	if !tableExists(t, db, "snowflake_nodes") || !tableExists(t, db, "snowflake_nodes_history") {
		t.Error("the demo dropped tables it did not create")
	}
}

// TestDemoFailover: the failover demo runs its story to the end on a
// throwaway primary and standby: the lost claim's holder learns of it, the
// node ID is quarantined, then claimed on the new timeline.
func TestDemoFailover(t *testing.T) {
	t.Parallel()
	pgtest.SkipShort(t) // the demo starts a primary and a standby
	r := harness.Run(t, "demo", "--failover")
	if r.Code != 0 {
		t.Fatalf("demo --failover: exit code %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"a claim the standby never received",
		"on timeline 2",
		"quarantined",
		"lost: claim lost in a database failover",
		"times 2^32, plus 2: above any epoch the old primary could have granted)",
		"stamped after the quarantine",
		"Done in",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the failover demo does not say %q:\n%s", want, r.Stdout)
		}
	}
	clitest.WantExit(t, harness.Run(t, "demo", "--failover", "--dsn", "postgres://localhost/x"), cli.ExitUsage, "does not take a database")
}

// TestDemoRefusesExistingTable: the demo never works in, nor drops, a
// table it did not create.
func TestDemoRefusesExistingTable(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--table", "mine", "--nodes", "3")
	r := harness.RunWith(t, "", map[string]string{cli.EnvDatabaseURL: dsn}, "demo", "--table", "mine")
	clitest.WantExit(t, r, cli.ExitUsage, "table mine already exists")
	if !tableExists(t, db, "mine") || !tableExists(t, db, "mine_history") {
		t.Error("the demo dropped a table it did not create")
	}
}

// TestDemoDuration: the help and docs/commands.md say the same of how long
// each demo takes.
func TestDemoDuration(t *testing.T) {
	t.Parallel()
	help := strings.Join(strings.Fields(harness.Must(t, "demo", "--help")), " ")
	readme, err := os.ReadFile(clitest.DocsPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ help, readme string }{
		{"Run the whole story in " + demoTakes + ".", "It takes " + demoTakes + "."},
		{"keep their leases. It takes " + demoFailoverTakes + ".", "keep their leases. It takes " + demoFailoverTakes + "."},
	} {
		if !strings.Contains(help, d.help) {
			t.Errorf("demo --help does not say %q:\n%s", d.help, help)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), d.readme) {
			t.Errorf("%s does not say %q", clitest.DocsPage, d.readme)
		}
	}
}

// TestDemoFailoverWithDatabaseURL: an exported DATABASE_URL, which the
// nodeid command's help tells users to set, does not stop "demo --failover"
// (which uses servers of its own); --dsn does.
func TestDemoFailoverWithDatabaseURL(t *testing.T) {
	t.Parallel()
	ran := false
	stub := clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
		return []*cobra.Command{NewCmdDemo(env, func(context.Context, *Options) error { ran = true; return nil })}
	}}
	if r := stub.RunWith(t, "", map[string]string{cli.EnvDatabaseURL: "postgres://app@db/app"}, "demo", "--failover"); r.Code != 0 || !ran {
		t.Errorf("demo --failover with DATABASE_URL set: exit %d, ran %v: %s", r.Code, ran, r.Stderr)
	}
	ran = false
	clitest.WantExit(t, stub.Run(t, "demo", "--failover", "--dsn", "postgres://app@db/app"), cli.ExitUsage, "does not take a database (--dsn is set)")
	if ran {
		t.Error("demo --failover ran with --dsn")
	}
}
