package nodeid

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNewRejectsBadOptions(t *testing.T) {
	db := &sql.DB{} // never used: New does not touch the database
	for _, c := range []struct {
		name    string
		opt     Option
		mention string // the error must name the bad value
	}{
		{"ttl too short", WithTTL(2 * time.Second), "2s"},
		{"ttl zero", WithTTL(0), "0s"},
		{"ttl negative", WithTTL(-time.Minute), "-1m0s"},
		{"ttl too long", WithTTL(25 * time.Hour), "25h0m0s"},
		{"owner empty", WithOwner(""), "empty"},
		{"owner too long", WithOwner(strings.Repeat("a", 256)), "256 bytes"},
		{"owner too long in bytes", WithOwner(strings.Repeat("é", 128)), "256 bytes"},
		{"node bits zero", WithNodeBits(0), "node bits 0"},
		{"node bits too many", WithNodeBits(21), "node bits 21"},
		{"range wider than node bits", WithNodeRange(0, 4095), "0-4095 does not fit 10 node bits"},
		{"owner control char", WithOwner("a\x1b[2Jb"), `"a\x1b[2Jb"`},
		{"owner newline", WithOwner("a\nb"), `U+000A`},
		{"owner bad utf8", WithOwner("a\xffb"), `"a\xffb"`},
		{"table uppercase", WithTable("Nodes"), `"Nodes"`},
		{"table quote", WithTable(`x"; DROP TABLE y; --`), `DROP TABLE`},
		{"table empty", WithTable(""), "empty"},
		{"table reserved", WithTable("user"), `"user"`},
		{"table digit", WithTable("1abc"), "digit"},
		{"table two dots", WithTable("a.b.c"), `"a.b.c"`},
		{"table too long", WithTable(strings.Repeat("a", 51)), "51 bytes"},
		{"range negative", WithNodeRange(-1, 5), "-1-5"},
		{"range inverted", WithNodeRange(9, 3), "9-3"},
		{"range too high", WithNodeRange(0, 1<<20), "1048576"},
		{"nil option", nil, "option 0 is nil"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(db, c.opt)
			if r != nil || !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New = %v, %v; want ErrInvalidOption", r, err)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not name %q", err, c.mention)
			}
		})
	}
}

func TestNewAcceptsGoodOptions(t *testing.T) {
	r, err := New(&sql.DB{},
		WithTTL(MinTTL), WithOwner(strings.Repeat("é", MaxOwnerLen/2)+"e"), WithTable("ids.snowflake_nodes"),
		WithNodeBits(12), WithNodeRange(512, 4095), WithLogger(nil), WithCreateTable(true))
	if err != nil {
		t.Fatal(err)
	}
	if r.TTL() != MinTTL || r.cfg.table.Table != "ids.snowflake_nodes" || r.cfg.table.MinNode != 512 || !r.cfg.create {
		t.Errorf("options not applied: %+v", r.cfg)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestDefaults(t *testing.T) {
	r, err := New(&sql.DB{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.cfg
	if c.ttl != time.Minute || c.table.Table != "snowflake_nodes" || c.rangeSet || c.nodeBits != 10 || c.create {
		t.Errorf("defaults = %+v", c)
	}
	if err := validOwner(r.Owner()); err != nil {
		t.Errorf("default owner %q is invalid: %v", r.Owner(), err)
	}
	other, _ := New(&sql.DB{})
	if other.Owner() == r.Owner() {
		t.Errorf("two registries share the default owner %q", r.Owner())
	}
}

func FuzzOwner(f *testing.F) {
	for _, s := range []string{"", "web-1", "a\x00b", strings.Repeat("x", 300), "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := New(&sql.DB{}, WithOwner(s))
		ok := s != "" && utf8.ValidString(s) && len(s) <= MaxOwnerLen && !strings.ContainsFunc(s, isControl)
		if (err == nil) != ok {
			t.Fatalf("WithOwner(%q) = %v, want ok=%v", s, err, ok)
		}
	})
}
