package table

import (
	"context"
	"errors"
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
	Yes            bool   // do not ask
	DryRun         bool   // count, delete nothing
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
trace an ID. Durations: 90s, 12h, 30d, 1d12h.

Asks for confirmation on stdin, naming how many rows it would delete, unless
--yes is given; without an answer (stdin closed or empty) it deletes nothing
and exits 1. --dry-run prints how many rows it would delete, and deletes
nothing.`,
		Example: `  nodeid prune --older-than 90d --dry-run
  nodeid prune --older-than 90d
  nodeid prune --older-than 90d --yes`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			o.OlderThanGiven = cmd.Flags().Changed("older-than")
			o.OlderThanText = cmd.Flags().Lookup("older-than").Value.String()
			return cli.Run(cmd.Context(), o, runF, pruneRun)
		}),
	}
	cmd.Flags().Var(cli.NewRequiredDurationValue(&o.OlderThan), "older-than", "delete claims that ended more than this long ago (required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print how many history rows would be deleted, and delete none")
	return cmd
}

func pruneRun(ctx context.Context, o *PruneOptions) error {
	c := o.Conn
	need := "DELETE on " + postgres.HistoryTable(c.Table())
	st, err := c.Store(cli.AllNodes)
	if err != nil {
		return cli.Needs(need, err)
	}
	if o.DryRun || !o.Yes {
		var n int64
		err := c.Timed(ctx, func(ctx context.Context) error {
			var err error
			n, err = st.CountPrunable(ctx, o.OlderThan)
			return err
		})
		if err != nil && o.DryRun {
			return cli.Needs("SELECT on table "+postgres.HistoryTable(c.Table()), err)
		} else if err != nil {
			return cli.Needs("SELECT and DELETE on table "+postgres.HistoryTable(c.Table()), err)
		}
		switch {
		case o.DryRun:
			_, err = fmt.Fprintln(o.Env.Out, wouldPrune(n, o.OlderThanText))
			return err
		case n == 0:
			_, err = fmt.Fprintln(o.Env.Out, pruned(0, o.OlderThanText))
			return err
		}
		stderr := o.Env.Err
		fmt.Fprintf(stderr, "Delete %s from %s? \"nodeid who\" cannot trace the IDs minted under a deleted claim. [y/N] ",
			rows(n, o.OlderThanText), postgres.HistoryTable(c.Table()))
		ok, err := confirm(o.Env.In, errors.New("not pruned: no answer on stdin; pass --yes to prune without asking, or --dry-run to count"))
		fmt.Fprintln(stderr)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not pruned: the answer was not yes")
		}
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

// rows names n history rows, each the record of a claim that ended more
// than age ago.
func rows(n int64, age string) string {
	if n == 1 {
		return fmt.Sprintf("1 history row (a claim that ended more than %s ago)", age)
	}
	return fmt.Sprintf("%d history rows (claims that ended more than %s ago)", n, age)
}

// wouldPrune says how many history rows prune would delete.
func wouldPrune(n int64, age string) string {
	if n == 0 {
		return fmt.Sprintf("would delete no history rows: no claim ended more than %s ago", age)
	}
	return "would delete " + rows(n, age) + "; nothing deleted (--dry-run)"
}

// pruned says how many history rows prune deleted, each the record of one
// claim that ended more than age ago.
func pruned(n int64, age string) string {
	switch n {
	case 0:
		return fmt.Sprintf("deleted no history rows: no claim ended more than %s ago", age)
	}
	return "deleted " + rows(n, age)
}
