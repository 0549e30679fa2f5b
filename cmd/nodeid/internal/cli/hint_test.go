package cli

import (
	"strings"
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

func TestWithoutPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:hunter2@db:5432/app?sslmode=require":        "postgres://app@db:5432/app?sslmode=require",
		"postgres://app@db/app?password=hunter2&sslmode=require":    "postgres://app@db/app?sslmode=require",
		"postgresql://app@db/app":                                   "postgresql://app@db/app",
		"postgres://postgres:postgres@127.0.0.1:5432/postgres":      "postgres://postgres@127.0.0.1:5432/postgres",
		"postgres://app:app@h1:5432,h2:5433/app?sslpassword=app":    "postgres://app@h1:5432,h2:5433/app",
		"postgres://:hunter2@db/app":                                "postgres://db/app",
		"postgres://db/app?application_name=a@b":                    "postgres://db/app?application_name=a@b",
		"host=db user=app password=hunter2 dbname=app":              "host=db user=app dbname=app",
		"host=db password='hun ter2' dbname=app sslpassword=k3y":    "host=db dbname=app",
		"password = hunter2 host=db":                                "host=db",
		"host=db dbname=app options='-c search_path=ids'":           "host=db dbname=app options='-c search_path=ids'",
		"host=db user=postgres password=postgres dbname=postgres":   "host=db user=postgres dbname=postgres",
		`host=db password='it\'s hunter2' dbname='my db' user=a\ b`: `host=db dbname='my db' user=a\ b`,
	} {
		got, ok := withoutPassword(in)
		if !ok || got != want {
			t.Errorf("withoutPassword(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") || strings.Contains(got, "k3y") {
			t.Errorf("withoutPassword(%q) = %q keeps the password", in, got)
		}
	}
	for _, in := range []string{"host=db password='unterminated", "host", "host=db pass word=x"} {
		if got, ok := withoutPassword(in); ok {
			t.Errorf("withoutPassword(%q) = %q, took apart what cannot be", in, got)
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
