//go:build linux

package run

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// TestRunPermissionErrors: run as a role that lacks one grant at a time
// names the object PostgreSQL refused and the privilege the role lacks on
// it, and none of the grants it has; the command never starts.
func TestRunPermissionErrors(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	clitest.ExecSQL(t, db, "CREATE SCHEMA ids")
	harness.Must(t, "init", "--dsn", dsn, "--table", "ids.nodes", "--nodes", "4")
	role := fmt.Sprintf("nodeid_run_denied_%d", os.Getpid())
	clitest.ExecSQL(t, db, "CREATE ROLE "+role+" LOGIN PASSWORD '"+clitest.Secret+"'")
	t.Cleanup(func() {
		_, _ = db.ExecContext(clitest.Ctx(t), "DROP OWNED BY "+role)
		_ = pgtest.Shared(t).Exec(clitest.Ctx(t), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	grants, err := postgres.GrantSQL("ids.nodes", role)
	if err != nil {
		t.Fatal(err)
	}
	clitest.ExecSQL(t, db, grants)
	rdsn := clitest.WithUser(t, dsn, role, clitest.Secret)
	marker := t.TempDir() + "/ran"
	const claimFn, serverFn = "ids.nodes_claim(text, bigint, bigint, integer, integer, integer)", "ids.nodes_server()"
	for _, c := range []struct {
		revoke, grant string
		says          []string
	}{
		{"REVOKE EXECUTE ON FUNCTION " + claimFn + ", " + serverFn + " FROM ROLE", "GRANT EXECUTE ON FUNCTION " + claimFn + ", " + serverFn + " TO ROLE",
			[]string{"permission denied for function nodes_", `the role "ROLE" needs EXECUTE on function nodes_`, "nodeid init --grant ROLE"}},
		{"REVOKE USAGE ON SCHEMA ids FROM ROLE", "GRANT USAGE ON SCHEMA ids TO ROLE",
			[]string{"permission denied for schema ids", `the role "ROLE" needs USAGE on schema ids; ask the schema's owner`}},
	} {
		clitest.ExecSQL(t, db, strings.ReplaceAll(c.revoke, "ROLE", role))
		r := harness.Run(t, "run", "--dsn", rdsn, "--table", "ids.nodes", "--ttl", "3s", "--", "touch", marker)
		var says []string
		for _, s := range c.says {
			if !strings.Contains(s, "--grant ROLE") {
				s = strings.ReplaceAll(s, "ROLE", role)
			}
			says = append(says, s)
		}
		clitest.WantExit(t, r, cli.ExitFailure, says...)
		// The grants the role has are not listed: no other table, no
		// privilege it holds on the refused one.
		advice := r.Stderr[strings.Index(r.Stderr, "needs")+1:]
		for _, has := range []string{"SELECT and", "SELECT, ", "and UPDATE", "INSERT and"} {
			if strings.Contains(advice, has) {
				t.Errorf("after %s: the advice lists a grant the role has (%q): %s", c.revoke, has, r.Stderr)
			}
		}
		if strings.Contains(r.Stderr, clitest.Secret) {
			t.Errorf("the password was printed: %s", r.Stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("after %s: the command ran without a lease", c.revoke)
		}
		clitest.ExecSQL(t, db, strings.ReplaceAll(c.grant, "ROLE", role))
	}
	if r := harness.Run(t, "run", "--dsn", rdsn, "--table", "ids.nodes", "--ttl", "3s", "--", "touch", marker); r.Code != 0 {
		t.Errorf("with every grant back: %+v", r)
	}
}
