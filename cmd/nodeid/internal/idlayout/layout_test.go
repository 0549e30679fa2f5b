package idlayout

import (
	"strings"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/snowflake"
)

// layoutOf parses args as the flags of a command that registered the
// layout flags with register, and returns Layout's answer.
func layoutOf(t *testing.T, register func(*LayoutFlags, *cobra.Command), args ...string) (IDLayout, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "x"}
	var f LayoutFlags
	register(&f, cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f.Layout()
}

func reading(f *LayoutFlags, c *cobra.Command) { f.RegisterReading(c) }
func minting(f *LayoutFlags, c *cobra.Command) { f.RegisterMinting(c) }

func TestLayoutFlags(t *testing.T) {
	t.Parallel()
	bwm := snowflake.DefaultLayout
	for _, c := range []struct {
		args []string
		want IDLayout
	}{
		{nil, IDLayout{Layout: snowflake.Layout{Origin: snowflake.TwitterOrigin, NodeBits: 10, StepBits: 12}, Order: SnowflakeOrder}},
		{[]string{"--layout", "js53"}, IDLayout{Layout: snowflake.JS53, Order: SnowflakeOrder}},
		{[]string{"--layout", "JS53", "--node-bits", "8", "--step-bits", "4"},
			IDLayout{Layout: snowflake.Layout{Origin: snowflake.JS53.Origin, TotalBits: 53, NodeBits: 8, StepBits: 4}, Order: SnowflakeOrder}},
		{[]string{"--layout-origin", "2016-11-01T00:00:00Z"}, IDLayout{Layout: snowflake.Layout{Origin: 1477958400000, NodeBits: 10, StepBits: 12}, Order: SnowflakeOrder}},
		{[]string{"--layout-epoch", "1477958400000"}, IDLayout{Layout: snowflake.Layout{Origin: 1477958400000, NodeBits: 10, StepBits: 12}, Order: SnowflakeOrder}},
		{[]string{"--node-bits", "6", "--step-bits", "6", "--epoch-bits", "1", "--time-unit", "10ms", "--total-bits", "60"},
			IDLayout{Layout: snowflake.Layout{Origin: bwm.Start(), TimeUnit: 10 * time.Millisecond, TotalBits: 60, NodeBits: 6, StepBits: 6, EpochBits: 1}, Order: SnowflakeOrder}},
		{[]string{"--layout", "sonyflake"}, Sonyflake},
		{[]string{"--layout", "sonyflake", "--layout-origin", "2025-01-01T00:00:00Z"},
			IDLayout{Layout: snowflake.Layout{Origin: 1735689600000, TimeUnit: 10 * time.Millisecond, NodeBits: 16, StepBits: 8}, Order: SonyflakeOrder}},
		{[]string{"--field-order", "node,time,step"}, IDLayout{Layout: snowflake.Layout{Origin: bwm.Start(), NodeBits: 10, StepBits: 12}, Order: NodeFirstOrder}},
		{[]string{"--swap-node-halves"}, IDLayout{Layout: snowflake.Layout{Origin: bwm.Start(), NodeBits: 10, StepBits: 12}, Order: SnowflakeOrder, SwapNodeHalves: true}},
	} {
		got, err := layoutOf(t, reading, c.args...)
		if err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
	for _, c := range []struct {
		register func(*LayoutFlags, *cobra.Command)
		args     []string
		says     []string
	}{
		{reading, []string{"--layout", "twitter"}, []string{`--layout "twitter"`, "the layouts are bwmarrin, js53 and sonyflake"}},
		{minting, []string{"--layout", "sonyflake"}, []string{`--layout "sonyflake"`, "the layouts are bwmarrin and js53", "no nodeid command mints it"}},
		{reading, []string{"--layout", "js53", "--node-bits", "20"}, []string{"node bits 20 + step bits 2 leave 31 time bits of 53", "(the layout of --layout js53, --node-bits 20)"}},
		{reading, []string{"--node-bits", "40"}, []string{"time bits", "(the layout of --layout bwmarrin, --node-bits 40)"}},
		{reading, []string{"--epoch-bits", "12"}, []string{"epoch bits 12 leave 0 of the 12 step bits"}},
		{reading, []string{"--layout-origin", "yesterday"}, []string{`--layout-origin "yesterday" is neither unix milliseconds`}},
		{reading, []string{"--layout-epoch", "yesterday"}, []string{`--layout-epoch "yesterday"`}},
		{reading, []string{"--layout-origin", "1", "--layout-epoch", "1"}, []string{"--layout-epoch is the former name of --layout-origin"}},
		{reading, []string{"--layout-origin", "4000000000000000"}, []string{"in the future"}},
		{reading, []string{"--time-unit", "1500us"}, []string{"time unit 1.5ms is not a whole number of milliseconds"}},
		{reading, []string{"--total-bits", "64"}, []string{"total bits 64: at most 63"}},
		{reading, []string{"--field-order", "time,node"}, []string{`--field-order: field order "time,node"`, "once each"}},
		{reading, []string{"--field-order", "time,time,step"}, []string{"once each"}},
		{reading, []string{"--swap-node-halves", "--node-bits", "11", "--step-bits", "11"}, []string{"node bits 11: swapping the node field's halves needs an even number"}},
	} {
		_, err := layoutOf(t, c.register, c.args...)
		if err == nil || cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: %v, want a usage error", c.args, err)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v: %q does not say %q", c.args, err, s)
			}
		}
	}
	// The node bits alone: a preset's name is checked, the bits are the
	// registry's to judge.
	nodeBits := func(f *LayoutFlags, c *cobra.Command) { f.RegisterNodeBits(c, "width") }
	if l, err := layoutOf(t, nodeBits, "--layout", "js53", "--node-bits", "20"); err != nil || l.NodeBits != 20 || l.TotalBits != 53 {
		t.Errorf("node bits only: %+v, %v", l, err)
	}
	if _, err := layoutOf(t, nodeBits, "--layout", "sonyflake"); err == nil {
		t.Error("run's --layout sonyflake accepted")
	}
}

// TestLayoutEpochDeprecated: --layout-epoch is hidden and says, when used,
// that it is deprecated.
func TestLayoutEpochDeprecated(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	var f LayoutFlags
	f.RegisterReading(cmd)
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--layout-epoch", "0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Layout(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nodeid: --layout-epoch is deprecated and will be removed: use --layout-origin") {
		t.Errorf("using --layout-epoch says %q", out.String())
	}
	if strings.Contains(cmd.Flags().FlagUsages(), "layout-epoch") {
		t.Errorf("--layout-epoch is in the help:\n%s", cmd.Flags().FlagUsages())
	}
}

// TestDecoderMatchesSnowflake: in Snowflake's order, the decoder agrees
// with snowflake.Layout.Decode, which the generator's IDs follow.
func FuzzDecoderMatchesSnowflake(f *testing.F) {
	f.Add(int64(1805834298273538048), uint8(10), uint8(12), uint8(0), uint8(0), uint16(1))
	f.Add(int64(1)<<52+12345, uint8(10), uint8(2), uint8(1), uint8(53), uint16(1))
	f.Add(int64(987654321), uint8(16), uint8(8), uint8(2), uint8(0), uint16(10))
	f.Fuzz(func(t *testing.T, id int64, nodeBits, stepBits, epochBits, totalBits uint8, unitMs uint16) {
		l := IDLayout{Layout: snowflake.Layout{Origin: snowflake.TwitterOrigin, TimeUnit: time.Duration(unitMs) * time.Millisecond,
			TotalBits: totalBits, NodeBits: nodeBits, StepBits: stepBits, EpochBits: epochBits}, Order: SnowflakeOrder}
		if l.Validate() != nil || id < 0 || id>>l.Width() != 0 {
			return
		}
		got, want := l.Decode(id), l.Layout.Decode(bw.ID(id))
		if got.Parts != want || got.NodeField != want.Node {
			t.Errorf("%s: ID %d decodes to %+v, snowflake says %+v", l, id, got, want)
		}
	})
}

func TestDecoderOrders(t *testing.T) {
	t.Parallel()
	// sonyflake: time << (8+16) | sequence << 16 | machine.
	sony := int64(123456)<<24 | int64(7)<<16 | 65000
	if p := Sonyflake.Decode(sony); p.Units != 123456 || p.Ms != 1409529600000+1234560 || p.Seq != 7 || p.Node != 65000 {
		t.Errorf("sonyflake: %+v", p)
	}
	// CAP from 6.1: worker << 53 | (ms - Twitter origin) << 12 | sequence.
	l := IDLayout{Layout: snowflake.Layout{Origin: snowflake.TwitterOrigin, NodeBits: 10, StepBits: 12}, Order: NodeFirstOrder}
	cap := int64(1000)<<53 | int64(5000)<<12 | 9
	if p := l.Decode(cap); p.Node != 1000 || p.Ms != snowflake.TwitterOrigin+5000 || p.Seq != 9 {
		t.Errorf("node first: %+v", p)
	}
	// 5+5 bits: node ID 40 is datacenter 1, worker 8 when the low bits go
	// to the lower field; given the other way round, the ID's node field
	// reads 8<<5|1 = 257, which --swap-node-halves reads as 40 again.
	straight := int64(99)<<22 | int64(1)<<17 | int64(8)<<12 | 3
	swapped := int64(99)<<22 | int64(8)<<17 | int64(1)<<12 | 3
	l = IDLayout{Layout: snowflake.Layout{Origin: snowflake.TwitterOrigin, NodeBits: 10, StepBits: 12}, Order: SnowflakeOrder}
	if p := l.Decode(straight); p.Node != 40 || p.NodeField != 40 {
		t.Errorf("straight: %+v", p)
	}
	if p := l.Decode(swapped); p.Node != 257 {
		t.Errorf("swapped without the flag: %+v", p)
	}
	l.SwapNodeHalves = true
	if p := l.Decode(swapped); p.Node != 40 || p.NodeField != 257 || p.Seq != 3 {
		t.Errorf("swapped with the flag: %+v", p)
	}
	if l.Mintable() || !(IDLayout{Layout: snowflake.JS53, Order: SnowflakeOrder}).Mintable() {
		t.Error("Mintable")
	}
	for _, c := range []struct {
		l    IDLayout
		want string
	}{
		{Sonyflake, "63-bit IDs: origin 1409529600000 (2014-09-01T00:00:00.000Z), 39 time bits of 10ms, 16 node bits, 8 step bits (0 epoch bits), fields from the top: time, step, node"},
		{l, "63-bit IDs: origin 1288834974657 (2010-11-04T01:42:54.657Z), 41 time bits of 1ms, 10 node bits, 12 step bits (0 epoch bits), node halves swapped"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("String: %q, want %q", got, c.want)
		}
	}
}
