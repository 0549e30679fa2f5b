package table

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// lockInTx opens a transaction on db that runs stmt, and returns the
// transaction's server process; the transaction is rolled back when the
// test ends, or earlier by calling the returned function.
func lockInTx(t *testing.T, db *sql.DB, stmt string) (pid int, rollback func()) {
	t.Helper()
	tx, err := db.BeginTx(clitest.Ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(clitest.Ctx(t), stmt); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(clitest.Ctx(t), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	rollback = func() { _ = tx.Rollback() }
	t.Cleanup(rollback)
	return pid, rollback
}

// waitNoStatementOf waits until no statement of a command named cmd runs on
// the server of db any more.
func waitNoStatementOf(t *testing.T, db *sql.DB, cmd string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1 AND state = 'active'`,
			"nodeid "+cmd+" (pid %").Scan(&n)
		if err != nil {
			t.Fatalf("statements of nodeid %s still running on the server: %v", cmd, err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d statements of nodeid %s still running on the server", n, cmd)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestTimeoutLockWait: a list blocked behind an ACCESS EXCLUSIVE lock gives
// up at --timeout, says which lock it waited for and who holds it, and
// leaves no statement waiting on the server.
func TestTimeoutLockWait(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	holder, rollback := lockInTx(t, db, `LOCK TABLE snowflake_nodes IN ACCESS EXCLUSIVE MODE`)
	r := harness.Run(t, "list", "--dsn", dsn, "--timeout", "1s")
	clitest.WantExit(t, r, cli.ExitFailure, "nodeid: list gave up after 1s (--timeout): its statement (server process ",
		") waited for a lock: AccessShareLock on table snowflake_nodes (wait event Lock/relation), held in AccessExclusiveLock mode by process "+fmt.Sprint(holder)+
			` (user "postgres", idle in transaction, in a transaction begun `,
		"; the statement was cancelled: end the blocking transaction, or raise --timeout")
	waitNoStatementOf(t, db, "list")
	rollback()
	if out := harness.Must(t, "list", "--dsn", dsn, "--timeout", "1s"); !strings.Contains(out, "web-1") {
		t.Errorf("list once the lock is gone:\n%s", out)
	}
}

// TestTimeoutRowLock: a release blocked behind a transaction that locked
// the row gives up after the eviction's lock timeout (a second, so that the
// holder's renewals never queue behind it for longer), names who holds the
// lock, and its eviction does not happen later, when the lock is gone.
func TestTimeoutRowLock(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	holder, rollback := lockInTx(t, db, `SELECT * FROM snowflake_nodes WHERE node_id = 0 FOR UPDATE`)
	r := harness.Run(t, "release", "0", "--epoch", "3", "--yes", "--dsn", dsn, "--timeout", "10s")
	clitest.WantExit(t, r, cli.ExitFailure, "waited 1s for a lock on the lease row of node ID 0, which another transaction holds",
		fmt.Sprintf("the table is locked by process %d", holder), "end that transaction")
	waitNoStatementOf(t, db, "release")
	rollback()
	var owner string
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT owner FROM snowflake_nodes WHERE node_id = 0 AND expires_at > now()`).Scan(&owner); err != nil || owner != "web-1" {
		t.Errorf("node ID 0 after a release that gave up: owner %q, %v; want still held by web-1", owner, err)
	}
}

// TestTimeoutSilentServer: a server that accepts the connection and never
// answers is named as such, whichever limit ends the wait.
func TestTimeoutSilentServer(t *testing.T) {
	t.Parallel()
	addr := clitest.SilentServer(t)
	const hint = "accepted the connection but did not answer within "
	clitest.WantExit(t, harness.Run(t, "list", "--dsn", "postgres://nobody:"+clitest.Secret+"@"+addr+"/db?connect_timeout=1"), cli.ExitFailure,
		`cannot connect to PostgreSQL (database "db" on `, "the server at "+addr+" "+hint+"1s (connect_timeout)")
	clitest.WantExit(t, harness.Run(t, "show", "1", "--dsn", "postgres://nobody@"+addr+"/db?sslmode=disable", "--timeout", "1s"), cli.ExitFailure,
		"the server at "+addr+" "+hint+"1s (--timeout)")
	clitest.WantExit(t, harness.Run(t, "who", "1805834298273538055", "--dsn", "postgres://nobody@"+addr+"/db?connect_timeout=1&sslmode=disable", "--timeout", "20s"), cli.ExitFailure,
		"the server at "+addr+" "+hint+"1s (connect_timeout)")
}

func TestTimeoutBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "list", "--timeout", "soon"), cli.ExitUsage, `"soon" is not a duration`)
	clitest.WantExit(t, harness.Run(t, "list", "--timeout", "-1s"), cli.ExitUsage, "negative")
	if out := harness.Must(t, "list", "--help"); !strings.Contains(out, "--timeout duration") || !strings.Contains(out, "(default 10s)") {
		t.Errorf("list --help does not show --timeout:\n%s", out)
	}
}
