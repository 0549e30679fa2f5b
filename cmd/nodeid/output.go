package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Output formats of list, show, decode and who.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
)

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

// writeJSON writes v as indented JSON in which every non-printable
// character is escaped.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}
