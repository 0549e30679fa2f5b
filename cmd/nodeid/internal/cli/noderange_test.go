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

func TestCountAndNodeBits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 65536: "65,536", 1048576: "1,048,576", -1234: "-1,234"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if MaxNodeOf(MaxNodeBits) != postgres.MaxNode {
		t.Errorf("MaxNodeOf(MaxNodeBits) = %d, want postgres.MaxNode %d", MaxNodeOf(MaxNodeBits), postgres.MaxNode)
	}
	if MaxNodeOf(10) != postgres.DefaultMaxNode {
		t.Errorf("MaxNodeOf(10) = %d, want %d", MaxNodeOf(10), postgres.DefaultMaxNode)
	}
	for n, want := range map[int64]int{0: 1, 1: 1, 2: 2, 1023: 10, 1024: 11, 99999: 17, postgres.MaxNode: 20} {
		if got := bitsFor(n); got != want {
			t.Errorf("bitsFor(%d) = %d, want %d", n, got, want)
		}
	}
}
