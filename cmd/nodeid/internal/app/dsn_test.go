package app

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// The words of the password of the DSNs of TestUnreadableDSNNeverPrinted,
// each distinctive enough that no message holds it by chance.
const (
	pwWord1 = "Tango7Secret"
	pwWord2 = "Foxtrot9Word"
	pwWord3 = "4821"
)

// unreadableDSNs are connection strings that the parser cannot read whole,
// or reads otherwise than their author meant: a password with an unquoted
// space, an unbalanced quote, a backslash, a URL with characters a URL's
// password must escape, multi-host forms. Nothing they hold after
// "password=" or in a URL's user info may be printed.
var unreadableDSNs = []struct{ name, dsn string }{
	{"unquoted space, then a key", "host=127.0.0.1 port=1 password=" + pwWord1 + " " + pwWord2 + " sslmode=bogus"},
	{"unquoted space, at the end", "host=127.0.0.1 port=1 password=" + pwWord1 + " " + pwWord2},
	{"unquoted spaces, three words", "host=127.0.0.1 password=" + pwWord1 + " " + pwWord2 + " " + pwWord3 + " dbname=x"},
	{"unbalanced quote", "host=127.0.0.1 password='" + pwWord1 + " " + pwWord2 + " sslmode=disable"},
	{"closing quote only", "host=127.0.0.1 password=" + pwWord1 + "' " + pwWord2 + "'"},
	{"escaped space", `host=127.0.0.1 password=` + pwWord1 + `\ ` + pwWord2 + ` port=nope`},
	{"trailing backslash", `host=127.0.0.1 password=` + pwWord1 + ` ` + pwWord2 + `\`},
	{"URL, space", "postgres://bob:" + pwWord1 + " " + pwWord2 + "@127.0.0.1:1/db"},
	{"URL, slash", "postgres://bob:" + pwWord1 + "/" + pwWord2 + "@127.0.0.1:1/db"},
	{"URL, slash after a number", "postgres://bob:" + pwWord3 + "/" + pwWord2 + "@127.0.0.1/db?connect_timeout=2"},
	{"URL, bad escape", "postgres://bob:" + pwWord1 + "%zz" + pwWord2 + "@127.0.0.1:1/db"},
	{"URL, unclosed bracket", "postgres://bob:" + pwWord1 + "@[::1/" + pwWord2},
	{"URL, multi-host, space", "postgres://bob:" + pwWord1 + " " + pwWord2 + "@127.0.0.1:1,127.0.0.1:2/db"},
	{"URL, multi-host, bad port", "postgres://bob:" + pwWord1 + "@127.0.0.1:1,127.0.0.1:" + pwWord2 + "/db"},
	{"key=value, multi-host, space", "host=127.0.0.1,127.0.0.2 port=1,2 password=" + pwWord1 + " " + pwWord2 + " target_session_attrs=read-write"},
	{"key=value, more ports than hosts", "host=127.0.0.1 port=1,2,3 password=" + pwWord1 + " " + pwWord2},
}

// TestUnreadableDSNNeverPrinted: a connection string that cannot be read
// whole is not printed, whichever command reads it and wherever it comes
// from ("password=top secret" once printed "password=xxxxx
// secret"); no word of its password appears in any output.
func TestUnreadableDSNNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, d := range unreadableDSNs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"list", "--timeout", "10s", "--dsn", d.dsn},
				{"--dsn=" + d.dsn, "show", "1", "--timeout", "10s"},
				{"run", "--dsn", d.dsn, "--", "true"},
				{"bench", "-q", "--only", "roundtrips", "--ops", "1", "--dsn", d.dsn},
				{"demo", "--dsn", d.dsn},
			} {
				for _, env := range []map[string]string{nil, {cli.EnvDatabaseURL: d.dsn}} {
					if env != nil {
						args = slicesWithout(args, "--dsn", d.dsn)
					}
					r := harness.RunWith(t, "", env, args...)
					if r.Code == 0 {
						t.Errorf("%q succeeded with %q", args, d.dsn)
					}
					for _, w := range []string{pwWord1, pwWord2, pwWord3} {
						if strings.Contains(r.Stdout+r.Stderr, w) {
							t.Errorf("nodeid %s with the DSN %q printed %q of its password:\n%s%s", strings.Join(args, " "), d.dsn, w, r.Stdout, r.Stderr)
						}
					}
				}
			}
		})
	}
}

// slicesWithout returns args without the flag --dsn and its value, in
// either form.
func slicesWithout(args []string, flag, value string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == flag && i+1 < len(args) && args[i+1] == value:
			i++
		case args[i] == flag+"="+value:
		default:
			out = append(out, args[i])
		}
	}
	return out
}
