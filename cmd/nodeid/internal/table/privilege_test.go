package table

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestMissingPrivilege: a role that lacks a grant gets an error naming the
// role, the object PostgreSQL refused and what it lacks on it for the
// statement that failed, grant after grant, and none of the grants it has.
func TestMissingPrivilege(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	role := fmt.Sprintf("nodeid_reader_%d", os.Getpid())
	clitest.ExecSQL(t, db, "CREATE ROLE "+role+" LOGIN PASSWORD '"+clitest.Secret+"'")
	t.Cleanup(func() {
		_, _ = db.ExecContext(clitest.Ctx(t), "DROP OWNED BY "+role)
		_ = pgtest.Shared(t).Exec(clitest.Ctx(t), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	clitest.ExecSQL(t, db, "REVOKE ALL ON snowflake_nodes, snowflake_nodes_history, snowflake_nodes_config FROM PUBLIC")
	rdsn := clitest.WithUser(t, dsn, role, clitest.Secret)
	needs := func(what, grant string) string {
		if grant != "" {
			return `the role "` + role + `" needs ` + what + `; ask the table's owner to grant it: ` + grant
		}
		return `the role "` + role + `" needs ` + what + `; ask the table's owner to GRANT it`
	}

	var runs []clitest.Result
	for _, step := range []struct {
		grant string // before the command
		args  []string
		says  []string
	}{
		{"", []string{"list"}, []string{"read configuration on table snowflake_nodes: permission denied for table snowflake_nodes_config", needs("SELECT on table snowflake_nodes_config", "nodeid init --grant ROLE (a client's), --grant-operator ROLE (an operator's)")}},
		{"", []string{"prune", "--older-than", "1d"}, []string{"permission denied for function snowflake_nodes_prune", needs("EXECUTE on function snowflake_nodes_prune()", "nodeid init --grant ROLE (a client's), --grant-operator ROLE (an operator's)")}},
		{"GRANT SELECT ON snowflake_nodes_config", []string{"list"}, []string{"list on table snowflake_nodes: permission denied for table snowflake_nodes:", needs("SELECT on table snowflake_nodes", "nodeid init --grant ROLE (a client's), --grant-operator ROLE (an operator's)")}},
		// Every privilege on the tables is not the function's.
		{"GRANT ALL ON snowflake_nodes, snowflake_nodes_history", []string{"evict", "0", "--epoch", "3", "--yes"}, []string{"evict on table snowflake_nodes: permission denied for function snowflake_nodes_evict", needs("EXECUTE on function snowflake_nodes_evict()", "nodeid init --grant ROLE (a client's), --grant-operator ROLE (an operator's)")}},
	} {
		if step.grant != "" {
			clitest.ExecSQL(t, db, step.grant+" TO "+role)
		}
		r := harness.Run(t, append(step.args, "--dsn", rdsn)...)
		clitest.WantExit(t, r, cli.ExitFailure, step.says...)
		runs = append(runs, r)
	}
	for _, r := range runs {
		if strings.Contains(r.Stdout+r.Stderr, clitest.Secret) {
			t.Errorf("the password was printed: %+v", r)
		}
	}
	if r := harness.Run(t, "list", "--dsn", rdsn); r.Code != 0 || !strings.Contains(r.Stdout, "web-1") {
		t.Errorf("list after GRANT SELECT: %+v", r)
	}
}
