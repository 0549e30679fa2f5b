package cli

import (
	"testing"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"ids.nodes":                "ids.nodes",
		"900-900":                  "900-900",
		"--table":                  "--table",
		"host=db dbname=x":         "'host=db dbname=x'",
		"it's":                     `'it'\''s'`,
		"":                         "''",
		"a;rm -rf /":               "'a;rm -rf /'",
		"$(touch x)":               "'$(touch x)'",
		"postgres://a@b/c":         "postgres://a@b/c",
		"postgres://a@b/c?x=1&y=2": "'postgres://a@b/c?x=1&y=2'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCommandKeepsNames: the command line a message advises names the
// database, user and table as they are, whatever the password, and holds
// no password.
func TestCommandKeepsNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, table, want string }{
		{"postgres://postgres:postgres@127.0.0.1:5432/postgres", "nodes", "nodeid init --dsn postgres://postgres@127.0.0.1:5432/postgres --table nodes"},
		{"postgres://bob:lp@db/app", "help", "nodeid init --dsn postgres://bob@db/app --table help"},
		{"postgres://bob:a@db/data", "data", "nodeid init --dsn postgres://bob@db/data --table data"},
		{"host=db user=nodes password=nodes dbname=nodes", "nodes", "nodeid init --dsn 'host=db user=nodes dbname=nodes' --table nodes"},
	} {
		env := NewEnv(nil, nil, nil)
		env.Getenv = func(string) string { return "" }
		env.learnSecrets([]string{"--dsn", c.dsn})
		conn := &Conn{env: env, dsn: c.dsn, table: c.table}
		if _, err := conn.Config(); err != nil {
			t.Fatal(err)
		}
		if got := env.Redact.String(conn.Command("init")); got != c.want {
			t.Errorf("with %q:\n got %s\nwant %s", c.dsn, got, c.want)
		}
	}
}
