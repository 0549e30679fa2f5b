package cli

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/postgres"
)

func TestParseRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want NodeRange
		err  string
	}{
		{"0-1023", NodeRange{0, 1023}, ""},
		{"5-5", NodeRange{5, 5}, ""},
		{"0-1048575", NodeRange{0, postgres.MaxNode}, ""},
		{"5-1", NodeRange{}, "above the last"},
		{"1-1048576", NodeRange{}, "out of range"},
		{"-1-5", NodeRange{}, "first node ID"},
		{"1-", NodeRange{}, "empty"},
		{"7", NodeRange{}, "FIRST-LAST"},
		{"a-b", NodeRange{}, "not a whole number"},
		{"1 - 2", NodeRange{}, "not a whole number"},
		{"99999999999999999999-1", NodeRange{}, "out of range"},
	} {
		got, err := ParseRange(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseRange(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseRange(%q) error = %v; want one containing %q", tc.in, err, tc.err)
		}
	}
}

// FuzzParseRange: ParseRange never panics, accepts only valid ranges, and
// reads back what it prints.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-1023", "5-1", "-", "1-1048576", "0-0", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			return
		}
		if r.Lo < 0 || r.Lo > r.Hi || r.Hi > postgres.MaxNode {
			t.Fatalf("ParseRange(%q) = %v, an invalid range", s, r)
		}
		if back, err := ParseRange(r.String()); err != nil || back != r {
			t.Fatalf("ParseRange(%q) = %v, which reads back as %v, %v", s, r, back, err)
		}
	})
}
