package table

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// PruneOptions are the flags of prune.
type PruneOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	OlderThan      time.Duration
	OlderThanGiven bool   // --older-than was given
	OlderThanText  string // as given, for the message
}

// Validate checks that --older-than is given and positive.
func (o *PruneOptions) Validate() error {
	if !o.OlderThanGiven {
		return cli.Usagef("--older-than is required, e.g. --older-than 30d")
	}
	if o.OlderThan <= 0 {
		return cli.Usagef("--older-than %s: the age must be positive", o.OlderThan)
	}
	return nil
}

// NewCmdPrune returns "nodeid prune". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdPrune(env *cli.Env, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	o := &PruneOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete the history of claims that ended long ago",
		Long: `Delete from the history table the claims that ended more than --older-than
ago. Claims still held are kept, and the lease table is never touched (its
epochs and horizons are what fences reuse). "nodeid who" cannot trace IDs
minted under a pruned claim, so keep the history as long as you may need to
trace an ID. Durations: 90s, 12h, 30d, 1d12h.`,
		Example: `  nodeid prune --older-than 90d`,
		Args:    cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			o.OlderThanGiven = cmd.Flags().Changed("older-than")
			o.OlderThanText = cmd.Flags().Lookup("older-than").Value.String()
			return cli.Run(cmd.Context(), o, runF, pruneRun)
		}),
	}
	cmd.Flags().Var(cli.NewRequiredDurationValue(&o.OlderThan), "older-than", "delete claims that ended more than this long ago (required)")
	return cmd
}

func pruneRun(ctx context.Context, o *PruneOptions) error {
	c := o.Conn
	need := "DELETE on " + postgres.HistoryTable(c.Table())
	st, err := c.Store(cli.AllNodes)
	if err != nil {
		return cli.Needs(need, err)
	}
	var n int64
	err = c.Timed(ctx, func(ctx context.Context) error {
		var err error
		n, err = st.PruneHistory(ctx, o.OlderThan)
		return err
	})
	if err != nil {
		return cli.Needs(need, err)
	}
	_, err = fmt.Fprintln(o.Env.Out, pruned(n, o.OlderThanText))
	return err
}

// pruned says how many history rows prune deleted, each the record of one
// claim that ended more than age ago.
func pruned(n int64, age string) string {
	switch n {
	case 0:
		return fmt.Sprintf("deleted no history rows: no claim ended more than %s ago", age)
	case 1:
		return fmt.Sprintf("deleted 1 history row (a claim that ended more than %s ago)", age)
	}
	return fmt.Sprintf("deleted %d history rows (claims that ended more than %s ago)", n, age)
}
