package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// verifySQLHead introduces the statement "schema --verify-sql" prints.
const verifySQLHead = `-- nodeid verify: the check of Lease.Verify, for programs in any language.
-- Run it first in the transaction whose writes it fences, with
--   $1 = NODEID_NODE, $2 = NODEID_OWNER, $3 = NODEID_EPOCH
-- (as nodeid run exports them). Write and commit only if held is true;
-- otherwise roll back (cause says why: taken_over, expired, released, evicted,
-- failover or no_row). Until the transaction ends no claim can take the node
-- ID, and the transaction's idle_in_transaction_session_timeout is at most the
-- time left to the lease's expiry. Under REPEATABLE READ or SERIALIZABLE, retry
-- the transaction on SQLSTATE 40001. The role needs SELECT and UPDATE on the
-- lease table and SELECT on its history. See docs/verify.md.
`

func (a *app) schemaCommand() *cobra.Command {
	var (
		rf          rangeFlags
		maxTTL      time.Duration
		replication string
		verifySQL   bool
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
nodeid up to date. Needs no database.

With --verify-sql it prints instead the statement of Lease.Verify for the
table: a program in another language runs it first in a transaction to fence
that transaction's writes on the lease it got from "nodeid run" (see
docs/verify.md).`,
		Example: `  nodeid schema > migrations/0001_nodeid.sql
  nodeid schema --table ids.snowflake_nodes --range 0-511 --max-ttl 30s
  nodeid schema --verify-sql > verify_lease.sql`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			if verifySQL {
				for _, f := range []string{"nodes", "range", "max-ttl", "replication"} {
					if cmd.Flags().Changed(f) {
						return usagef("--%s: the statement of --verify-sql depends only on --table", f)
					}
				}
				_, err := fmt.Fprint(a.stdout, verifySQLHead, store.VerifySQL(store.Config{Table: a.table}), ";\n")
				return err
			}
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
	cmd.Flags().BoolVar(&verifySQL, "verify-sql", false, "print the statement that verifies a lease in a transaction, for programs in other languages")
	return cmd
}
