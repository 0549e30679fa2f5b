package app

import (
	"net/url"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestPasswordNeverPrinted: whatever fails, and however the password was
// given, it does not appear in the output.
func TestPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	good := clitest.WithUser(t, dsn, "postgres", clitest.Secret)
	u, _ := url.Parse(good)
	u.Host = "127.0.0.1:1"
	refused := u.String()
	odd := clitest.Secret + "@/:%"
	u.User = url.UserPassword("postgres", odd)
	escaped := u.String()
	if !strings.Contains(escaped, "%40%2F%3A%25") {
		t.Fatalf("the test's password is not escaped in %s", escaped)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		code  int
		wants []string
	}{
		{"refused URL", nil, []string{"list", "--dsn", refused}, cli.ExitFailure, []string{"cannot connect"}},
		{"refused URL, escaped password", nil, []string{"list", "--dsn=" + escaped}, cli.ExitFailure, []string{"cannot connect"}},
		{"bad key=value", nil, []string{"list", "--dsn", "host=127.0.0.1 port=nope password=" + clitest.Secret}, cli.ExitUsage, []string{"bad connection string in --dsn"}},
		{"bad quoted key=value", nil, []string{"show", "1", "--dsn", "host=x password='" + clitest.Secret + " sslmode=bogus"}, cli.ExitUsage, []string{"bad connection string"}},
		{"bad URL in DATABASE_URL", map[string]string{cli.EnvDatabaseURL: "postgres://bob:" + clitest.Secret + "@[::1/db"}, []string{"list"}, cli.ExitUsage, []string{"in DATABASE_URL"}},
		{"bad sslmode", map[string]string{cli.EnvDatabaseURL: good + "&sslmode=bogus"}, []string{"list"}, cli.ExitUsage, []string{"sslmode"}},
		{"missing database", nil, []string{"list", "--dsn", clitest.WithUser(t, pgtest.WithDatabase(dsn, "no_such_db"), "postgres", clitest.Secret)}, cli.ExitFailure, []string{"does not exist"}},
		{"missing table", nil, []string{"who", "--dsn", good, "--table", "nothere", "1805834298273538055"}, cli.ExitFailure, []string{"table nothere does not exist", "nodeid init"}},
		{"run", nil, []string{"run", "--dsn", refused, "--", "true"}, cli.ExitFailure, []string{"cannot connect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := harness.RunWith(t, "", tc.env, tc.args...)
			clitest.WantExit(t, r, tc.code, tc.wants...)
			for _, leak := range []string{clitest.Secret, odd, "%40%2F%3A%25"} {
				if strings.Contains(r.Stdout+r.Stderr, leak) {
					t.Errorf("the password was printed: %+v", r)
				}
			}
		})
	}
}

// TestUsageAndExitCodes: cobra's own errors are usage errors, on one line.
func TestUsageAndExitCodes(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "frobnicate"), cli.ExitUsage, `unknown command "frobnicate"`, `see "nodeid --help"`)
	if r := harness.Run(t, "lst"); r.Code != cli.ExitUsage || r.Stderr != "nodeid: unknown command \"lst\" for \"nodeid\" (did you mean \"list\"?)\n" {
		t.Errorf("nodeid lst: %+v", r)
	}
	clitest.WantExit(t, harness.Run(t, "shw", "1"), cli.ExitUsage, `unknown command "shw" for "nodeid" (did you mean "show" or "who"?)`)
	clitest.WantExit(t, harness.Run(t, "list", "--no-such-flag"), cli.ExitUsage, "unknown flag: --no-such-flag", `see "nodeid list --help"`)
	clitest.WantExit(t, harness.Run(t, "show", "--limit", "many", "1"), cli.ExitUsage, "--limit")
	if r := harness.Run(t, "list", "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") {
		t.Errorf("list --help: %+v", r)
	}
}

// TestPasswordMaskedByStructure: a password equal to the user's and the
// database's name, to the table's, to a common word or of one letter
// leaves every name in the output as it is: only the connection strings
// the output suggests lose their password, rebuilt without it.
func TestPasswordMaskedByStructure(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, db, password, table string
		wants                     []string
	}{
		{"password equal to user and database", "postgres", "postgres", "nosuch", []string{
			`table nosuch does not exist in database "postgres"`, `as user "postgres"`,
			"nodeid init --dsn 'postgres://postgres@" + u.Host + "/postgres?",
		}},
		{"one-letter password in the table's name", strings.TrimPrefix(u.Path, "/"), "lp", "help", []string{
			"table help does not exist", "--table help",
		}},
		{"password equal to the table", strings.TrimPrefix(u.Path, "/"), "nodes", "nodes", []string{
			"table nodes does not exist", "--table nodes",
		}},
		{"password a common word", strings.TrimPrefix(u.Path, "/"), "the", "nosuch", []string{
			"table nosuch does not exist", "create it with",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := clitest.WithUser(t, pgtest.WithDatabase(dsn, tc.db), "postgres", tc.password)
			r := harness.Run(t, "list", "--dsn", d, "--table", tc.table)
			clitest.WantExit(t, r, cli.ExitFailure, tc.wants...)
			if strings.Contains(r.Stdout+r.Stderr, "xxxxx") {
				t.Errorf("a mask in the output, where only names belong:\n%s", r.Stderr)
			}
			if strings.Contains(r.Stderr, ":"+tc.password+"@") {
				t.Errorf("the password is in a suggested connection string:\n%s", r.Stderr)
			}
		})
	}
}
