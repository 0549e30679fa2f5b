package main

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/postgres"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want nodeRange
		err  string
	}{
		{"0-1023", nodeRange{0, 1023}, ""},
		{"5-5", nodeRange{5, 5}, ""},
		{"0-1048575", nodeRange{0, postgres.MaxNode}, ""},
		{"5-1", nodeRange{}, "above the last"},
		{"1-1048576", nodeRange{}, "out of range"},
		{"-1-5", nodeRange{}, "first node ID"},
		{"1-", nodeRange{}, "empty"},
		{"7", nodeRange{}, "FIRST-LAST"},
		{"a-b", nodeRange{}, "not a whole number"},
		{"1 - 2", nodeRange{}, "not a whole number"},
		{"99999999999999999999-1", nodeRange{}, "out of range"},
	} {
		got, err := parseRange(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseRange(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseRange(%q) error = %v; want one containing %q", tc.in, err, tc.err)
		}
	}
}

// FuzzParseRange: parseRange never panics, accepts only valid ranges, and
// reads back what it prints.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-1023", "5-1", "-", "1-1048576", "0-0", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRange(s)
		if err != nil {
			return
		}
		if err := postgres.ValidateRange(r.lo, r.hi); err != nil {
			t.Fatalf("parseRange(%q) = %v, an invalid range: %v", s, r, err)
		}
		if back, err := parseRange(r.String()); err != nil || back != r {
			t.Fatalf("parseRange(%q) = %v, which reads back as %v, %v", s, r, back, err)
		}
	})
}
