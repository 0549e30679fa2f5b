package cli

import (
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dsn, secret, text string
	}{
		{"postgres://bob:s3cr%40t@db:5432/app", "s3cr@t", "failed: s3cr@t and s3cr%40t"},
		{"postgres://bob:pa:ss@word@[::1", "pa:ss@word", "cannot parse postgres://bob:pa:ss@word@[::1: pa:ss@word"},
		{`host=db password='it\'s secret' user=bob`, "it's secret", "and it's secret"},
		{"host=db password=hunter22 user=bob", "hunter22", "echo hunter22"},
		{"postgres://db/app?password=qwerty99&sslmode=disable", "qwerty99", "got qwerty99"},
	} {
		var r Redactor
		r.Add(tc.dsn, false)
		got := r.String(tc.text + " " + tc.dsn)
		if strings.Contains(got, tc.secret) {
			t.Errorf("redacting %q left the password %q in %q", tc.dsn, tc.secret, got)
		}
		if !strings.Contains(got, redacted) {
			t.Errorf("redacting %q: no mask in %q", tc.dsn, got)
		}
	}
	var r Redactor
	r.Add("p4ss", true)
	if got := r.String("user=bob p4ss"); got != "user=bob "+redacted {
		t.Errorf("PGPASSWORD not masked: %q", got)
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
	r.Add("host=h password=top secret sslmode=bogus", false)
	if got := r.String("who said top secret?"); strings.Contains(got, "top secret") {
		t.Errorf("the password of a connection string read whole by no parser: %q", got)
	}
}
