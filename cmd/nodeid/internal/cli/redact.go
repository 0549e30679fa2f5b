package cli

import (
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// redacted replaces every password in what the command prints.
const redacted = "xxxxx"

// Redactor removes passwords from text before it is printed. It knows the
// passwords of the DSNs and environment variables the command was given, and
// also masks anything shaped like a password in a DSN.
type Redactor struct {
	secrets []string // longest first, so that a secret containing another is masked whole
}

// urlPassword matches the password of a URL's user info, and kvKey the
// key of a password= or sslpassword= setting (key=value form or URL
// query), up to its value.
var (
	urlPassword = regexp.MustCompile(`(://[^:/?#@\s]*:)[^@\s]*@`)
	kvKey       = regexp.MustCompile(`(?i)(?:ssl)?password\s*=\s*`)
	quotedValue = regexp.MustCompile(`^'(?:[^'\\]|\\.)*'?`)
)

// kvValues returns the spans [start, end) of the values of the password
// settings of s. A quoted value runs to its closing quote (or the end). An
// unquoted one runs to the first space, and then on over every following
// word that is not a setting of its own (no "=" in it): "password=top
// secret sslmode=x" is a password with a space its author forgot to quote,
// which libpq would not read whole, and "secret" must not be shown. A
// following word ends at a quote, a backtick or a parenthesis, as where a
// message quotes the connection string.
func kvValues(s string) [][2]int {
	var spans [][2]int
	for _, m := range kvKey.FindAllStringIndex(s, -1) {
		start := m[1]
		if q := quotedValue.FindStringIndex(s[start:]); q != nil {
			spans = append(spans, [2]int{start, start + q[1]})
			continue
		}
		end := start
		for end < len(s) && !isSpace(s[end]) && s[end] != '&' {
			end++
		}
		for {
			w := end
			for w < len(s) && isSpace(s[w]) {
				w++
			}
			if w == end || w == len(s) {
				break
			}
			e := w
			for e < len(s) && !isSpace(s[e]) && !strings.ContainsRune("`'\"()&", rune(s[e])) {
				e++
			}
			if e == w || strings.Contains(s[w:e], "=") {
				break
			}
			end = e
			if e < len(s) && !isSpace(s[e]) {
				break // the word was cut at a quote or parenthesis
			}
		}
		spans = append(spans, [2]int{start, end})
	}
	return spans
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

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
		forms := []string{f}
		if u, err := url.PathUnescape(f); err == nil && u != f && u != "" {
			forms = append(forms, u)
		}
		if u, err := url.QueryUnescape(f); err == nil && u != f && u != "" {
			forms = append(forms, u)
		}
		if u := unescaped(f); u != f && u != "" {
			forms = append(forms, u)
		}
		for _, form := range forms {
			r.secrets = append(r.secrets, form)
			// As %q prints it, escapes and all, in a message that quotes
			// a database or user name.
			if q := strconv.Quote(form); q[1:len(q)-1] != form {
				r.secrets = append(r.secrets, q[1:len(q)-1])
			}
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
	for _, sp := range kvValues(dsn) {
		v := dsn[sp[0]:sp[1]]
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			out = append(out, v[1:len(v)-1])
		}
		out = append(out, v)
	}
	return out
}

// unescaped returns s, a password as a connection string writes it,
// without its quotes and escapes: the password the parser reads.
func unescaped(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		s = s[1 : len(s)-1]
	}
	return strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(s)
}

// AddWords records as passwords the words of s, a password-shaped part of
// a connection string that the parser read otherwise than it is shaped
// (postgres://bob:12/pw@host reads as host bob, port 12, database pw@host):
// they may turn up anywhere, in a host, a port or a database name. Words
// of fewer than 3 characters are left: masking them everywhere would
// garble every message, and they hide nothing.
func (r *Redactor) AddWords(s string) {
	for _, w := range strings.FieldsFunc(s, func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '-' && c != '_' && c != '.' && c != '~' && c != '%' && c != '+' && c != '!' && c != '$' && c != '*'
	}) {
		if len(w) >= 3 {
			r.Add(w, true)
		}
	}
}

// String returns s with every known password and every password-shaped
// part of a DSN masked.
func (r *Redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	s = urlPassword.ReplaceAllString(s, "${1}"+redacted+"@")
	spans := kvValues(s)
	for i := len(spans) - 1; i >= 0; i-- {
		s = s[:spans[i][0]] + redacted + s[spans[i][1]:]
	}
	return s
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
