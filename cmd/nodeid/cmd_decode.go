package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/snowflake"
)

// decoded is one ID split into its fields.
type decoded struct {
	Input  string    `json:"input"`
	Form   idForm    `json:"form"`
	ID     string    `json:"id"` // a string: JSON numbers lose precision above 2^53
	Base58 string    `json:"base58"`
	Base64 string    `json:"base64"`
	Time   time.Time `json:"time"`
	UnixMs int64     `json:"unix_ms"`
	Node   int64     `json:"node"`
	Step   int64     `json:"step"`
	// EpochBits is the lease epoch modulo 2^EpochBits; null when the layout
	// has no epoch bits.
	EpochBits *int64 `json:"epoch_bits"`

	parts snowflake.Parts
}

// decodeArgs validates the layout flags and the output format, and decodes
// the IDs of the arguments, read in form (see parseID): the common prologue
// of decode and who. The first malformed ID is a usage error.
func decodeArgs(lf *layoutFlags, form idForm, output *outputFlag, args []string) (snowflake.Layout, []decoded, error) {
	l, err := lf.layout()
	if err != nil {
		return l, nil, err
	}
	if err := output.check(); err != nil {
		return l, nil, err
	}
	out := make([]decoded, 0, len(args))
	for _, s := range args {
		id, f, err := parseID(s, form)
		if err != nil {
			return l, nil, usage(err)
		}
		out = append(out, decodeID(s, f, id, l))
	}
	return l, out, nil
}

func decodeID(input string, form idForm, id bw.ID, l snowflake.Layout) decoded {
	p := l.Decode(id)
	d := decoded{
		Input: input, Form: form, ID: id.String(), Base58: id.Base58(), Base64: id.Base64(),
		Time: time.UnixMilli(p.Ms).UTC(), UnixMs: p.Ms, Node: p.Node, Step: p.Seq, parts: p,
	}
	if l.EpochBits > 0 {
		e := p.Epoch
		d.EpochBits = &e
	}
	return d
}

// readAs says how the ID was read: "read as decimal", or "read as Base58
// from 5WoiFjbTMNG" when the input was not the decimal ID itself.
func (d decoded) readAs() string {
	s := "read as " + d.Form.name()
	if d.Input != d.ID {
		s += " from " + printable(d.Input)
	}
	return s
}

// describeLayout is a one-line description of a layout.
func describeLayout(l snowflake.Layout) string {
	return fmt.Sprintf("layout: epoch %d (%s), %d time bits, %d node bits, %d step bits of which %d epoch bits",
		l.Epoch, exactMs(l.Epoch), l.TimeBits(), l.NodeBits, l.StepBits, l.EpochBits)
}

// writeFields prints the fields of d as aligned "name value" lines,
// indented.
func (a *app) writeFields(t *table, d decoded, l snowflake.Layout) {
	t.row("  time UTC", exact(d.Time))
	t.row("  time local", d.Time.In(a.loc).Format("2006-01-02T15:04:05.000-07:00 MST"))
	t.row("  unix ms", strconv.FormatInt(d.UnixMs, 10))
	t.row("  node", strconv.FormatInt(d.Node, 10))
	t.row("  step", strconv.FormatInt(d.Step, 10))
	if d.EpochBits != nil {
		t.row("  epoch bits", fmt.Sprintf("%d (the claim's epoch modulo %d)", *d.EpochBits, int64(1)<<l.EpochBits))
	} else {
		t.row("  epoch bits", "none (the layout has 0 epoch bits)")
	}
}

func (a *app) decodeCommand() *cobra.Command {
	var (
		lf     layoutFlags
		ff     formatFlag
		output outputFlag
	)
	cmd := &cobra.Command{
		Use:   "decode ID...",
		Short: "Split Snowflake IDs into time, node, step and epoch bits",
		Long: `Split each ID into its time (UTC and local), node ID, step (the counter within
the millisecond) and, if the layout has them, epoch bits (the claim's epoch
modulo 2^--epoch-bits). The layout flags must match the generator's
(snowflake.WithLayout); the defaults are github.com/bwmarrin/snowflake's.
Needs no database.

` + idFormRules,
		Example: `  nodeid decode 1805834298273538048
  nodeid decode MTgwNTgzNDI5ODI3MzUzODA0OA== b58:3K4aSBmBfy1
  nodeid decode --format b58 3K4aSBmBfy1 5WoiFjbTMNG
  nodeid decode --node-bits 12 --step-bits 10 --epoch-bits 2 -o json 1805834298273538048`,
		Args: minArgs(1, "one or more IDs"),
		RunE: a.action(func(_ *cobra.Command, args []string) error {
			l, ds, err := decodeArgs(&lf, ff.form, &output, args)
			if err != nil {
				return err
			}
			if output.document() {
				return writeDoc(a.stdout, output.value, ds)
			}
			return a.writeDecoded(a.stdout, ds, l)
		}),
	}
	lf.register(cmd)
	ff.register(cmd)
	output.register(cmd, outTable, outJSON, outYAML)
	return cmd
}

func (a *app) writeDecoded(w io.Writer, ds []decoded, l snowflake.Layout) error {
	fmt.Fprintln(w, describeLayout(l))
	for _, d := range ds {
		fmt.Fprintf(w, "\n%s (%s; Base58 %s, Base64 %s)\n", d.ID, d.readAs(), d.Base58, d.Base64)
		t := newTable(w)
		a.writeFields(t, d, l)
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
