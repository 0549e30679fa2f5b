package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/postgres"
)

func (a *app) schemaCommand() *cobra.Command {
	var (
		rf          rangeFlags
		maxTTL      time.Duration
		replication string
	)
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the DDL of the lease tables, for a migration tool",
		Long: `Print the SQL that creates the lease table, its history and its
configuration, records the node range and the maximum lease TTL, fills the
range and analyses the table: the same DDL "nodeid init" and the library's
WithCreateTable run. Give it to a migration tool, to apply as the table's
owner, where the application's role may not create tables. Applied again,
with a wider range or a longer --max-ttl, it widens and raises, and never
narrows or lowers; it also brings a table made by an earlier version of
nodeid up to date. Needs no database.`,
		Example: `  nodeid schema > migrations/0001_nodeid.sql
  nodeid schema --table ids.snowflake_nodes --range 0-511 --max-ttl 30s`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(_ *cobra.Command, _ []string) error {
			r, err := rf.resolve()
			if err != nil {
				return err
			}
			opts := []postgres.Option{postgres.WithTable(a.table), postgres.WithNodeRange(r.lo, r.hi), postgres.WithMaxTTL(maxTTL)}
			if replication != "" {
				opts = append(opts, postgres.WithReplication(replication))
			}
			ddl, err := postgres.SchemaSQL(opts...)
			if err != nil {
				return usage(err)
			}
			_, err = fmt.Fprint(a.stdout, ddl)
			return err
		}),
	}
	rf.register(cmd)
	cmd.Flags().Var(newDurationValue(&maxTTL, postgres.DefaultMaxTTL), "max-ttl",
		fmt.Sprintf("the longest lease TTL the table allows, %s to %s", postgres.MinTTL, postgres.MaxTTL))
	cmd.Flags().StringVar(&replication, "replication", "",
		"how the database replicates: async (a failover may lose commits) or sync (it never does) (default: the table's, async for a new table)")
	return cmd
}
