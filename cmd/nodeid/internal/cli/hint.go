package cli

import (
	"regexp"
	"strings"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/redact"
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
	if s, ok := redact.WithoutPassword(dsn); ok {
		return s
	}
	return c.env.Redact.String(dsn)
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
