package ids

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
)

// layoutRules documents the layout flags of decode and who.
const layoutRules = `The layout must be the generator's. --layout names a preset: bwmarrin (the
default: github.com/bwmarrin/snowflake's, and the fenced generator's
snowflake.DefaultLayout), js53 (snowflake.JS53, IDs below 2^53) or sonyflake
(github.com/sony/sonyflake's defaults); each field's flag given replaces
that field of it (--layout-origin, --time-unit, --total-bits, --node-bits,
--step-bits, --epoch-bits, --field-order). A generator with two 5-bit node
fields (a datacenter and a worker ID) whose upper field was given the node
ID's low half, {node%32}, writes a node field that is not the node ID
(node ID 40 reads 257): --swap-node-halves reads it back.`

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
	// NodeField is the node field as the ID holds it, when the layout
	// swaps its halves (--swap-node-halves); Node is then the node ID.
	NodeField *int64 `json:"node_field,omitempty"`
	Step      int64  `json:"step"`
	// EpochBits is the lease epoch modulo 2^EpochBits; null when the layout
	// has no epoch bits.
	EpochBits *int64 `json:"epoch_bits"`

	parts idlayout.IDParts
}

// idArgs are what decode and who share: the layout flags, the form of the
// IDs, the output format, and the IDs.
type idArgs struct {
	Layout idlayout.LayoutFlags
	Format formatFlag
	Output cli.OutputFlag
	Args   []string // the IDs, as given

	layout idlayout.IDLayout // validated by Validate
	ids    []decoded         // read by Validate
}

func (a *idArgs) register(cmd *cobra.Command) {
	a.Layout.RegisterReading(cmd)
	a.Format.register(cmd)
	a.Output.Register(cmd, cli.OutTable, cli.OutJSON, cli.OutYAML)
}

// Validate validates the layout flags and the output format, and decodes
// the IDs, read in their form (see parseID). The first malformed ID, or one
// wider than the layout, is a usage error.
func (a *idArgs) Validate() error {
	l, err := a.Layout.Layout()
	if err != nil {
		return err
	}
	if err := a.Output.Check(); err != nil {
		return err
	}
	out := make([]decoded, 0, len(a.Args))
	for _, s := range a.Args {
		id, f, err := parseID(s, a.Format.form)
		if err != nil {
			return cli.Usage(err)
		}
		if w := l.Width(); id.Int64()>>w != 0 {
			return cli.Usagef("ID %s (read as %s from %s) does not fit the layout: its IDs are %d bits wide, at most %d",
				id, f.name(), cli.Printable(s), w, uint64(1)<<w-1)
		}
		out = append(out, decodeID(s, f, id, l))
	}
	a.layout, a.ids = l, out
	return nil
}

func decodeID(input string, form idForm, id bw.ID, l idlayout.IDLayout) decoded {
	p := l.Decode(id.Int64())
	d := decoded{
		Input: input, Form: form, ID: id.String(), Base58: id.Base58(), Base64: id.Base64(),
		Time: time.UnixMilli(p.Ms).UTC(), UnixMs: p.Ms, Node: p.Node, Step: p.Seq, parts: p,
	}
	if l.SwapNodeHalves {
		f := p.NodeField
		d.NodeField = &f
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
		s += " from " + cli.Printable(d.Input)
	}
	return s
}

// describeLayout is a one-line description of a layout.
func describeLayout(l idlayout.IDLayout) string { return "layout: " + l.String() }

// writeFields prints the fields of d as aligned "name value" lines,
// indented, with local times in loc.
func writeFields(t *cli.Table, d decoded, l idlayout.IDLayout, loc *time.Location) {
	t.Row("  time UTC", cli.Exact(d.Time))
	t.Row("  time local", d.Time.In(loc).Format("2006-01-02T15:04:05.000-07:00 MST"))
	t.Row("  unix ms", strconv.FormatInt(d.UnixMs, 10))
	if d.NodeField != nil {
		h := int64(1) << (l.NodeBits / 2)
		t.Row("  node", fmt.Sprintf("%d (the node field reads %d: upper half %d, lower half %d, swapped by --swap-node-halves)",
			d.Node, *d.NodeField, *d.NodeField/h, *d.NodeField%h))
	} else {
		t.Row("  node", strconv.FormatInt(d.Node, 10))
	}
	t.Row("  step", strconv.FormatInt(d.Step, 10))
	if d.EpochBits != nil {
		t.Row("  epoch bits", fmt.Sprintf("%d (the claim's epoch modulo %d)", *d.EpochBits, int64(1)<<l.EpochBits))
	} else {
		t.Row("  epoch bits", "none (the layout has 0 epoch bits)")
	}
}

// DecodeOptions are the arguments and flags of decode.
type DecodeOptions struct {
	Env *cli.Env
	idArgs
}

// NewCmdDecode returns "nodeid decode". runF, if not nil, runs instead of
// the command's own work once the options are valid.
func NewCmdDecode(env *cli.Env, runF func(context.Context, *DecodeOptions) error) *cobra.Command {
	o := &DecodeOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "decode ID...",
		Short: "Split Snowflake IDs into time, node, step and epoch bits",
		Long: `Split each ID into its time (UTC and local), node ID, step (the counter within
the time unit) and, if the layout has them, epoch bits (the claim's epoch
modulo 2^--epoch-bits). Needs no database.

` + layoutRules + `

` + idFormRules,
		Example: `  nodeid decode 1805834298273538048
  nodeid decode MTgwNTgzNDI5ODI3MzUzODA0OA== b58:3K4aSBmBfy1
  nodeid decode --format b58 3K4aSBmBfy1 5WoiFjbTMNG
  nodeid decode --layout js53 -o json 129171456000029
  nodeid decode --layout sonyflake 600114305433665578
  nodeid decode --swap-node-halves 1805834298273566727   # node ID 40, its upper 5-bit field given {node%32}
  nodeid decode --node-bits 12 --step-bits 10 --epoch-bits 2 -o json 1805834298273538048`,
		Args: cli.MinArgs(1, "one or more IDs"),
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, _ *cli.Conn) error {
			o.Args = args
			return cli.Run(cmd.Context(), o, runF, decodeRun)
		}),
	}
	o.register(cmd)
	return cmd
}

func decodeRun(_ context.Context, o *DecodeOptions) error {
	if o.Output.Document() {
		return cli.WriteDoc(o.Env.Out, o.Output.Value, o.ids)
	}
	return writeDecoded(o.Env.Out, o.ids, o.layout, o.Env.Loc)
}

func writeDecoded(w io.Writer, ds []decoded, l idlayout.IDLayout, loc *time.Location) error {
	fmt.Fprintln(w, describeLayout(l))
	for _, d := range ds {
		fmt.Fprintf(w, "\n%s (%s; Base58 %s, Base64 %s)\n", d.ID, d.readAs(), d.Base58, d.Base64)
		t := cli.NewTable(w)
		writeFields(t, d, l, loc)
		if err := t.Flush(); err != nil {
			return err
		}
	}
	return nil
}
