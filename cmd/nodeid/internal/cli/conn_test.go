package cli

import (
	"strings"
	"testing"
	"unicode"
)

// TestConfigHidesUnreadableDSN: a connection string the parser cannot
// read whole is not printed, nor the parser's message that quotes it; what
// is wrong with it still is.
func TestConfigHidesUnreadableDSN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, fault string }{
		{"host=h password=top Secret7 sslmode=bogus", "failed to parse as keyword/value"}, // pgx: missing "=" after "Secret7"
		{"host=h password=top Secret7", "failed to parse as keyword/value (invalid keyword/value)"},
		{"host=h password='top Secret7 sslmode=bogus", "failed to parse as keyword/value (unterminated quoted string in connection info string)"},
		{`host=h password=top\ Secret7 port=x`, "invalid port"},
		{"postgres://bob:top Secret7@h/db", "failed to parse as URL (unexpected spaces found in password, use percent-encoded spaces (%20) instead)"},
		{"postgres://bob:top%zzSecret7@h/db", "failed to parse as URL (invalid percent-encoded token in password)"},
		{"postgres://bob:top@h1:5432,h2:Secret7/db", "invalid port"},
		{"postgres://bob:top@[::1/Secret7", "failed to parse as URL"},
		{"host=h sslmode=bogus password=topSecret7", "failed to configure TLS (sslmode is invalid)"},
	} {
		env := NewEnv(nil, nil, nil)
		env.Getenv = func(string) string { return "" }
		env.learnSecrets([]string{"--dsn", c.dsn})
		_, err := (&Conn{env: env, dsn: c.dsn}).Config()
		if err == nil {
			t.Errorf("%q parsed", c.dsn)
			continue
		}
		msg := env.Describe(err)
		if !strings.Contains(msg, "bad connection string in --dsn (not shown") || !strings.Contains(msg, ": "+c.fault+"; ") {
			t.Errorf("%q: %s; want the fault %q", c.dsn, msg, c.fault)
		}
		if strings.Contains(msg, "Secret7") || strings.Contains(msg, "top") {
			t.Errorf("%q: the password shows in %s", c.dsn, msg)
		}
	}
}

// TestConfigMasksMisreadPassword: a password the parser reads as
// something else (postgres://bob:4821/pw@h reads as host bob, port 4821,
// database pw@h) is masked word by word wherever it went.
func TestConfigMasksMisreadPassword(t *testing.T) {
	t.Parallel()
	env := NewEnv(nil, nil, nil)
	env.Getenv = func(string) string { return "" }
	c := &Conn{env: env, dsn: "postgres://bob:4821/Secret7Word@h/db"}
	if _, err := c.Config(); err != nil {
		t.Fatal(err)
	}
	where := env.Redact.String(c.Where())
	if strings.Contains(where, "4821") || strings.Contains(where, "Secret7Word") {
		t.Errorf("the misread password shows in %s", where)
	}
	// A password read as written masks nothing: it is never printed.
	env = NewEnv(nil, nil, nil)
	env.Getenv = func(string) string { return "" }
	c = &Conn{env: env, dsn: "host=db5 user=app password='two words' dbname=app"}
	if _, err := c.Config(); err != nil {
		t.Fatal(err)
	}
	if got := env.Redact.String(c.Where() + ": two words"); got != `database "app" on db5:5432 as user "app": two words` {
		t.Errorf("a password read whole: %s", got)
	}
}

// dsnShapes are the shapes of connection strings that break parsing, with
// %s where a password goes.
var dsnShapes = []string{
	"host=h password=%s sslmode=bogus",
	"host=h password=%s",
	"host=h password='%s sslmode=bogus",
	"host=h password='%s' port=nope",
	`host=h password=%s\ x port=nope`,
	"host=a,b port=1,2,3 password=%s",
	"postgres://bob:%s@h/db?sslmode=bogus",
	"postgres://bob:%s@h1,h2:x/db",
	"postgres://bob:%s@[::1/db",
	"postgresql://bob:%s@h:nope/db",
	"postgres://h/db?password=%s&port=nope",
}

// FuzzConfigNeverPrintsPassword: whatever the password, and whatever the
// shape of the connection string around it, no word of the password is in
// the message of a string that does not parse, nor where one that parses
// says it connects. Words of fewer than 3 characters, and those the
// message holds anyway, are not checked.
func FuzzConfigNeverPrintsPassword(f *testing.F) {
	for i := range dsnShapes {
		for _, pw := range []string{"top secret", "Tango7 Foxtrot9", `a\'b c`, "p@ss/w:rd#x", "it's here", "x y z w", "12/Word99"} {
			f.Add(i, pw)
		}
	}
	f.Fuzz(func(t *testing.T, shape int, pw string) {
		if shape < 0 {
			shape = -shape
		}
		dsn := strings.Replace(dsnShapes[shape%len(dsnShapes)], "%s", pw, 1)
		bare := strings.Replace(dsnShapes[shape%len(dsnShapes)], "%s", "", 1)
		env := NewEnv(nil, nil, nil)
		env.Getenv = func(string) string { return "" }
		env.learnSecrets([]string{"--dsn", dsn})
		c := &Conn{env: env, dsn: dsn}
		var out string
		if _, err := c.Config(); err != nil {
			out = env.Describe(err)
		} else {
			out = env.Redact.String(c.Where())
		}
		for _, w := range strings.FieldsFunc(pw, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) < 3 || strings.Contains(bare, w) || strings.Contains(shapeless, w) {
				continue
			}
			if strings.Contains(out, w) {
				t.Fatalf("the DSN %q: %q of its password is in %q", dsn, w, out)
			}
		}
	})
}

// shapeless is what every message says whatever the connection string:
// words of a password found in it prove nothing.
const shapeless = `bad connection string in --dsn (not shown: a password may be anywhere in a string that cannot be read whole) failed to parse as keyword/value URL invalid port configure TLS sslmode is unterminated quoted connection info unexpected spaces found password use percent-encoded instead token could not match numbers hosts write it postgres USER HOST PORT DATABASE key value pairs host dbname with single quotes database on as user nodeid xxxxx 5432 root`
