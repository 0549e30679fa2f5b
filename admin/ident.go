package admin

import (
	"fmt"
	"strings"
)

// maxTableLen is the longest table name (without schema) accepted: the
// history table and the indexes append up to 13 bytes to it, and PostgreSQL
// truncates identifiers longer than 63 bytes. ValidateTable's doc states it.
const maxTableLen = 50

// maxSchemaLen is PostgreSQL's identifier limit (NAMEDATALEN-1).
const maxSchemaLen = 63

// ValidateTable checks a table name: a lowercase SQL identifier (a-z, 0-9, _;
// not starting with a digit; not a reserved word) of at most 50 bytes,
// optionally qualified by a schema of the same form (at most 63 bytes). Names are never quoted: anything that would need
// quoting is rejected, because the table name is the one part of the
// statements that cannot be a bind parameter.
func ValidateTable(name string) error {
	schema, table, qualified := strings.Cut(name, ".")
	if !qualified {
		schema, table = "", name
	}
	if strings.Contains(table, ".") {
		return fmt.Errorf("table %q: a name has at most one dot, between a schema and a table (schema.table)", name)
	}
	if qualified {
		if err := validIdent(schema, maxSchemaLen); err != nil {
			return fmt.Errorf("table %q: schema %w", name, err)
		}
	}
	if err := validIdent(table, maxTableLen); err != nil {
		return fmt.Errorf("table %q: %w", name, err)
	}
	return nil
}

func validIdent(s string, maxLen int) error {
	switch {
	case s == "":
		return fmt.Errorf("name is empty")
	case len(s) > maxLen:
		return fmt.Errorf("name is %d bytes long; at most %d are allowed", len(s), maxLen)
	case s[0] >= '0' && s[0] <= '9':
		return fmt.Errorf("name must not start with a digit")
	case reserved[s]:
		return fmt.Errorf("name %q is a reserved SQL keyword", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("character %q at byte %d is not allowed: only a-z, 0-9 and _ (and one dot after a schema)", c, i)
		}
	}
	return nil
}

// reserved holds PostgreSQL's reserved key words, including those reserved
// "(can be function or type)": none of them can name a table unquoted.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		all analyse analyze and any array as asc asymmetric authorization
		binary both case cast check collate collation column concurrently
		constraint create cross current_catalog current_date current_role
		current_schema current_time current_timestamp current_user default
		deferrable desc distinct do else end except false fetch for foreign
		freeze from full grant group having ilike in initially inner
		intersect into is isnull join lateral leading left like limit
		localtime localtimestamp natural not notnull null offset on only or
		order outer overlaps placing primary references returning right
		select session_user similar some symmetric system_user table
		tablesample then to trailing true union unique user using variadic
		verbose when where window with`) {
		m[w] = true
	}
	return m
}()
