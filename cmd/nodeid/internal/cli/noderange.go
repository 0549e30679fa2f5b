package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/postgres"
)

// NodeRange is an inclusive range of node IDs.
type NodeRange struct{ Lo, Hi int64 }

func (r NodeRange) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// Size returns how many node IDs the range holds.
func (r NodeRange) Size() int64 { return r.Hi - r.Lo + 1 }

// DefaultRange is the registry's default: the 10 node bits of the default
// layout.
var DefaultRange = NodeRange{postgres.DefaultMinNode, postgres.DefaultMaxNode}

// AllNodes is every node ID a table may hold: read-only commands see all.
var AllNodes = NodeRange{0, postgres.MaxNode}

// ParseRange parses "A-B", two node IDs, A <= B, both within 0 and
// postgres.MaxNode.
func ParseRange(s string) (NodeRange, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return NodeRange{}, fmt.Errorf("node range %q: write it as FIRST-LAST, e.g. 0-1023", s)
	}
	lo, err := ParseNodeID(a)
	if err != nil {
		return NodeRange{}, fmt.Errorf("node range %q: first node ID: %w", s, err)
	}
	hi, err := ParseNodeID(b)
	if err != nil {
		return NodeRange{}, fmt.Errorf("node range %q: last node ID: %w", s, err)
	}
	if lo > hi {
		return NodeRange{}, fmt.Errorf("node range %q: the first node ID is above the last", s)
	}
	return NodeRange{lo, hi}, nil
}

// ParseNodeID parses a node ID: a decimal number from 0 to
// postgres.MaxNode.
func ParseNodeID(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("node ID is empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("node ID %q is not a whole number from 0 to %d", s, postgres.MaxNode)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > postgres.MaxNode {
		return 0, fmt.Errorf("node ID %s is out of range: node IDs are 0 to %d", s, postgres.MaxNode)
	}
	return n, nil
}

// RangeFlags are the --nodes and --range flags of the commands that take a
// node range (init, schema, run, serve).
type RangeFlags struct {
	nodes int64
	rng   string
	cmd   *cobra.Command
}

// ConfirmRows is the most rows a command creates in a lease table without
// being confirmed (--yes): a range of more is more often a slip (0-1048575
// for 0-1023) than a fleet's size, and every row is a node ID each claim
// may scan and list and watch show.
const ConfirmRows = 65536

// Count writes n with thousands separators: 1,048,576.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// MaxNodeBits is the most node bits a table's node IDs may use: those of
// postgres.MaxNode.
const MaxNodeBits = 20

// MaxNodeOf returns the largest node ID that bits node bits hold.
func MaxNodeOf(bits int) int64 { return int64(1)<<min(max(bits, 0), 62) - 1 }

// Register adds the flags to cmd; Resolve refuses both at once.
func (f *RangeFlags) Register(cmd *cobra.Command) {
	f.RegisterDefault(cmd, fmt.Sprintf("%d", DefaultRange.Size()), DefaultRange.String())
}

// RegisterDefault is Register with the defaults the help shows.
func (f *RangeFlags) RegisterDefault(cmd *cobra.Command, nodes, rng string) {
	f.cmd = cmd
	cmd.Flags().Int64Var(&f.nodes, "nodes", 0, fmt.Sprintf("node IDs 0 to N-1 (default %s)", nodes))
	cmd.Flags().StringVar(&f.rng, "range", "", fmt.Sprintf("node IDs FIRST-LAST, inclusive (default %s)", rng))
}

// Given reports whether --nodes or --range was set.
func (f *RangeFlags) Given() bool {
	return f.cmd.Flags().Changed("range") || f.cmd.Flags().Changed("nodes")
}

// Flag returns the flag that selected the range, as given ("--range
// 0-1048575", "--nodes 4"), or "" if neither was.
func (f *RangeFlags) Flag() string {
	switch {
	case f.cmd.Flags().Changed("range"):
		return "--range " + f.rng
	case f.cmd.Flags().Changed("nodes"):
		return fmt.Sprintf("--nodes %d", f.nodes)
	}
	return ""
}

// CheckNodeBits refuses r, the range the flags selected, if it has node IDs
// above the largest the layout's bits node bits hold: IDs could not carry
// them. layout names the layout flags given (LayoutFlags.Described).
func (f *RangeFlags) CheckNodeBits(r NodeRange, bits int, layout string) error {
	if top := MaxNodeOf(bits); r.Hi > top {
		return Usagef("%s: node IDs above %d do not fit the %d node bits of the IDs' layout (%s): give a range within 0-%d, or the layout your IDs use (--node-bits %d or more holds %s)",
			f.Flag(), top, bits, layout, top, bitsFor(r.Hi), r)
	}
	return nil
}

// bitsFor returns how many node bits hold node ID n.
func bitsFor(n int64) int {
	b := 1
	for MaxNodeOf(b) < n {
		b++
	}
	return b
}

// Resolve returns the range the flags select, DefaultRange if neither is
// set.
func (f *RangeFlags) Resolve() (NodeRange, error) {
	switch {
	case f.cmd.Flags().Changed("range") && f.cmd.Flags().Changed("nodes"):
		return NodeRange{}, Usagef("--nodes and --range both select the node IDs: give one of them")
	case f.cmd.Flags().Changed("range"):
		r, err := ParseRange(f.rng)
		if err != nil {
			return NodeRange{}, Usagef("--range: %v", err)
		}
		return r, nil
	case f.cmd.Flags().Changed("nodes"):
		if f.nodes < 1 || f.nodes > postgres.MaxNode+1 {
			return NodeRange{}, Usagef("--nodes %d: the number of node IDs must be 1 to %d", f.nodes, postgres.MaxNode+1)
		}
		return NodeRange{0, f.nodes - 1}, nil
	}
	return DefaultRange, nil
}
