package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/postgres"
)

// nodeRange is an inclusive range of node IDs.
type nodeRange struct{ lo, hi int64 }

func (r nodeRange) String() string { return fmt.Sprintf("%d-%d", r.lo, r.hi) }

// size returns how many node IDs the range holds.
func (r nodeRange) size() int64 { return r.hi - r.lo + 1 }

// defaultRange is the registry's default: the 10 node bits of the default
// layout.
var defaultRange = nodeRange{postgres.DefaultMinNode, postgres.DefaultMaxNode}

// parseRange parses "A-B", two node IDs, A <= B, both within 0 and
// postgres.MaxNode.
func parseRange(s string) (nodeRange, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return nodeRange{}, fmt.Errorf("node range %q: write it as FIRST-LAST, e.g. 0-1023", s)
	}
	lo, err := parseNodeID(a)
	if err != nil {
		return nodeRange{}, fmt.Errorf("node range %q: first node ID: %w", s, err)
	}
	hi, err := parseNodeID(b)
	if err != nil {
		return nodeRange{}, fmt.Errorf("node range %q: last node ID: %w", s, err)
	}
	if lo > hi {
		return nodeRange{}, fmt.Errorf("node range %q: the first node ID is above the last", s)
	}
	return nodeRange{lo, hi}, nil
}

// parseNodeID parses a node ID: a decimal number from 0 to
// postgres.MaxNode.
func parseNodeID(s string) (int64, error) {
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

// rangeFlags are the --nodes and --range flags of init, schema and run.
type rangeFlags struct {
	nodes int64
	rng   string
	cmd   *cobra.Command
}

// register adds the flags to cmd; resolve refuses both at once.
func (f *rangeFlags) register(cmd *cobra.Command) {
	f.registerDefault(cmd, fmt.Sprintf("%d", defaultRange.size()), defaultRange.String())
}

// registerDefault is register with the defaults the help shows.
func (f *rangeFlags) registerDefault(cmd *cobra.Command, nodes, rng string) {
	f.cmd = cmd
	cmd.Flags().Int64Var(&f.nodes, "nodes", 0, fmt.Sprintf("node IDs 0 to N-1 (default %s)", nodes))
	cmd.Flags().StringVar(&f.rng, "range", "", fmt.Sprintf("node IDs FIRST-LAST, inclusive (default %s)", rng))
}

// given reports whether --nodes or --range was set.
func (f *rangeFlags) given() bool {
	return f.cmd.Flags().Changed("range") || f.cmd.Flags().Changed("nodes")
}

// resolve returns the range the flags select, defaultRange if neither is
// set.
func (f *rangeFlags) resolve() (nodeRange, error) {
	switch {
	case f.cmd.Flags().Changed("range") && f.cmd.Flags().Changed("nodes"):
		return nodeRange{}, usagef("--nodes and --range both select the node IDs: give one of them")
	case f.cmd.Flags().Changed("range"):
		r, err := parseRange(f.rng)
		if err != nil {
			return nodeRange{}, usagef("--range: %v", err)
		}
		return r, nil
	case f.cmd.Flags().Changed("nodes"):
		if f.nodes < 1 || f.nodes > postgres.MaxNode+1 {
			return nodeRange{}, usagef("--nodes %d: the number of node IDs must be 1 to %d", f.nodes, postgres.MaxNode+1)
		}
		return nodeRange{0, f.nodes - 1}, nil
	}
	return defaultRange, nil
}
