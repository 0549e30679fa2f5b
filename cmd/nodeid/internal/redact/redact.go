package redact

import (
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
)

// redacted replaces a password in what the command prints.
const redacted = "xxxxx"

// Redactor keeps passwords out of what the command prints, by the structure
// of connection strings: the password of a URL's user info and the values
// of password= and sslpassword= settings are masked wherever a connection
// string appears, and nothing else of a message is touched (a password
// equal to the database's name leaves that name as it is). The DSNs the
// command prints itself are rebuilt without their passwords (see
// WithoutPassword). Only where a connection string's password-shaped part
// ended up somewhere else than the password (postgres://bob:4821/pw@h
// reads as host bob, port 4821, database pw@h), or where the string cannot
// be parsed at all, are the words of that part masked wherever they appear.
type Redactor struct {
	words []string // longest first, so that a word containing another is masked whole
}

// urlPassword matches the password of a URL's user info as libpq and pgx
// read it: the user info ends at the first "@" before any "/".
var (
	urlPassword = regexp.MustCompile(`(postgres(?:ql)?://[^:/@\s]*:)[^@/\s]*@`)
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

// AddDSN learns what of dsn, a URL or key=value connection string, may
// show a password elsewhere than where the structure of a connection string
// puts it: the words of each password-shaped part that the parser did not
// read as the password, or, if the parser cannot read dsn at all, every
// candidate password whole and word by word (the command then prints no
// more than why it cannot read the string).
func (r *Redactor) AddDSN(dsn string) {
	if dsn == "" {
		return
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		for _, s := range dsnSecrets(dsn) {
			r.add(s)
			r.addWords(s)
		}
		return
	}
	for _, s := range misread(dsn, cfg.Password) {
		r.addWords(s)
	}
}

// add records s, in the forms a message may print it in, to be masked
// wherever it appears.
func (r *Redactor) add(s string) {
	if s == "" {
		return
	}
	forms := []string{s}
	if u, err := url.PathUnescape(s); err == nil && u != s && u != "" {
		forms = append(forms, u)
	}
	if u, err := url.QueryUnescape(s); err == nil && u != s && u != "" {
		forms = append(forms, u)
	}
	if u := unescaped(s); u != s && u != "" {
		forms = append(forms, u)
	}
	for _, form := range forms {
		r.words = append(r.words, form)
		// As %q prints it, escapes and all, in a message that quotes
		// a database or user name.
		if q := strconv.Quote(form); q[1:len(q)-1] != form {
			r.words = append(r.words, q[1:len(q)-1])
		}
	}
	sort.SliceStable(r.words, func(i, j int) bool { return len(r.words[i]) > len(r.words[j]) })
}

// addWords records the words of s, a password-shaped part of a connection
// string that the parser read otherwise than it is shaped: they may turn up
// anywhere, in a host, a port or a database name. Words of fewer than 3
// characters are left: masking them everywhere would garble every message,
// and they hide nothing.
func (r *Redactor) addWords(s string) {
	for _, w := range strings.FieldsFunc(s, func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '-' && c != '_' && c != '.' && c != '~' && c != '%' && c != '+' && c != '!' && c != '$' && c != '*'
	}) {
		if len(w) >= 3 {
			r.add(w)
		}
	}
}

// misread returns the password-shaped parts of dsn that the parser did not
// read as its password, which it read as password.
func misread(dsn, password string) []string {
	var out []string
	if _, pw, ok := urlUserInfo(dsn); ok && pw != "" {
		// The user info was read as libpq reads it; what follows its "@"
		// is a host, a path and a query, not a password.
		dsn = ""
	}
	for _, s := range dsnSecrets(dsn) {
		p, _ := url.PathUnescape(s)
		q, _ := url.QueryUnescape(s)
		if s != "" && password != s && password != unescaped(s) && password != p && password != q {
			out = append(out, s)
		}
	}
	return out
}

// urlUserInfo returns the user and password of a postgres:// URL's user
// info as libpq and pgx read them (up to the first "@" before any "/"),
// as written, and whether it has one.
func urlUserInfo(dsn string) (user, password string, ok bool) {
	rest, found := strings.CutPrefix(dsn, "postgresql://")
	if !found {
		if rest, found = strings.CutPrefix(dsn, "postgres://"); !found {
			return "", "", false
		}
	}
	i := strings.IndexAny(rest, "@/")
	if i < 0 || rest[i] != '@' {
		return "", "", false
	}
	user, password, _ = strings.Cut(rest[:i], ":")
	return user, password, true
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

// String returns s with the password of every connection string in it
// masked, and the words of misread or unreadable connection strings.
func (r *Redactor) String(s string) string {
	for _, w := range r.words {
		s = strings.ReplaceAll(s, w, redacted)
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

// NewWriter returns a writer that masks, through r, the passwords in
// everything written to w. Each Write is masked on its own: callers write
// whole lines.
func NewWriter(r *Redactor, w io.Writer) io.Writer { return redactWriter{r: r, w: w} }
