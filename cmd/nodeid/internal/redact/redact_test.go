package redact

import (
	"strings"
	"testing"
)

// TestRedactorMasksByStructure: the password of a connection string is
// masked where the string keeps it, in any text; no other text is touched,
// even where it equals the password.
func TestRedactorMasksByStructure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dsn, text, want string }{
		{
			"postgres://postgres:postgres@127.0.0.1:5432/postgres",
			`relation "nodes" does not exist in database "postgres" on 127.0.0.1:5432 as user "postgres"; postgres://postgres:postgres@127.0.0.1:5432/postgres`,
			`relation "nodes" does not exist in database "postgres" on 127.0.0.1:5432 as user "postgres"; postgres://postgres:xxxxx@127.0.0.1:5432/postgres`,
		},
		{"postgres://bob:lp@db/app", `table help does not exist: apply the DDL; postgres://bob:lp@db/app`, `table help does not exist: apply the DDL; postgres://bob:xxxxx@db/app`},
		{"postgres://bob:a@db/app", "a table named data", "a table named data"},
		{"host=db user=nodes password=nodes dbname=nodes", "permission denied for table snowflake_nodes_config (host=db user=nodes password=nodes dbname=nodes)", "permission denied for table snowflake_nodes_config (host=db user=nodes password=xxxxx dbname=nodes)"},
		{"postgres://db/app?sslpassword=app&password=app", "database app: postgres://db/app?sslpassword=app&password=app", "database app: postgres://db/app?sslpassword=xxxxx&password=xxxxx"},
	} {
		var r Redactor
		r.AddDSN(tc.dsn)
		if got := r.String(tc.text); got != tc.want {
			t.Errorf("with %q:\n got %s\nwant %s", tc.dsn, got, tc.want)
		}
	}
}

// TestRedactorMisreadWords: the words of a password the parser read as
// something else are masked wherever they went; a password read as the
// password adds nothing.
func TestRedactorMisreadWords(t *testing.T) {
	t.Parallel()
	var r Redactor
	r.AddDSN("postgres://bob:4821/Secret7Word@h/db")
	if got := r.String(`database "Secret7Word@h/db" on bob:4821`); strings.Contains(got, "Secret7Word") || strings.Contains(got, "4821") {
		t.Errorf("a misread password shows: %s", got)
	}
	r = Redactor{}
	r.AddDSN("postgres://u:pw@h/db?application_name=x@y")
	if got, want := r.String("application_name x@y"), "application_name x@y"; got != want {
		t.Errorf("a password read as the password masked other text: %s", got)
	}
	if len(r.words) != 0 {
		t.Errorf("words learnt from a DSN read as written: %q", r.words)
	}
}

// TestRedactorUnreadable: the candidate passwords of a connection string
// that no parser reads whole are masked anywhere (the command prints no
// more than why it cannot read it).
func TestRedactorUnreadable(t *testing.T) {
	t.Parallel()
	var r Redactor
	r.AddDSN("host=h password=top secret sslmode=bogus")
	if got := r.String("who said top secret?"); strings.Contains(got, "top secret") {
		t.Errorf("the password of a connection string read whole by no parser: %q", got)
	}
}

// TestRedactorUnquotedSpaces: the words after an unquoted password= value
// that are not settings of their own are the password's, in a connection
// string or in a message that quotes one, and are masked with it.
func TestRedactorUnquotedSpaces(t *testing.T) {
	t.Parallel()
	var r Redactor
	for _, c := range []struct{ in, want string }{
		{"host=h password=top secret sslmode=bogus", "host=h password=xxxxx sslmode=bogus"},
		{"cannot parse `host=h password=top secret`: failed", "cannot parse `host=h password=xxxxx`: failed"},
		{"(password=top secret) and more", "(password=xxxxx) and more"},
		{"password='top secret' user=bob", "password=xxxxx user=bob"},
		{"password='top secret sslmode=x", "password=xxxxx"},
		{"sslpassword=a b c=d", "sslpassword=xxxxx c=d"},
		{"postgres://h/db?password=top&user=bob", "postgres://h/db?password=xxxxx&user=bob"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
