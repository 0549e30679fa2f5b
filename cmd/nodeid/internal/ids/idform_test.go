package ids

import (
	"strings"
	"testing"

	bw "github.com/bwmarrin/snowflake"
)

func TestParseIDForms(t *testing.T) {
	t.Parallel()
	const n = bw.ID(1805834298273538048)
	for _, tc := range []struct {
		in   string
		want bw.ID
		form idForm
	}{
		{n.String(), n, formDecimal},
		{n.Base64(), n, formBase64},
		{"dec:" + n.String(), n, formDecimal},
		{"b58:" + n.Base58(), n, formBase58},
		{"b64:" + n.Base64(), n, formBase64},
		{"0", 0, formDecimal},
		{"9223372036854775807", 1<<63 - 1, formDecimal},
		{"b58:234", bw.ID(1*58*58 + 2*58 + 3), formBase58}, // digits only: decimal unless forced
		{"123", 123, formDecimal},
		{"b64:MTEx", 111, formBase64},
		{"b58:MTEx", mustBase58(t, "MTEx"), formBase58},
	} {
		id, form, err := parseID(tc.in, formAuto)
		if err != nil || id != tc.want || form != tc.form {
			t.Errorf("parseID(%q) = %d, %s, %v; want %d, %s", tc.in, id, form, err, tc.want, tc.form)
		}
	}
}

// TestParseIDFormat: --format reads every ID in its form, except those
// whose prefix names another.
func TestParseIDFormat(t *testing.T) {
	t.Parallel()
	const n = bw.ID(1805834298273538048)
	for _, tc := range []struct {
		in, format string
		want       bw.ID
		form       idForm
	}{
		{n.Base58(), "b58", n, formBase58},
		{"234", "b58", bw.ID(1*58*58 + 2*58 + 3), formBase58},
		{"MTEx", "b64", 111, formBase64},
		{"MTEx", "b58", mustBase58(t, "MTEx"), formBase58},
		{"123", "dec", 123, formDecimal},
		{"b64:" + n.Base64(), "b58", n, formBase64},
		{"dec:77", "b64", 77, formDecimal},
		{n.String(), "auto", n, formDecimal},
	} {
		var f formatFlag
		if err := f.Set(tc.format); err != nil {
			t.Fatal(err)
		}
		id, form, err := parseID(tc.in, f.form)
		if err != nil || id != tc.want || form != tc.form {
			t.Errorf("parseID(%q) with --format %s = %d, %s, %v; want %d, %s", tc.in, tc.format, id, form, err, tc.want, tc.form)
		}
		if f.String() != tc.format {
			t.Errorf("--format %s reads back as %q", tc.format, f.String())
		}
	}
	for _, tc := range []struct{ in, format, want string }{
		{"5WoiFjbTMNG", "dec", `ID "5WoiFjbTMNG" as decimal: decimal IDs are made of digits 0-9 only`},
		{"123", "b64", `ID "123" as Base64: malformed`},
		{"0", "b58", `ID "0" as Base58: character '0' is not in the Base58 alphabet`},
	} {
		var f formatFlag
		if err := f.Set(tc.format); err != nil {
			t.Fatal(err)
		}
		if _, _, err := parseID(tc.in, f.form); err == nil || err.Error() != tc.want {
			t.Errorf("parseID(%q) with --format %s: error %v, want %q", tc.in, tc.format, err, tc.want)
		}
	}
	var f formatFlag
	if err := f.Set("hex"); err == nil || !strings.Contains(err.Error(), `"hex" is not a form: write auto, dec, b58 or b64`) {
		t.Errorf("--format hex: %v", err)
	}
}

func mustBase58(t *testing.T, s string) bw.ID {
	t.Helper()
	id, err := bw.ParseBase58([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestParseIDRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"-5", "negative"},
		{"9223372036854775808", "out of range"},
		{"MTEx", "ambiguous"}, // Base64 of "111" and valid Base58
		// Base58, but only when asked for.
		{"notanumber", `ID "notanumber" is neither decimal nor Base64; as Base58 it would be `},
		{"notanumber", "write b58:notanumber or pass --format b58"},
		{"5WoiFjbTMNG", "Base58 is read only when asked for"},
		{"x-y", "not a Snowflake ID"},
		{"0OIl", "not a Snowflake ID"},
		{"b58:0", "not in the Base58 alphabet"},
		{"b58:11", "leading"},
		{"b58:zzzzzzzzzzzzzzz", "out of range"},
		{"b64:YWJj", "does not hold a decimal ID"}, // "abc"
		{"b64:MDE=", "does not hold a decimal ID"}, // "01": not canonical decimal
		{"b64:MTEx=", "malformed"},
		{"dec:12a", "digits 0-9 only"},
		{" 1", "not a Snowflake ID"},
		{"1\x1b[2J", "not a Snowflake ID"},
	} {
		_, _, err := parseID(tc.in, formAuto)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseID(%q) error = %v; want one containing %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseID: parseID never panics, reads no unprefixed string as Base58
// unless asked, and an ID it accepts reads back the same from each of its
// canonical forms.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "1805834298273538048", "5c88ARToPt7", "MTgwNTgzNDI5ODI3MzUzODA0OA==",
		"MTEx", "b58:234", "b64:MTEx", "dec:7", "-1", "", "zzzzzzzzzzzz", "=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, form, err := parseID(s, formAuto)
		if err != nil {
			if !strings.Contains(err.Error(), "ID") {
				t.Errorf("error %q does not say what was wrong with the ID", err)
			}
			return
		}
		if id < 0 {
			t.Fatalf("parseID(%q) = %d: negative", s, id)
		}
		if form == formBase58 && !strings.HasPrefix(s, "b58:") {
			t.Fatalf("parseID(%q) read Base58 unasked", s)
		}
		for _, p := range []string{"dec:" + id.String(), "b58:" + id.Base58(), "b64:" + id.Base64()} {
			back, _, err := parseID(p, formAuto)
			if err != nil || back != id {
				t.Fatalf("parseID(%q) = %d (%s), but %q reads as %d, %v", s, id, form, p, back, err)
			}
		}
	})
}
