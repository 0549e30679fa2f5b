package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Output formats of list, watch, show, decode and who.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
)

// outputFlag is the -o flag of a command and the formats it offers, the
// first the default.
type outputFlag struct {
	value   string
	formats []string
}

// register adds -o to cmd.
func (o *outputFlag) register(cmd *cobra.Command, formats ...string) {
	o.formats = formats
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f
		if f == outWide {
			names[i] = "wide (with exact times)"
		}
	}
	help := "output format: " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	cmd.Flags().StringVarP(&o.value, "output", "o", formats[0], help)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// check validates the value against the formats offered.
func (o *outputFlag) check() error { return checkOutput(o.value, o.formats...) }

// document reports whether the format is a document for programs (JSON or
// YAML) rather than a table for people.
func (o *outputFlag) document() bool { return o.value == outJSON || o.value == outYAML }

// checkOutput validates an -o value against the formats a command offers.
func checkOutput(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	return usagef("-o %q: the output format must be one of %s", o, strings.Join(allowed, ", "))
}

// table writes aligned columns. Every cell must already be printable.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// writeDoc writes v as an indented JSON document or as a YAML document, as
// format says.
func writeDoc(w io.Writer, format string, v any) error {
	if format == outYAML {
		return writeYAML(w, v)
	}
	return writeJSON(w, v)
}

// writeJSON writes v as indented JSON in which every non-printable
// character is escaped.
func writeJSON(w io.Writer, v any) error {
	b, err := marshalJSON(v, "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// marshalJSON encodes v, indented by indent unless it is empty (then on
// one line), followed by a newline; every non-printable character is
// escaped.
func marshalJSON(v any, indent string) ([]byte, error) {
	b, err := encodeJSON(v, indent)
	return jsonSafe(b), err
}

// encodeJSON is encoding/json's encoding of v, without escaping HTML.
func encodeJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeYAML writes v as a YAML document in block style, made from its JSON
// encoding: the same fields, in the same order. Keys and strings that YAML
// reads as plain words are written bare; every other string (times, IDs,
// anything with spaces, punctuation or non-printable characters) is written
// as its JSON string, which is a YAML double-quoted scalar with the same
// value, with every non-printable character escaped (as \uXXXX, or
// \UXXXXXXXX beyond U+FFFF, which YAML has instead of surrogate pairs).
// Numbers, booleans and null are JSON's, which are YAML's.
func writeYAML(w io.Writer, v any) error {
	js, err := encodeJSON(v, "")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	n, err := readJSONNode(dec)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if n.block() {
		yamlBlock(&b, n, "", "")
	} else {
		b.WriteString(n.text + "\n")
	}
	_, err = w.Write(b.Bytes())
	return err
}

// maxYAMLKey is the longest key YAML allows in "key: value". The keys of
// the command's documents are their field names.
const maxYAMLKey = 1024

// jsonNode is a JSON value with the order of its object's keys kept.
type jsonNode struct {
	kind  byte // '{' object, '[' array, 0 scalar
	keys  []string
	elems []*jsonNode
	text  string // a scalar, as YAML writes it
}

// block reports whether n is written as an indented block: a non-empty
// object or array.
func (n *jsonNode) block() bool { return n.kind != 0 && len(n.elems) > 0 }

func readJSONNode(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: byte(t)}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := yamlString(k.(string))
				if len(key) > maxYAMLKey {
					return nil, fmt.Errorf("a key of %d characters: YAML allows at most %d", len(key), maxYAMLKey)
				}
				n.keys = append(n.keys, key)
			}
			e, err := readJSONNode(dec)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		if len(n.elems) == 0 {
			n.text = map[byte]string{'{': "{}", '[': "[]"}[n.kind]
		}
		return n, nil
	case string:
		return &jsonNode{text: yamlString(t)}, nil
	case json.Number:
		return &jsonNode{text: t.String()}, nil
	case bool:
		return &jsonNode{text: fmt.Sprint(t)}, nil
	case nil:
		return &jsonNode{text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// yamlBlock writes the non-empty object or array n, each line starting with
// pad, except the first, which starts with first.
func yamlBlock(b *bytes.Buffer, n *jsonNode, pad, first string) {
	for i, e := range n.elems {
		lead := pad
		if i == 0 {
			lead = first
		}
		if n.kind == '{' {
			b.WriteString(lead + n.keys[i] + ":")
			yamlValue(b, e, pad+"  ")
			continue
		}
		b.WriteString(lead + "-")
		if e.kind == '{' && e.block() { // "- key: value", the other keys below it
			yamlBlock(b, e, pad+"  ", " ")
			continue
		}
		yamlValue(b, e, pad+"  ")
	}
}

// yamlValue writes the value after "key:" or "-": a scalar or an empty
// collection on the same line, else a block on the next lines, indented by
// pad.
func yamlValue(b *bytes.Buffer, n *jsonNode, pad string) {
	if !n.block() {
		b.WriteString(" " + n.text + "\n")
		return
	}
	b.WriteString("\n")
	yamlBlock(b, n, pad, pad)
}

// yamlPlain matches the strings YAML reads as plain words, and
// yamlReserved those of them that YAML 1.1 reads as booleans or null.
var (
	yamlPlain    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	yamlReserved = regexp.MustCompile(`^(?i:y|n|yes|no|on|off|true|false|null)$`)
)

// yamlString writes s bare if YAML reads it back as the same string, else
// as its JSON string, a YAML double-quoted scalar, with every non-printable
// character escaped.
func yamlString(s string) string {
	if yamlPlain.MatchString(s) && !yamlReserved.MatchString(s) {
		return s
	}
	b, _ := encodeJSON(s, "") // a string always encodes
	return string(yamlSafe(bytes.TrimSuffix(b, []byte("\n"))))
}
