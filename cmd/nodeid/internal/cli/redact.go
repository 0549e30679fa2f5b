package cli

import (
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// redacted replaces every password in what the command prints.
const redacted = "xxxxx"

// Redactor removes passwords from text before it is printed. It knows the
// passwords of the DSNs and environment variables the command was given, and
// also masks anything shaped like a password in a DSN.
type Redactor struct {
	secrets []string // longest first, so that a secret containing another is masked whole
}

// dsnPassword matches the password of a URL's user info and of a
// password= or sslpassword= setting (key=value form or URL query).
var (
	urlPassword = regexp.MustCompile(`(://[^:/?#@\s]*:)[^@\s]*@`)
	kvPassword  = regexp.MustCompile(`(?i)((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)`)
)

// Add records the passwords found in dsn, a URL or key=value connection
// string, or the whole of a password variable's value if isPassword.
func (r *Redactor) Add(s string, isPassword bool) {
	if s == "" {
		return
	}
	var found []string
	if isPassword {
		found = append(found, s)
	} else {
		found = append(found, dsnSecrets(s)...)
	}
	for _, f := range found {
		if f == "" {
			continue
		}
		r.secrets = append(r.secrets, f)
		if u, err := url.PathUnescape(f); err == nil && u != f && u != "" {
			r.secrets = append(r.secrets, u)
		}
		if u, err := url.QueryUnescape(f); err == nil && u != f && u != "" {
			r.secrets = append(r.secrets, u)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// dsnSecrets returns the candidate passwords of a connection string, even a
// malformed one: the user info after the first colon and up to the last @
// of a URL, and the values of password settings.
func dsnSecrets(dsn string) []string {
	var out []string
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				out = append(out, pw)
			}
		}
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		v := m[2]
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			out = append(out, v[1:len(v)-1], strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v[1:len(v)-1]))
		}
		out = append(out, v)
	}
	return out
}

// String returns s with every known password and every password-shaped
// part of a DSN masked.
func (r *Redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	s = urlPassword.ReplaceAllString(s, "${1}"+redacted+"@")
	return kvPassword.ReplaceAllString(s, "${1}"+redacted)
}

// redactWriter masks passwords in everything written through it. Each
// Write is masked on its own: callers write whole lines.
type redactWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
