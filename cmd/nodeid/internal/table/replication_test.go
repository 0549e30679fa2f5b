package table

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestReplicationSyncWithoutWALFunctions: on a database that refuses the
// WAL functions to everyone (as Aurora does), init of a new table (which
// records asynchronous replication by default) fails naming the functions
// and --replication sync, not a privilege on the table; with
// --replication sync, init, run, list and release work.
func TestReplicationSyncWithoutWALFunctions(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	role := fmt.Sprintf("app_%d", time.Now().UnixNano())
	clitest.ExecSQL(t, admin, `REVOKE EXECUTE ON FUNCTION pg_current_wal_lsn(), pg_walfile_name(pg_lsn), pg_control_checkpoint(), pg_control_system() FROM PUBLIC`)
	clitest.ExecSQL(t, admin, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() { _ = srv.Exec(context.Background(), "postgres", `DROP ROLE IF EXISTS `+role) })
	clitest.ExecSQL(t, admin, `CREATE SCHEMA ids AUTHORIZATION `+role)
	app := strings.Replace(dsn, "postgres://postgres@", "postgres://"+role+"@", 1)

	r := harness.Run(t, "init", "--dsn", app, "--table", "ids.nodes", "--nodes", "4")
	clitest.WantExit(t, r, cli.ExitFailure, "pg_control_system", "records asynchronous replication", "--replication sync")
	if strings.Contains(r.Stderr, "GRANT") {
		t.Errorf("the refusal blames a privilege on the table: %s", r.Stderr)
	}
	if out := harness.Must(t, "init", "--dsn", app, "--table", "ids.nodes", "--nodes", "4", "--replication", "sync"); !strings.Contains(out, "replication sync") {
		t.Errorf("init --replication sync: %q", out)
	}
	out := harness.Must(t, "run", "--dsn", app, "--table", "ids.nodes", "--ttl", "10s", "--", "sh", "-c", `echo "node=$NODEID_NODE epoch=$NODEID_EPOCH"`)
	if !strings.Contains(out, "node=0 epoch=1") {
		t.Errorf("run on a synchronous table printed %q; want node 0, epoch 1", out)
	}
	clitest.ExecSQL(t, admin, `UPDATE ids.nodes SET owner = 'stuck', epoch = 7, acquired_at = now(), expires_at = now() + interval '1 hour' WHERE node_id = 1`)
	if out := harness.Must(t, "list", "--dsn", app, "--table", "ids.nodes"); !strings.Contains(out, "stuck") || !strings.Contains(out, "; replication sync") {
		t.Errorf("list of a synchronous table:\n%s", out)
	}
	harness.Must(t, "evict", "1", "--epoch", "7", "--yes", "--dsn", app, "--table", "ids.nodes")
	if out := harness.Must(t, "list", "--dsn", app, "--table", "ids.nodes", "--state", "held"); strings.Contains(out, "stuck") {
		t.Errorf("node ID 1 is still held after the release:\n%s", out)
	}
}

// TestInitRefusesUnloggedTables: init checks the tables it leaves behind,
// and a lease table made UNLOGGED (which a crash empties) fails it, named.
func TestInitRefusesUnloggedTables(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "4")
	clitest.ExecSQL(t, db, `ALTER TABLE snowflake_nodes_history SET UNLOGGED`)
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn), cli.ExitFailure, "snowflake_nodes_history is UNLOGGED", "SET LOGGED")
}
