package redact

import (
	"strings"
	"testing"
)

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
		got, ok := WithoutPassword(in)
		if !ok || got != want {
			t.Errorf("WithoutPassword(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") || strings.Contains(got, "k3y") {
			t.Errorf("WithoutPassword(%q) = %q keeps the password", in, got)
		}
	}
	for _, in := range []string{"host=db password='unterminated", "host", "host=db pass word=x"} {
		if got, ok := WithoutPassword(in); ok {
			t.Errorf("WithoutPassword(%q) = %q, took apart what cannot be", in, got)
		}
	}
}
