package table

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/run"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// schema --verify-sql prints the statement of Lease.Verify for the table,
// which a program in another language runs as printed, with the lease's
// NODEID_NODE, NODEID_OWNER and NODEID_EPOCH.
func TestSchemaVerifySQL(t *testing.T) {
	t.Parallel()
	clitest.Golden(t, "schema_verify", harness.Must(t, "schema", "--verify-sql", "--table", "ids.nodes"))
	for _, flag := range [][]string{{"--range", "0-3"}, {"--nodes", "4"}, {"--max-ttl", "30s"}} {
		clitest.WantExit(t, harness.Run(t, append([]string{"schema", "--verify-sql"}, flag...)...), cli.ExitUsage, flag[0], "--table")
	}
	clitest.WantExit(t, harness.Run(t, "schema", "--verify-sql", "--table", "bad;name"), cli.ExitUsage, "bad;name")

	printed := harness.Must(t, "schema", "--verify-sql")
	if !strings.Contains(printed, admin.VerifySQL(admin.DefaultConfig())) {
		t.Fatalf("the printed statement is not the one Lease.Verify runs:\n%s", printed)
	}
	db, _ := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := admin.New(db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, 0, 1, "worker-1", 30*time.Second, 0)
	ok := c.OK
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	run := func(owner string, epoch int64) (held bool, status string) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var (
			expires      sql.NullTime
			idleMs       sql.NullInt64
			rowOwner     sql.NullString
			rowEpoch     sql.NullInt64
			statementNow time.Time
		)
		if err := tx.QueryRowContext(ctx, printed, c.NodeID, owner, epoch).
			Scan(&held, &status, &expires, &idleMs, &rowOwner, &rowEpoch, &statementNow); err != nil {
			t.Fatalf("the printed statement: %v", err)
		}
		if held && (!idleMs.Valid || idleMs.Int64 <= 0 || idleMs.Int64 > 30_000) {
			t.Errorf("held, but the idle timeout is %v ms", idleMs)
		}
		return held, status
	}
	if held, status := run("worker-1", c.Epoch); !held || status != "ok" {
		t.Errorf("the printed statement on a held lease: held=%v status=%v", held, status)
	}
	if held, status := run("worker-1", c.Epoch+1); held || status != "epoch_mismatch" {
		t.Errorf("the printed statement on a later epoch: held=%v status=%v", held, status)
	}
	if held, status := run("worker-2", c.Epoch); held || status != "not_owner" {
		t.Errorf("the printed statement as another owner: held=%v status=%v", held, status)
	}
	if o, err := st.Release(ctx, c.Key, 0); err != nil || !o.OK {
		t.Fatalf("release: %+v %v", o, err)
	}
	if held, status := run("worker-1", c.Epoch); held || status != "released" {
		t.Errorf("the printed statement on a released lease: held=%v status=%v", held, status)
	}
}

// The psql example of docs/verify.md runs as written under nodeid run: it
// writes while the lease is held, and with the variables of a released
// lease it writes nothing and says why.
func TestVerifySQLDocsPsqlExample(t *testing.T) {
	psql := psqlPath(t)
	doc, err := os.ReadFile(filepath.Join(clitest.RepoRoot, "docs", "verify.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n```\n\\getenv node")
	script, _, closed := strings.Cut(after, "\n```\n")
	if !ok || !closed {
		t.Fatal("docs/verify.md has no psql example starting with \\getenv node")
	}
	script = "\\getenv node" + script + "\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "write.sql"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "verify.sql"), []byte(harness.Must(t, "schema", "--verify-sql")), 0o644); err != nil {
		t.Fatal(err)
	}
	db, dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (node_id integer, item text)`); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cli.EnvDatabaseURL, dsn) // for the command, which keeps it
	command := `cd "$1" && "$2" "$DATABASE_URL" -X -q -v ON_ERROR_STOP=1 -f write.sql && echo "$NODEID_NODE $NODEID_OWNER $NODEID_EPOCH" > lease`
	r := harness.Run(t, "run", "--dsn", dsn, "--create", "--keep-db-env", "--ttl", "3s", "--owner", "psql-1", "--", "sh", "-c", command, "sh", dir, psql)
	if r.Code != 0 {
		t.Fatalf("nodeid run psql: %+v", r)
	}
	count := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM orders WHERE item = 'tea'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d rows written under a held lease, want 1", n)
	}
	lease, err := os.ReadFile(filepath.Join(dir, "lease"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(lease))
	if len(f) != 3 || f[1] != "psql-1" {
		t.Fatalf("the command's lease variables: %q", lease)
	}
	// nodeid run released the lease when psql exited.
	c := exec.CommandContext(ctx, psql, dsn, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "write.sql")
	c.Dir = dir
	c.Env = append(os.Environ(), run.EnvNode+"="+f[0], run.EnvOwner+"="+f[1], run.EnvEpoch+"="+f[2])
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "lease lost: released") {
		t.Fatalf("the example on a released lease: %v\n%s", err, out)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d rows after a write on a released lease, want 1", n)
	}
}
