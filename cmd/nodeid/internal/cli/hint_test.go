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
		"postgres://app:hunter2@db:5432/app?sslmode=require":     "postgres://app@db:5432/app?sslmode=require",
		"postgres://app@db/app?password=hunter2&sslmode=require": "postgres://app@db/app?sslmode=require",
		"postgresql://app@db/app":                                "postgresql://app@db/app",
		"host=db user=app password=hunter2 dbname=app":           "host=db user=app dbname=app",
		"host=db password='hun ter2' dbname=app sslpassword=k3y": "host=db dbname=app",
		"password = hunter2 host=db":                             "host=db",
		"host=db dbname=app options='-c search_path=ids'":        "host=db dbname=app options='-c search_path=ids'",
	} {
		got := withoutPassword(in)
		if got != want {
			t.Errorf("withoutPassword(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") || strings.Contains(got, "k3y") {
			t.Errorf("withoutPassword(%q) = %q keeps the password", in, got)
		}
	}
}
