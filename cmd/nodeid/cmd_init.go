package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
)

func (a *app) initCommand() *cobra.Command {
	var rf rangeFlags
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the lease and history tables and pre-fill the node range",
		Long: `Create the lease table and its history table if they are missing, insert the
missing rows of the node range (existing rows, their epochs and horizons are
never touched), and check that the role may use them. Running it again is
harmless; run it with a wider range to add node IDs.`,
		Example: `  nodeid init
  nodeid init --nodes 256
  nodeid init --table ids.snowflake_nodes --range 512-1023`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			r, err := rf.resolve()
			if err != nil {
				return err
			}
			a.privileges = "CREATE on the table's schema, and SELECT, INSERT and UPDATE on " + a.table + " and " + a.table + "_history"
			st, err := a.store(r)
			if err != nil {
				return err
			}
			var rows []store.Row
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				if err := st.Ensure(ctx, true); err != nil {
					return err
				}
				if err := st.CheckSchema(ctx); err != nil {
					return err
				}
				var err error
				rows, _, err = st.List(ctx)
				return err
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "table %s is ready (history: %s_history): node IDs %s, %d rows\n",
				a.table, a.table, r, len(rows))
			return err
		}),
	}
	rf.register(cmd)
	return cmd
}
