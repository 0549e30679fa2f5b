package cli

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30s", 30 * time.Second, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"0s", 0, ""},
		{"", 0, "empty"},
		{"-5s", 0, "negative"},
		{"5", 0, "not a duration"},
		{"1.5d", 0, "whole number"},
		{"d", 0, "whole number"},
		{"1d-1h", 0, "sign"},
		{"999999999d", 0, "too long"},
		{"106751d24h", 0, "too long"},
		{"soon", 0, "not a duration"},
	} {
		got, err := ParseDuration(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseDuration(%q) error = %v; want one containing %q", tc.in, err, tc.err)
		}
	}
}

// FuzzParseDuration: parseDuration never panics, never returns a negative
// duration, and reads Go's own rendering of what it returns back the same.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "7d", "1d12h", "-1s", "d", "106751d", "1.5h", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative", s, d)
		}
		if back, err := ParseDuration(d.String()); err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, which reads back as %v, %v", s, d, back, err)
		}
	})
}
