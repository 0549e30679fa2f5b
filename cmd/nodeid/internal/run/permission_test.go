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
	clitest.ExecSQL(t, db, strings.ReplaceAll("GRANT USAGE ON SCHEMA ids TO ROLE; GRANT SELECT, UPDATE ON ids.nodes, ids.nodes_config TO ROLE; GRANT SELECT, INSERT, UPDATE ON ids.nodes_history TO ROLE", "ROLE", role))
	rdsn := clitest.WithUser(t, dsn, role, clitest.Secret)
	marker := t.TempDir() + "/ran"
	for _, c := range []struct {
		revoke, grant string
		says          []string
	}{
		{"REVOKE INSERT ON ids.nodes_history FROM ROLE", "GRANT INSERT ON ids.nodes_history TO ROLE",
			[]string{"claim on table ids.nodes: permission denied for table nodes_history", `the role "ROLE" needs INSERT on table ids.nodes_history; ask the table's owner to GRANT it`}},
		{"REVOKE UPDATE ON ids.nodes_config FROM ROLE", "GRANT UPDATE ON ids.nodes_config TO ROLE",
			[]string{"permission denied for table nodes_config", `the role "ROLE" needs UPDATE on table ids.nodes_config;`}},
		{"REVOKE SELECT ON ids.nodes_config FROM ROLE", "GRANT SELECT ON ids.nodes_config TO ROLE",
			[]string{"read configuration on table ids.nodes: permission denied for table nodes_config", `the role "ROLE" needs SELECT on table ids.nodes_config;`}},
		{"REVOKE UPDATE ON ids.nodes FROM ROLE", "GRANT UPDATE ON ids.nodes TO ROLE",
			[]string{"permission denied for table nodes:", `the role "ROLE" needs UPDATE on table ids.nodes;`}},
		{"REVOKE USAGE ON SCHEMA ids FROM ROLE", "GRANT USAGE ON SCHEMA ids TO ROLE",
			[]string{"permission denied for schema ids", `the role "ROLE" needs USAGE on schema ids; ask the schema's owner`}},
		{"REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC", "GRANT EXECUTE ON FUNCTION pg_control_system() TO PUBLIC",
			[]string{"permission denied for function pg_control_system", "the role needs EXECUTE on function pg_control_system()", "--replication sync"}},
	} {
		clitest.ExecSQL(t, db, strings.ReplaceAll(c.revoke, "ROLE", role))
		r := harness.Run(t, "run", "--dsn", rdsn, "--table", "ids.nodes", "--ttl", "3s", "--", "touch", marker)
		var says []string
		for _, s := range c.says {
			says = append(says, strings.ReplaceAll(s, "ROLE", role))
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
