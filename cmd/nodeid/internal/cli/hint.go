package cli

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/nodeid/nodeid/postgres"
)

// Command returns the command line "nodeid SUB ARGS..." that a message
// advises, made to act on the table and database this command acts on:
// --table always, and --dsn when the command was given one, without its
// password (the command then takes it from PGPASSWORD or a password file;
// a password that cannot be taken out whole is masked instead). Each word
// is quoted for a POSIX shell where it needs it, so that the line can be
// pasted as it is. c may be nil: then only --table's default is known.
func (c *Conn) Command(sub string, args ...string) string {
	table := postgres.DefaultTable
	if c != nil {
		table = c.table
	}
	return c.commandOn(table, sub, args...)
}

// commandOn is Command on table instead of the command's.
func (c *Conn) commandOn(table, sub string, args ...string) string {
	dsn := ""
	if c != nil {
		dsn = c.dsn
	}
	words := []string{"nodeid", sub}
	if dsn != "" {
		words = append(words, "--dsn", c.hintDSN(dsn))
	}
	words = append(words, "--table", table)
	words = append(words, args...)
	for i, w := range words {
		words[i] = ShellQuote(w)
	}
	return strings.Join(words, " ")
}

// hintDSN returns dsn rebuilt without its passwords, else, if it cannot be
// taken apart, with every password masked.
func (c *Conn) hintDSN(dsn string) string {
	if s, ok := withoutPassword(dsn); ok {
		return s
	}
	return c.env.Redact.String(dsn)
}

// withoutPassword returns the connection string dsn rebuilt from its parts
// without the password of its user info and its password and sslpassword
// settings (URL query or key=value form), every other part as written; ok
// is false if dsn cannot be taken apart. It goes by the structure alone:
// no other text is looked at, so a password equal to the user's, the
// database's or a host's name leaves those names whole.
func withoutPassword(dsn string) (string, bool) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return urlWithoutPassword(dsn)
	}
	return kvWithoutPassword(dsn)
}

// isPasswordKey reports whether a setting's key names a password.
func isPasswordKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// urlWithoutPassword is withoutPassword of a postgres:// URL, taken apart
// as libpq and pgx do: the user info up to the first "@" before any "/",
// hosts (a list, so not for net/url), the path, then the query.
func urlWithoutPassword(dsn string) (string, bool) {
	scheme, rest, _ := strings.Cut(dsn, "://")
	var b strings.Builder
	b.WriteString(scheme + "://")
	if user, _, ok := urlUserInfo(dsn); ok {
		if user != "" {
			b.WriteString(user + "@")
		}
		rest = rest[strings.IndexByte(rest, '@')+1:]
	}
	body, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(body)
	if hasQuery {
		var kept []string
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if key, err := url.QueryUnescape(k); err != nil {
				return "", false
			} else if isPasswordKey(key) {
				continue
			}
			kept = append(kept, kv)
		}
		if len(kept) > 0 {
			b.WriteString("?" + strings.Join(kept, "&"))
		}
	}
	return b.String(), true
}

// kvWithoutPassword is withoutPassword of a key=value connection string,
// taken apart as libpq and pgx do: a key, "=" (spaces around it allowed),
// then a value in single quotes with backslash escapes, or a word whose
// backslashes escape the next character. The settings kept are written as
// they were, one space apart.
func kvWithoutPassword(dsn string) (string, bool) {
	var kept []string
	s := dsn
	for {
		s = strings.TrimLeft(s, " \t\n\r\f\v")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", false
		}
		key := strings.TrimRight(s[:eq], " \t\n\r\f\v")
		if key == "" || strings.ContainsAny(key, " \t\n\r\f\v") {
			return "", false
		}
		v := strings.TrimLeft(s[eq+1:], " \t\n\r\f\v")
		end := 0
		if strings.HasPrefix(v, "'") {
			end = 1
			for ; end < len(v) && v[end] != '\''; end++ {
				if v[end] == '\\' {
					end++
				}
			}
			if end >= len(v) {
				return "", false // unterminated quote
			}
			end++
		} else {
			for ; end < len(v) && !isSpace(v[end]); end++ {
				if v[end] == '\\' {
					end++
				}
			}
			if end > len(v) {
				return "", false // a backslash at the end
			}
		}
		if !isPasswordKey(key) {
			kept = append(kept, key+"="+v[:end])
		}
		s = v[end:]
	}
	return strings.Join(kept, " "), true
}

// shellSafe matches the words a POSIX shell reads as themselves.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// ShellQuote returns s as one word of a POSIX shell: as it is if the shell
// reads it so, else in single quotes (a quote in it as '\”).
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
