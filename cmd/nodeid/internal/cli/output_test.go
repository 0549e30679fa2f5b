package cli_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestWriteYAML: the YAML says what the JSON says, strings that YAML would
// read as something else included, and no control character is printed
// raw.
func TestWriteYAML(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name string   `json:"name"`
		List []string `json:"list"`
	}
	ms := int64(1795991082173)
	v := map[string]any{"zz": 1} // a map: keys sorted by encoding/json
	doc := struct {
		Words    []string       `json:"words"`
		Number   int64          `json:"number"`
		Negative int            `json:"negative"`
		Bool     bool           `json:"bool"`
		Null     *int64         `json:"null"`
		Ptr      *int64         `json:"ptr"`
		Time     time.Time      `json:"time"`
		Empty    []inner        `json:"empty"`
		EmptyMap map[string]int `json:"empty_map"`
		Inners   []inner        `json:"inners"`
		Nested   [][]int        `json:"nested"`
		Map      map[string]any `json:"map"`
		Odd      map[string]int `json:"odd keys"`
	}{
		Words: []string{"held", "web-1", "snowflake_nodes", "yes", "No", "ON", "null", "true", "~", "", "-", "- x",
			"a: b", "#c", "x #y", "12", "0x1F", "1e3", ".inf", "2127166819683794944", "2026-11-29T22:24:42.173Z",
			"it's", `say "hi"`, "two\nlines", "tab\there", "evil\x1b[2J\x1b]0;t\x07", "rtl\u202eoverride", "c1\u009bcsi",
			"emoji 🙂", "bad utf8 \xff", "{a}", "[b]", "*ref", "&anchor", "!tag", "%dir", "@at", "`tick`", "|", ">"},
		Number: 1 << 62, Negative: -5, Bool: true, Ptr: &ms,
		Time:     time.Date(2026, 11, 29, 22, 24, 42, 173000000, time.UTC),
		Empty:    []inner{},
		EmptyMap: map[string]int{},
		Inners:   []inner{{Name: "a", List: []string{"x", "y"}}, {Name: "b", List: []string{}}},
		Nested:   [][]int{{1, 2}, {}, {3}},
		Map:      map[string]any{"b": v, "a": []any{map[string]any{}, []any{}}},
		Odd:      map[string]int{"a b": 1, "yes": 2, "": 3},
	}
	var y, j bytes.Buffer
	if err := cli.WriteDoc(&y, cli.OutYAML, doc); err != nil {
		t.Fatal(err)
	}
	if err := cli.WriteJSON(&j, doc); err != nil {
		t.Fatal(err)
	}
	t.Logf("YAML:\n%s", y.String())
	clitest.SameAsJSON(t, y.String(), j.String())
	clitest.NoControls(t, y.String())
	for _, want := range []string{"\n  - held\n", "\n  - web-1\n", "\n  - \"yes\"\n", "\nnumber: 4611686018427387904\n",
		"\ninners:\n  - name: a\n    list:\n      - x\n      - \"y\"\n  - name: b\n    list: []\n"} {
		if !strings.Contains(y.String(), want) {
			t.Errorf("the YAML lacks %q", want)
		}
	}

	// A key longer than YAML's 1024 characters of a simple key is still
	// a document that reads back the same, not a broken one.
	y.Reset()
	j.Reset()
	long := map[string]int{strings.Repeat("k", 1025): 1}
	if err := cli.WriteDoc(&y, cli.OutYAML, long); err != nil {
		t.Fatal(err)
	}
	_ = cli.WriteJSON(&j, long)
	clitest.SameAsJSON(t, y.String(), j.String())

	// Documents that are not objects.
	for _, v := range []any{[]int{}, []string{"a"}, "yes", 7, nil, []any{[]any{map[string]int{"k": 1}}}} {
		y.Reset()
		j.Reset()
		if err := cli.WriteDoc(&y, cli.OutYAML, v); err != nil {
			t.Fatal(err)
		}
		_ = cli.WriteJSON(&j, v)
		clitest.SameAsJSON(t, y.String(), j.String())
	}
}

// FuzzWriteYAML: any string, as a key or a value, reads back from the YAML
// as the same string as from the JSON, and nothing non-printable is
// written raw: it tests the choice of quoting and escapeQuoted, the part of
// the writer that is not the YAML encoder's.
func FuzzWriteYAML(f *testing.F) {
	for _, s := range []string{"held", "yes", "", "- x", "a: b", "12", "\x1b[2J", "\u202e", "\xff", "~", "null", "N", "1e3", "#", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{"key": s, s: []string{s}}
		var y, j bytes.Buffer
		if err := cli.WriteDoc(&y, cli.OutYAML, v); err != nil {
			t.Fatal(err)
		}
		if err := cli.WriteJSON(&j, v); err != nil {
			t.Fatal(err)
		}
		clitest.SameAsJSON(t, y.String(), j.String())
		clitest.NoControls(t, y.String())
	})
}
