package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// listOptions are the flags of list and watch.
type listOptions struct {
	all       bool
	state     string
	output    outputFlag
	noHeaders bool
}

func (o *listOptions) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.all, "all", false, "also show node IDs that were never claimed")
	cmd.Flags().StringVar(&o.state, "state", "", "show only node IDs in this state: free, held, expired or quarantined")
	o.output.register(cmd, outTable, outWide, outJSON, outYAML)
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "print only the rows of the table: no header line, no summary line")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(
		[]string{string(store.Free), string(store.Held), string(store.Expired), string(store.Quarantined)}, cobra.ShellCompDirectiveNoFileComp))
}

func (o *listOptions) validate() error {
	switch store.State(o.state) {
	case "", store.Free, store.Held, store.Expired, store.Quarantined:
	default:
		return usagef("--state %q: the state must be free, held, expired or quarantined", o.state)
	}
	return o.output.check()
}

func (a *app) listCommand() *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the node IDs in use or ever used, with their holders",
		Long: `List every node ID that is in use or was ever used: its state (held; free:
never claimed or released; expired: lapsed and not yet claimed again), owner,
epoch, when it was acquired, when its lease expires and its horizon (the
latest millisecond its holder may stamp). Times are relative to the server's
clock; -o wide adds exact times, -o json and -o yaml have exact RFC 3339 and
unix-ms values. The last line counts the rows of the whole table: held /
free / expired / total. --no-headers prints only the rows; with no rows to
show, the command says why (nothing with --no-headers).`,
		Example: `  nodeid list
  nodeid list --state held -o wide
  nodeid list --all -o json | jq '.nodes[] | select(.state == "expired")'
  nodeid list --no-headers --state held | wc -l`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			n, err := a.timedSnapshot(cmd.Context())
			if err != nil {
				return err
			}
			return n.write(a.stdout, &o)
		}),
	}
	o.register(cmd)
	return cmd
}

// timedSnapshot is snapshot within --timeout.
func (a *app) timedSnapshot(ctx context.Context) (nodes, error) {
	var n nodes
	err := a.timed(ctx, func(ctx context.Context) error {
		var err error
		n, err = a.snapshot(ctx)
		return err
	})
	return n, err
}

// snapshot reads the whole lease table.
func (a *app) snapshot(ctx context.Context) (nodes, error) {
	a.privileges = "SELECT on " + a.table + " and " + postgres.ConfigTable(a.table)
	st, err := a.store(allNodes)
	if err != nil {
		return nodes{}, err
	}
	rows, now, err := st.List(ctx)
	if err != nil {
		return nodes{}, err
	}
	return nodes{table: a.table, replication: st.Replication(), rows: rows, now: now}, nil
}
