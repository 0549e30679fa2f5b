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

// TestMissingPrivilege: a role without SELECT gets an error naming the
// role, the table and the privilege it lacks.
func TestMissingPrivilege(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	role := fmt.Sprintf("nodeid_reader_%d", os.Getpid())
	clitest.ExecSQL(t, db, "CREATE ROLE "+role+" LOGIN PASSWORD '"+clitest.Secret+"'")
	t.Cleanup(func() {
		_ = pgtest.Shared(t).Exec(clitest.Ctx(t), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	clitest.ExecSQL(t, db, "REVOKE ALL ON snowflake_nodes, snowflake_nodes_history FROM PUBLIC")
	rdsn := clitest.WithUser(t, dsn, role, clitest.Secret)

	r := harness.Run(t, "list", "--dsn", rdsn)
	clitest.WantExit(t, r, cli.ExitFailure, "permission denied for table snowflake_nodes", `the role "`+role+`" needs SELECT on snowflake_nodes and snowflake_nodes_config`)
	r2 := harness.Run(t, "prune", "--older-than", "1d", "--dsn", rdsn)
	clitest.WantExit(t, r2, cli.ExitFailure, "permission denied", "DELETE on snowflake_nodes_history")
	r3 := harness.Run(t, "evict", "0", "--epoch", "3", "--yes", "--dsn", rdsn)
	clitest.WantExit(t, r3, cli.ExitFailure, "permission denied", "UPDATE on snowflake_nodes")
	for _, r := range []clitest.Result{r, r2, r3} {
		if strings.Contains(r.Stdout+r.Stderr, clitest.Secret) {
			t.Errorf("the password was printed: %+v", r)
		}
	}

	clitest.ExecSQL(t, db, "GRANT SELECT ON snowflake_nodes, snowflake_nodes_config TO "+role)
	if r := harness.Run(t, "list", "--dsn", rdsn); r.Code != 0 || !strings.Contains(r.Stdout, "web-1") {
		t.Errorf("list after GRANT SELECT: %+v", r)
	}
}
