package admin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestValidateTable(t *testing.T) {
	for _, ok := range []string{"snowflake_nodes", "_x", "a1", "ids.nodes", "s.t", strings.Repeat("a", 50),
		strings.Repeat("s", 63) + ".t", "users", "public.node_ids"} {
		if err := ValidateTable(ok); err != nil {
			t.Errorf("ValidateTable(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "a.", ".a", "a.b.c", "A", "aB", "1a", "a-b", "a b", "a;b", `a"b`, "a'b",
		"é", "select", "user", "public.table", "order.x", strings.Repeat("a", 51), strings.Repeat("s", 64) + ".t",
		"a\x00", "a\n"} {
		err := ValidateTable(bad)
		if err == nil {
			t.Errorf("ValidateTable(%q) accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("error %q does not name %q", err, bad)
		}
	}
	// A second dot is named as the rule it breaks, not as a character.
	if err := ValidateTable("a.b.c"); err == nil || !strings.Contains(err.Error(), "at most one dot") {
		t.Errorf("ValidateTable(%q) = %v; want the rule of one dot", "a.b.c", err)
	}
}

var identRE = regexp.MustCompile(`^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,49}$`)

// FuzzValidateTable: an accepted name is a plain lowercase identifier
// (optionally qualified), not a reserved word, and only such names reach
// SQL text; nothing panics.
func FuzzValidateTable(f *testing.F) {
	for _, s := range []string{"snowflake_nodes", "a.b", "Robert'); DROP TABLE x;--", "select", "a..b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateTable(name)
		schema, table, qualified := strings.Cut(name, ".")
		if !qualified {
			schema, table = "", name
		}
		want := identRE.MatchString(name) && !reserved[table] && !reserved[schema]
		if (err == nil) != want {
			t.Fatalf("ValidateTable(%q) = %v, want ok=%v", name, err, want)
		}
		sch := DefaultSchema()
		sch.Table = name
		sql, err := sch.SQL()
		if (err == nil) != want {
			t.Fatalf("SchemaSQL(%q) error = %v, want ok=%v", name, err, want)
		}
		if err != nil && sql != "" {
			t.Fatalf("SchemaSQL(%q) returned SQL with an error", name)
		}
		if err == nil && !strings.Contains(sql, "CREATE TABLE IF NOT EXISTS "+name+" (") {
			t.Fatalf("SchemaSQL(%q) does not create that table", name)
		}
	})
}
