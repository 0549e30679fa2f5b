package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// Output formats of list, watch, show, decode, who and version.
const (
	OutTable = "table"
	OutText  = "text" // a line for people (version)
	OutWide  = "wide"
	OutJSON  = "json"
	OutYAML  = "yaml"
)

// OutputFlag is the -o flag of a command and the formats it offers, the
// first the default.
type OutputFlag struct {
	Value   string // the format asked for
	formats []string
}

// Register adds -o to cmd.
func (o *OutputFlag) Register(cmd *cobra.Command, formats ...string) {
	o.formats = formats
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f
		if f == OutWide {
			names[i] = "wide (with exact times)"
		}
	}
	help := "output format: " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	cmd.Flags().StringVarP(&o.Value, "output", "o", formats[0], help)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// Check validates the value against the formats offered.
func (o *OutputFlag) Check() error { return checkOutput(o.Value, o.formats...) }

// Document reports whether the format is a document for programs (JSON or
// YAML) rather than a table for people.
func (o *OutputFlag) Document() bool { return o.Value == OutJSON || o.Value == OutYAML }

// checkOutput validates an -o value against the formats a command offers.
func checkOutput(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	return Usagef("-o %q: the output format must be one of %s", o, strings.Join(allowed, ", "))
}

// Table writes aligned columns. Every cell must already be printable.
type Table struct{ tw *tabwriter.Writer }

// NewTable returns a Table writing to w.
func NewTable(w io.Writer) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// Row adds a row of cells.
func (t *Table) Row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// Flush writes the rows, aligned.
func (t *Table) Flush() error { return t.tw.Flush() }

// WriteDoc writes v as an indented JSON document or as a YAML document, as
// format says.
func WriteDoc(w io.Writer, format string, v any) error {
	if format == OutYAML {
		return writeYAML(w, v)
	}
	return WriteJSON(w, v)
}

// WriteJSON writes v as indented JSON in which every non-printable
// character is escaped.
func WriteJSON(w io.Writer, v any) error {
	b, err := MarshalJSON(v, "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// MarshalJSON encodes v, indented by indent unless it is empty (then on
// one line), followed by a newline; every non-printable character is
// escaped.
func MarshalJSON(v any, indent string) ([]byte, error) {
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
// encoding: the same fields, in the same order, as yaml.Node values that
// go.yaml.in/yaml/v3 writes. Keys and strings that YAML reads as plain
// words are written bare; every other string (times, IDs, anything with
// spaces, punctuation or non-printable characters) is double-quoted.
// Numbers, booleans and null are JSON's, which are YAML's. No character
// that is not printable is written raw: the encoder escapes the control
// characters, and escapeQuoted the formatting ones it leaves (U+202E).
func writeYAML(w io.Writer, v any) error {
	js, err := encodeJSON(v, "")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	n, err := yamlNode(dec)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(escapeQuoted(b.Bytes()))
	return err
}

// yamlNode reads the next JSON value of dec as a YAML node, keeping the
// order of an object's keys.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, yamlString(k.(string)))
			}
			e, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle // {} or []
		}
		return n, nil
	case string:
		return yamlString(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// yamlPlain matches the strings YAML reads as plain words, and
// yamlReserved those of them that YAML 1.1 reads as booleans or null.
var (
	yamlPlain    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	yamlReserved = regexp.MustCompile(`^(?i:y|n|yes|no|on|off|true|false|null)$`)
)

// yamlString is s as a string node: bare if YAML reads it back as the same
// string, else double-quoted.
func yamlString(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if !yamlPlain.MatchString(s) || yamlReserved.MatchString(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}
