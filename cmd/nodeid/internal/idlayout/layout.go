package idlayout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/snowflake"
)

// Field is one of the three fields of an ID: its time, its node ID, or its
// step (the counter within a time unit, epoch bits included).
type Field uint8

// The fields of an ID.
const (
	FieldTime Field = iota
	FieldNode
	FieldStep
)

var fieldNames = [...]string{FieldTime: "time", FieldNode: "node", FieldStep: "step"}

func (f Field) String() string {
	if int(f) >= len(fieldNames) {
		return "field(" + strconv.Itoa(int(f)) + ")"
	}
	return fieldNames[f]
}

// FieldOrder is the order of an ID's three fields, from its most
// significant bit.
type FieldOrder [3]Field

var (
	// SnowflakeOrder is time, node, step: Twitter's, bwmarrin's, and that
	// of every snowflake.Layout, the only order the generator mints.
	SnowflakeOrder = FieldOrder{FieldTime, FieldNode, FieldStep}
	// SonyflakeOrder is time, step, node: sonyflake's.
	SonyflakeOrder = FieldOrder{FieldTime, FieldStep, FieldNode}
	// NodeFirstOrder is node, time, step: CAP's from 6.1 and Seata's, which
	// put the worker ID in the top bits.
	NodeFirstOrder = FieldOrder{FieldNode, FieldTime, FieldStep}
)

// String writes the order as --field-order takes it: "time,node,step".
func (o FieldOrder) String() string {
	return o[0].String() + "," + o[1].String() + "," + o[2].String()
}

// ParseFieldOrder reads "time,node,step" or any other order of the three
// fields, each named once.
func ParseFieldOrder(s string) (FieldOrder, error) {
	var (
		o    FieldOrder
		seen [3]bool
	)
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return o, fmt.Errorf("field order %q: name the three fields time, node and step once each, from the top of the ID, as time,node,step", s)
	}
	for i, p := range parts {
		f := -1
		for j, name := range fieldNames {
			if strings.EqualFold(strings.TrimSpace(p), name) {
				f = j
			}
		}
		if f < 0 || seen[f] {
			return o, fmt.Errorf("field order %q: name the three fields time, node and step once each, from the top of the ID, as time,node,step", s)
		}
		seen[f] = true
		o[i] = Field(f)
	}
	return o, nil
}

// IDLayout is how the commands that read IDs take one apart: the origin,
// time unit and field widths of a snowflake.Layout (which validates them),
// the order of the three fields, and whether the node field's two halves
// hold the node ID the other way round.
//
// SwapNodeHalves is for a generator with two node fields of equal width
// (a datacenter and a worker ID, 5 bits each) whose fields were given the
// node ID's halves the other way round: the upper field its low half
// ({node%32}), the lower field its high half ({node/32%32}). The ID's node
// field is then not the node ID; Decode swaps the halves back.
type IDLayout struct {
	snowflake.Layout
	Order          FieldOrder
	SwapNodeHalves bool
}

// Validate checks the layout: the widths, origin and unit as
// snowflake.Layout.Validate does, a field order that names each field once,
// and a node field of even width when its halves are swapped.
func (l IDLayout) Validate() error {
	if err := l.Layout.Validate(); err != nil {
		return err
	}
	var seen [3]bool
	for _, f := range l.Order {
		if f > FieldStep || seen[f] {
			return fmt.Errorf("layout field order %s: each of time, node and step must come once", l.Order)
		}
		seen[f] = true
	}
	if l.SwapNodeHalves && l.NodeBits%2 != 0 {
		return fmt.Errorf("layout node bits %d: swapping the node field's halves needs an even number of node bits (two fields of equal width)", l.NodeBits)
	}
	return nil
}

// Mintable reports whether the fenced generator mints IDs of the layout:
// the fields in SnowflakeOrder, the node field the node ID itself.
func (l IDLayout) Mintable() bool { return l.Order == SnowflakeOrder && !l.SwapNodeHalves }

// String describes the layout, as snowflake.Layout.String does, and its
// field order and node halves where they are not Snowflake's.
func (l IDLayout) String() string {
	s := l.Layout.String()
	if l.Order != SnowflakeOrder {
		s += ", fields from the top: " + strings.ReplaceAll(l.Order.String(), ",", ", ")
	}
	if l.SwapNodeHalves {
		s += ", node halves swapped"
	}
	return s
}

// Parse reads the decimal text of an ID of the layout, refusing one wider
// than the layout (snowflake.Layout.Parse).
func (l IDLayout) Parse(s string) (bw.ID, error) { return l.Layout.Parse(s) }

// Decode splits id into its fields; see Decoder.
func (l IDLayout) Decode(id int64) IDParts {
	d := l.Decoder()
	return d.Decode(id)
}

// IDParts are the fields of an ID. Parts.Node is the node ID: the node
// field with its halves swapped back if the layout says so.
type IDParts struct {
	snowflake.Parts
	Units     int64 // the time field: time units since the origin
	NodeField int64 // the node field as the ID holds it
}

// Decoder splits IDs of one layout into their fields, its shifts and masks
// computed once.
type Decoder struct {
	timeShift, nodeShift, stepShift uint8
	timeMask, nodeMask, stepMask    int64
	seqBits, half                   uint8
	seqMask, epochMask, halfMask    int64
	unitMs, origin                  int64
	swap                            bool
}

// Decoder returns the decoder of the layout. The layout must be valid; for
// one that is not, the fields are meaningless, but decoding does not
// panic.
func (l IDLayout) Decoder() *Decoder {
	width := map[Field]int{FieldTime: max(0, l.TimeBits()), FieldNode: int(l.NodeBits), FieldStep: int(l.StepBits)}
	shift := map[Field]int{}
	below := 0
	for i := len(l.Order) - 1; i >= 0; i-- {
		f := l.Order[i] % 3
		shift[f] = below
		below += width[f]
	}
	mask := func(bits int) int64 { return int64(1)<<min(bits, 63) - 1 }
	seqBits := max(0, l.SeqBits())
	return &Decoder{
		timeShift: uint8(min(shift[FieldTime], 63)), nodeShift: uint8(min(shift[FieldNode], 63)), stepShift: uint8(min(shift[FieldStep], 63)),
		timeMask: mask(width[FieldTime]), nodeMask: mask(width[FieldNode]), stepMask: mask(width[FieldStep]),
		seqBits: uint8(min(seqBits, 63)), seqMask: mask(seqBits), epochMask: mask(int(l.EpochBits)),
		half: l.NodeBits / 2, halfMask: mask(int(l.NodeBits / 2)),
		unitMs: max(1, int64(l.Unit()/time.Millisecond)), origin: l.Start(),
		swap: l.SwapNodeHalves,
	}
}

// Decode splits id into its fields.
func (d *Decoder) Decode(id int64) IDParts {
	units := id >> d.timeShift & d.timeMask
	field := id >> d.nodeShift & d.nodeMask
	step := id >> d.stepShift & d.stepMask
	node := field
	if d.swap {
		node = (field&d.halfMask)<<d.half | field>>d.half
	}
	return IDParts{
		Parts: snowflake.Parts{
			Ms:    units*d.unitMs + d.origin,
			Node:  node,
			Epoch: step >> d.seqBits & d.epochMask,
			Seq:   step & d.seqMask,
		},
		Units:     units,
		NodeField: field,
	}
}

// SonyflakePreset is the name of sonyflake's layout, which the commands
// that read IDs offer beside snowflake.Presets.
const SonyflakePreset = "sonyflake"

// Sonyflake is the layout of github.com/sony/sonyflake with its default
// bits: 39 time bits of 10 ms, 8 step (sequence) bits, then 16 node
// (machine ID) bits at the bottom, from version 1's default start time,
// 2014-09-01T00:00:00Z (version 2's is 2025-01-01: give --layout-origin).
var Sonyflake = IDLayout{
	Layout: snowflake.Layout{Origin: 1409529600000, TimeUnit: 10 * time.Millisecond, NodeBits: 16, StepBits: 8},
	Order:  SonyflakeOrder,
}

// layoutUse says which layout flags a command offers.
type layoutUse uint8

const (
	layoutMinting  layoutUse = iota // the generator's layouts and every field's flag (serve)
	layoutReading                   // those, sonyflake's, the field order and the node halves (decode, who, audit)
	layoutNodeBits                  // the preset and the node bits alone (run, which needs no more)
)

// LayoutFlags are the flags that choose the layout of a command's IDs:
// --layout names a preset, and each field's flag, when given, replaces
// that field of the preset. Register them with RegisterMinting,
// RegisterReading or RegisterNodeBits; Layout returns the layout,
// validated.
type LayoutFlags struct {
	use                                      layoutUse
	cmd                                      *cobra.Command
	preset, origin, epoch, order             string
	unit                                     time.Duration
	totalBits, nodeBits, stepBits, epochBits uint8
	swap                                     bool
}

// The names of the layout flags.
const (
	flagLayout      = "layout"
	flagOrigin      = "layout-origin"
	flagEpoch       = "layout-epoch" // deprecated: flagOrigin
	flagTimeUnit    = "time-unit"
	flagTotalBits   = "total-bits"
	flagNodeBits    = "node-bits"
	flagStepBits    = "step-bits"
	flagEpochBits   = "epoch-bits"
	flagFieldOrder  = "field-order"
	flagSwapHalves  = "swap-node-halves"
	presetDefault   = "bwmarrin"
	fromThePreset   = " (default: the --layout preset's)"
	deprecatedEpoch = `use --layout-origin: "epoch" names the lease's fencing token, and a layout's time zero is its origin`
)

// RegisterMinting adds the flags of a command that mints IDs: --layout
// (snowflake.Presets) and a flag for each field of snowflake.Layout.
func (f *LayoutFlags) RegisterMinting(cmd *cobra.Command) { f.register(cmd, layoutMinting) }

// RegisterReading adds the flags of a command that reads IDs: those of
// RegisterMinting, sonyflake's preset, --field-order and
// --swap-node-halves.
func (f *LayoutFlags) RegisterReading(cmd *cobra.Command) { f.register(cmd, layoutReading) }

// RegisterNodeBits adds --layout and --node-bits alone, for a command that
// needs to know only how many node IDs the layout holds; nodeBitsHelp says
// what the command does with them.
func (f *LayoutFlags) RegisterNodeBits(cmd *cobra.Command, nodeBitsHelp string) {
	f.use, f.cmd = layoutNodeBits, cmd
	f.registerPreset()
	cmd.Flags().Uint8Var(&f.nodeBits, flagNodeBits, 0, nodeBitsHelp+fromThePreset)
}

func (f *LayoutFlags) register(cmd *cobra.Command, use layoutUse) {
	f.use, f.cmd = use, cmd
	fl := cmd.Flags()
	f.registerPreset()
	fl.StringVar(&f.origin, flagOrigin, "", "time zero of the layout: unix milliseconds or an RFC 3339 time"+fromThePreset)
	fl.StringVar(&f.epoch, flagEpoch, "", "the former name of --layout-origin (deprecated)")
	_ = fl.MarkHidden(flagEpoch)
	fl.Var(&cli.DefaultedDuration{DurationValue: cli.NewDurationValue(&f.unit, 0)}, flagTimeUnit,
		"time one step of the time field stands for, 1ms to 1s"+fromThePreset)
	fl.Uint8Var(&f.totalBits, flagTotalBits, 0, fmt.Sprintf("width of an ID, at most %d; the time field takes what the others leave", snowflake.MaxTotalBits)+fromThePreset)
	fl.Uint8Var(&f.nodeBits, flagNodeBits, 0, "width of the node ID field"+fromThePreset)
	fl.Uint8Var(&f.stepBits, flagStepBits, 0, "width of the step field, epoch bits included"+fromThePreset)
	fl.Uint8Var(&f.epochBits, flagEpochBits, 0, "top bits of the step field holding the lease epoch"+fromThePreset)
	if use != layoutReading {
		return
	}
	fl.StringVar(&f.order, flagFieldOrder, "", "the fields from the top of the ID: time,node,step (Snowflake's), time,step,node (sonyflake's) or node,time,step (CAP's from 6.1, Seata's)"+fromThePreset)
	fl.BoolVar(&f.swap, flagSwapHalves, false,
		"the generator's two node fields (a datacenter and a worker ID) hold the node ID's halves the other way round: the upper its low half ({node%32}), the lower its high half ({node/32%32})")
	_ = cmd.RegisterFlagCompletionFunc(flagFieldOrder, cobra.FixedCompletions(
		[]string{SnowflakeOrder.String(), SonyflakeOrder.String(), NodeFirstOrder.String()}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *LayoutFlags) registerPreset() {
	names := f.presets()
	help := "the layout to start from: bwmarrin (63-bit IDs: 41 time bits of 1ms from 2010-11-04, 10 node bits, 12 step bits) or js53 (IDs below 2^53: 41 time bits of 1ms from 2025-01-01, 10 node bits, 2 step bits)"
	if f.use == layoutReading {
		help = "the layout to start from: bwmarrin (63-bit IDs: 41 time bits of 1ms from 2010-11-04, 10 node bits, 12 step bits), js53 (IDs below 2^53: 41 time bits of 1ms from 2025-01-01, 10 node bits, 2 step bits) or sonyflake (39 time bits of 10ms from 2014-09-01, 8 step bits, then 16 node bits)"
	}
	if f.use == layoutNodeBits {
		help += "; --node-bits replaces its node bits"
	} else {
		help += "; each field's flag given replaces that field"
	}
	f.cmd.Flags().StringVar(&f.preset, flagLayout, presetDefault, help)
	_ = f.cmd.RegisterFlagCompletionFunc(flagLayout, cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

// presets returns the names of the presets the command offers.
func (f *LayoutFlags) presets() []string {
	names := snowflake.Presets()
	if f.use == layoutReading {
		names = append(names, SonyflakePreset)
	}
	return names
}

// Preset returns the name of the preset --layout names, as given.
func (f *LayoutFlags) Preset() string { return f.preset }

// Layout returns the layout the flags describe: the preset, with the field
// of each flag given replaced, validated. A bad value is a usage error that
// names the flag, the value and the rule. The deprecated --layout-epoch
// works as --layout-origin, and says on the command's stderr that it is
// deprecated. For RegisterNodeBits, only the
// preset's name is checked here: how many node bits a command can lease is
// its registry's rule.
func (f *LayoutFlags) Layout() (IDLayout, error) {
	l, err := f.base()
	if err != nil {
		return IDLayout{}, err
	}
	fl := f.cmd.Flags()
	if fl.Changed(flagNodeBits) {
		l.NodeBits = f.nodeBits
	}
	if f.use == layoutNodeBits {
		return l, nil
	}
	switch {
	case fl.Changed(flagOrigin) && fl.Changed(flagEpoch):
		return IDLayout{}, cli.Usagef("--layout-epoch is the former name of --layout-origin: give --layout-origin alone")
	case fl.Changed(flagOrigin):
		if l.Origin, err = parseOrigin(flagOrigin, f.origin); err != nil {
			return IDLayout{}, err
		}
	case fl.Changed(flagEpoch):
		if l.Origin, err = parseOrigin(flagEpoch, f.epoch); err != nil {
			return IDLayout{}, err
		}
	}
	if fl.Changed(flagTimeUnit) {
		l.TimeUnit = f.unit
	}
	if fl.Changed(flagTotalBits) {
		l.TotalBits = f.totalBits
	}
	if fl.Changed(flagStepBits) {
		l.StepBits = f.stepBits
	}
	if fl.Changed(flagEpochBits) {
		l.EpochBits = f.epochBits
	}
	if f.use == layoutReading {
		if fl.Changed(flagFieldOrder) {
			if l.Order, err = ParseFieldOrder(f.order); err != nil {
				return IDLayout{}, cli.Usagef("--field-order: %v", err)
			}
		}
		l.SwapNodeHalves = f.swap
	}
	if err := l.Validate(); err != nil {
		return IDLayout{}, cli.Usagef("%v (the layout of %s)", err, f.given())
	}
	if fl.Changed(flagEpoch) {
		fmt.Fprintf(f.cmd.ErrOrStderr(), "nodeid: --layout-epoch is deprecated and will be removed: %s\n", deprecatedEpoch)
	}
	return l, nil
}

// base returns the preset --layout names, its origin in Origin.
func (f *LayoutFlags) base() (IDLayout, error) {
	names := f.presets()
	if f.use == layoutReading && strings.EqualFold(f.preset, SonyflakePreset) {
		return Sonyflake, nil
	}
	l, err := snowflake.Preset(f.preset)
	if err != nil {
		msg := fmt.Sprintf("--layout %q: the layouts are %s and %s", f.preset, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		if strings.EqualFold(f.preset, SonyflakePreset) {
			msg += " (sonyflake's puts the step field above the node field: decode, who and audit read it, and no nodeid command mints it)"
		}
		return IDLayout{}, cli.Usagef("%s", msg)
	}
	return IDLayout{Layout: l, Order: SnowflakeOrder}, nil
}

// Described lists the layout flags given, as "--layout js53, --node-bits
// 20", or names the default preset: "--layout bwmarrin".
func (f *LayoutFlags) Described() string { return f.given() }

// given lists the layout flags given, as "--layout js53, --node-bits 20",
// or names the default preset.
func (f *LayoutFlags) given() string {
	var out []string
	f.cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case flagLayout, flagOrigin, flagEpoch, flagTimeUnit, flagTotalBits, flagNodeBits, flagStepBits, flagEpochBits, flagFieldOrder, flagSwapHalves:
			out = append(out, "--"+fl.Name+" "+fl.Value.String())
		}
	})
	if len(out) == 0 {
		return "--layout " + presetDefault
	}
	if !f.cmd.Flags().Changed(flagLayout) {
		out = append([]string{"--layout " + presetDefault}, out...)
	}
	return strings.Join(out, ", ")
}

// parseOrigin reads unix milliseconds or an RFC 3339 time, the value of
// the flag name.
func parseOrigin(name, s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, cli.Usagef("--%s %q is neither unix milliseconds (e.g. 1288834974657) nor an RFC 3339 time (e.g. 2010-11-04T01:42:54.657Z)", name, s)
}
