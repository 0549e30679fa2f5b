package table

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// psqlPath finds psql, on PATH or beside the server's binaries.
func psqlPath(t *testing.T) string {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
		if len(matches) == 0 {
			pgtest.Unavailable(t, fmt.Errorf("no psql: %w", err))
		}
		psql = matches[len(matches)-1]
	}
	return psql
}

// The psql session of docs/sql.md runs as written, as a role that holds
// only what nodeid init --grant gave it, on a new table, and prints what
// the document shows: a claim of node 0 at epoch 1, a renewal, a renewal
// of a wrong epoch and of a wrong owner refused, a verify in a
// transaction, a release, the next claim at epoch 2, and a write to each
// table refused with SQLSTATE 42501. As that role nodeid run works too,
// and a role without the grant is refused by the claim function.
func TestSQLContractPsqlSession(t *testing.T) {
	t.Parallel()
	psql := psqlPath(t)
	doc, err := os.ReadFile(filepath.Join(clitest.RepoRoot, "docs", "sql.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## A psql session\n")
	_, session, ok1 := strings.Cut(section, "\n```sql\n")
	session, rest, ok2 := strings.Cut(session, "\n```\n")
	_, want, ok3 := strings.Cut(rest, "\n```text\n")
	want, _, ok4 := strings.Cut(want, "\n```\n")
	if !ok || !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatal("docs/sql.md has no psql session followed by its output")
	}
	db, dsn := pgtest.NewDB(t)
	role := fmt.Sprintf("nodeid_sql_%d", os.Getpid())
	clitest.ExecSQL(t, db, "CREATE ROLE "+role+" LOGIN PASSWORD '"+clitest.Secret+"'")
	t.Cleanup(func() {
		_, _ = db.ExecContext(clitest.Ctx(t), "DROP OWNED BY "+role)
		_ = pgtest.Shared(t).Exec(clitest.Ctx(t), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	harness.Must(t, "init", "--dsn", dsn, "--grant", role)
	rdsn := clitest.WithUser(t, dsn, role, clitest.Secret)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "session.sql"), []byte(session+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(clitest.Ctx(t), psql, rdsn, "-X", "-q", "-f", filepath.Join(dir, "session.sql"))
	c.Stdout, c.Stderr = &stdout, &stderr
	_ = c.Run() // psql exits 0 after the last statement, with or without errors before it
	// psql writes the errors to stderr: they are the session's last lines.
	got := stdout.String() + stderr.String()
	got = strings.ReplaceAll(got, "psql:"+filepath.Join(dir, "session.sql")+":", "")
	var lines []string
	for _, l := range strings.Split(got, "\n") {
		// "12: ERROR: ..." as psql prefixes a script's errors: the doc shows the error alone.
		if i := strings.Index(l, ": ERROR:"); i > 0 && !strings.HasPrefix(l, "ERROR") {
			l = l[i+2:]
		}
		lines = append(lines, l)
	}
	if got := strings.TrimRight(strings.Join(lines, "\n"), "\n"); got != strings.TrimRight(want, "\n") {
		t.Fatalf("the session of docs/sql.md printed:\n%s\nthe document shows:\n%s", got, want)
	}

	// nodeid run as the client role.
	harness.Must(t, "run", "--dsn", rdsn, "--", "true")

	// A role without the grant.
	other := role + "_none"
	clitest.ExecSQL(t, db, "CREATE ROLE "+other+" LOGIN PASSWORD '"+clitest.Secret+"'")
	t.Cleanup(func() { _ = pgtest.Shared(t).Exec(clitest.Ctx(t), "postgres", "DROP ROLE IF EXISTS "+other) })
	odb, err := sql.Open("pgx", clitest.WithUser(t, dsn, other, clitest.Secret))
	if err != nil {
		t.Fatal(err)
	}
	defer odb.Close()
	_, err = odb.ExecContext(clitest.Ctx(t), `SELECT * FROM snowflake_nodes_claim(owner => 'x', ttl_ms => 30000)`)
	if code := postgres.SQLSTATE(err); code != "42501" {
		t.Fatalf("the claim function as a role without the grant: %v (SQLSTATE %q), want 42501", err, code)
	}
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", clitest.WithUser(t, dsn, other, clitest.Secret), "--", "true"),
		cli.ExitFailure, "permission denied", "nodeid init --grant ROLE")
}
