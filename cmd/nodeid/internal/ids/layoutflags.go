package ids

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/snowflake"
)

// layoutFlags are the flags that describe an ID's bit layout, one per field
// of snowflake.Layout, the generator's WithLayout option.
type layoutFlags struct {
	epoch                         string
	nodeBits, stepBits, epochBits uint8
}

// register adds the layout flags to cmd, with snowflake.DefaultLayout's
// values as defaults.
func (f *layoutFlags) register(cmd *cobra.Command) {
	d := snowflake.DefaultLayout
	fl := cmd.Flags()
	fl.StringVar(&f.epoch, "layout-epoch", strconv.FormatInt(d.Epoch, 10),
		"time zero of the layout: unix milliseconds or an RFC 3339 time (Layout.Epoch)")
	fl.Uint8Var(&f.nodeBits, "node-bits", d.NodeBits, "width of the node ID field (Layout.NodeBits)")
	fl.Uint8Var(&f.stepBits, "step-bits", d.StepBits, "width of the step field, epoch bits included (Layout.StepBits)")
	fl.Uint8Var(&f.epochBits, "epoch-bits", d.EpochBits, "top bits of the step field holding the lease epoch (Layout.EpochBits)")
}

// layout returns the validated layout the flags describe.
func (f *layoutFlags) layout() (snowflake.Layout, error) {
	epoch, err := parseLayoutEpoch(f.epoch)
	if err != nil {
		return snowflake.Layout{}, cli.Usage(err)
	}
	l := snowflake.Layout{Epoch: epoch, NodeBits: f.nodeBits, StepBits: f.stepBits, EpochBits: f.epochBits}
	if err := l.Validate(); err != nil {
		return snowflake.Layout{}, cli.Usagef("%v (set by --layout-epoch, --node-bits, --step-bits, --epoch-bits)", err)
	}
	return l, nil
}

// parseLayoutEpoch reads unix milliseconds or an RFC 3339 time.
func parseLayoutEpoch(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("--layout-epoch %q is neither unix milliseconds (e.g. 1288834974657) nor an RFC 3339 time (e.g. 2010-11-04T01:42:54.657Z)", s)
}
