package redact

import (
	"net/url"
	"strings"
)

// WithoutPassword returns the connection string dsn rebuilt from its parts
// without the password of its user info and its password and sslpassword
// settings (URL query or key=value form), every other part as written; ok
// is false if dsn cannot be taken apart. It goes by the structure alone:
// no other text is looked at, so a password equal to the user's, the
// database's or a host's name leaves those names whole.
func WithoutPassword(dsn string) (string, bool) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return urlWithoutPassword(dsn)
	}
	return kvWithoutPassword(dsn)
}

// isPasswordKey reports whether a setting's key names a password.
func isPasswordKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// urlWithoutPassword is WithoutPassword of a postgres:// URL, taken apart
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

// kvWithoutPassword is WithoutPassword of a key=value connection string,
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
