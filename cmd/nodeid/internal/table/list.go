package table

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// ListOptions are the flags of list and watch, and what the demo prints of
// the table (which sets only All and Output).
type ListOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	All       bool
	State     string
	Output    cli.OutputFlag
	NoHeaders bool
}

func (o *ListOptions) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.All, "all", false, "also show node IDs that were never claimed")
	cmd.Flags().StringVar(&o.State, "state", "", "show only node IDs in this state: free, held, expired, evicted, cooling or quarantined")
	o.Output.Register(cmd, cli.OutTable, cli.OutWide, cli.OutJSON, cli.OutYAML)
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "print only the rows of the table: no header line, no summary line")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(
		[]string{string(admin.Free), string(admin.Held), string(admin.Expired), string(admin.Evicted), string(admin.Cooling),
			string(admin.Quarantined)}, cobra.ShellCompDirectiveNoFileComp))
}

// Validate checks the state and the output format.
func (o *ListOptions) Validate() error {
	switch admin.State(o.State) {
	case "", admin.Free, admin.Held, admin.Expired, admin.Evicted, admin.Cooling, admin.Quarantined:
	default:
		return cli.Usagef("--state %q: the state must be free, held, expired, evicted, cooling or quarantined", o.State)
	}
	return o.Output.Check()
}

// NewCmdList returns "nodeid list". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdList(env *cli.Env, runF func(context.Context, *ListOptions) error) *cobra.Command {
	o := &ListOptions{Env: env}
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
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			return cli.Run(cmd.Context(), o, runF, listRun)
		}),
	}
	o.register(cmd)
	return cmd
}

func listRun(ctx context.Context, o *ListOptions) error {
	n, err := timedSnapshot(ctx, o.Conn)
	if err != nil {
		return err
	}
	return n.Write(o.Env.Out, o)
}

// timedSnapshot is Snapshot within --timeout.
func timedSnapshot(ctx context.Context, c *cli.Conn) (Nodes, error) {
	var n Nodes
	err := c.Timed(ctx, func(ctx context.Context) error {
		var err error
		n, err = Snapshot(ctx, c)
		return err
	})
	return n, err
}

// Snapshot reads the whole lease table of c.
func Snapshot(ctx context.Context, c *cli.Conn) (Nodes, error) {
	need := "SELECT on " + c.Table() + " and " + postgres.ConfigTable(c.Table())
	st, err := c.Store(cli.AllNodes)
	if err != nil {
		return Nodes{}, cli.Needs(need, err)
	}
	rows, now, err := st.List(ctx)
	if err != nil {
		return Nodes{}, cli.Needs(need, err)
	}
	return Nodes{Table: c.Table(), Replication: st.Replication(), Rows: rows, Now: now}, nil
}
