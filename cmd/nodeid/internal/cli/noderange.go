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
