package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) pruneCommand() *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete the history of claims that ended long ago",
		Long: `Delete from the history table the claims that ended more than --older-than
ago. Claims still held are kept, and the lease table is never touched (its
epochs and horizons are what fences reuse). "nodeid who" cannot trace IDs
minted under a pruned claim, so keep the history as long as you may need to
trace an ID. Durations: 90s, 12h, 30d, 1d12h.`,
		Example: `  nodeid prune --older-than 90d`,
		Args:    exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("older-than") {
				return usagef("--older-than is required, e.g. --older-than 30d")
			}
			if olderThan <= 0 {
				return usagef("--older-than %s: the age must be positive", olderThan)
			}
			a.privileges = "DELETE on " + a.table + "_history"
			st, err := a.store(allNodes)
			if err != nil {
				return err
			}
			var n int64
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				var err error
				n, err = st.PruneHistory(ctx, olderThan)
				return err
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, pruned(n, cmd.Flags().Lookup("older-than").Value.String()))
			return err
		}),
	}
	cmd.Flags().Var(newRequiredDurationValue(&olderThan), "older-than", "delete claims that ended more than this long ago (required)")
	return cmd
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
