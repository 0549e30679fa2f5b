package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/postgres"
)

func (a *app) schemaCommand() *cobra.Command {
	var rf rangeFlags
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the DDL of the lease and history tables, for a migration tool",
		Long: `Print the SQL that creates the lease table, its history table and their
indexes, and pre-fills the node range: the same DDL "nodeid init" and the
library's first Acquire run. Give it to a migration tool where the
application's role may not create tables. Needs no database.`,
		Example: `  nodeid schema > migrations/0001_nodeid.sql
  nodeid schema --table ids.snowflake_nodes --range 0-511`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(_ *cobra.Command, _ []string) error {
			r, err := rf.resolve()
			if err != nil {
				return err
			}
			ddl, err := postgres.SchemaSQL(postgres.WithTable(a.table), postgres.WithNodeRange(r.lo, r.hi))
			if err != nil {
				return usage(err)
			}
			_, err = fmt.Fprint(a.stdout, ddl)
			return err
		}),
	}
	rf.register(cmd)
	return cmd
}
