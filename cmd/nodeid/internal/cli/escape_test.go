package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"web-1", "web-1"},
		{"héllo wörld", "héllo wörld"},
		{"evil\x1b[2J", `"evil\x1b[2J"`},
		{"tab\there", `"tab\there"`},
		{"new\nline", `"new\nline"`},
		{"csi\u009b31m", `"csi\u009b31m"`},
		{"rtl\u202eevil", `"rtl\u202eevil"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"del\x7f", `"del\x7f"`},
		{"-", `"-"`},
		{`"quoted"`, `"\"quoted\""`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := OrDash(""); got != "-" {
		t.Errorf(`OrDash("") = %q, want "-"`, got)
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	got := OneLine("first\nsecond\r\nthird \x1b[31mred\u202e")
	if want := `first; second; third \x1b[31mred\u202e`; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}

// TestJSONSafe: the JSON output holds no raw control or formatting
// character, and still decodes to the original strings.
func TestJSONSafe(t *testing.T) {
	t.Parallel()
	owner := "a\x1b[2J\u009b31m\u202e\x7f\U000E0041z"
	var b strings.Builder
	if err := WriteJSON(&b, map[string]string{"owner": owner}); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.String() {
		if r != '\n' && (r < 0x20 || r >= 0x7f) {
			t.Fatalf("JSON output %q holds the raw character %U", b.String(), r)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	if back["owner"] != owner {
		t.Errorf("JSON round trip: %q, want %q", back["owner"], owner)
	}
}
