package table

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// verifySQLHead introduces the statement "schema --verify-sql" prints.
const verifySQLHead = `-- nodeid verify: the check of Lease.Verify, for programs in any language.
-- Run it first in the transaction whose writes it fences, with
--   $1 = NODEID_NODE, $2 = NODEID_OWNER, $3 = NODEID_EPOCH
-- (as nodeid run exports them). Write and commit only if held is true;
-- otherwise roll back (status says why: epoch_mismatch, not_owner, lapsed,
-- released, evicted or no_row). Until the transaction ends no claim can take the node
-- ID, and the transaction's idle_in_transaction_session_timeout is at most the
-- time left to the lease's expiry. Under REPEATABLE READ or SERIALIZABLE, retry
-- the transaction on SQLSTATE 40001. The role needs EXECUTE on the table's
-- verify function (nodeid init --grant ROLE). See docs/verify.md.
`

// SchemaOptions are the flags of schema.
type SchemaOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs; never opened

	Range       cli.RangeFlags
	MaxTTL      time.Duration
	Replication string
	VerifySQL   bool
	// Grant and GrantOperator name roles whose grants are printed after
	// the DDL (see init's --grant).
	Grant, GrantOperator []string
	// Changed reports whether a flag was given, for the check that
	// --verify-sql takes none but --table.
	Changed func(name string) bool

	nodes cli.NodeRange // resolved by Validate
}

// Validate checks that --verify-sql comes alone, or resolves the node
// range.
func (o *SchemaOptions) Validate() error {
	if !o.VerifySQL {
		var err error
		if o.nodes, err = o.Range.Resolve(); err != nil {
			return err
		}
		return validRoles(o.Grant, o.GrantOperator)
	}
	for _, f := range []string{"nodes", "range", "max-ttl", "replication", "grant", "grant-operator"} {
		if o.Changed(f) {
			return cli.Usagef("--%s: the statement of --verify-sql depends only on --table", f)
		}
	}
	return nil
}

// NewCmdSchema returns "nodeid schema". runF, if not nil, runs instead of
// the command's own work once the options are valid.
func NewCmdSchema(env *cli.Env, runF func(context.Context, *SchemaOptions) error) *cobra.Command {
	o := &SchemaOptions{Env: env}
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
nodeid up to date. It makes the table's SQL functions too (see docs/sql.md);
with --grant ROLE it prints the grants of a client role after it. Needs no
database.

With --verify-sql it prints instead the statement of Lease.Verify for the
table: a program in another language runs it first in a transaction to fence
that transaction's writes on the lease it got from "nodeid run" (see
docs/verify.md).`,
		Example: `  nodeid schema > migrations/0001_nodeid.sql
  nodeid schema --table ids.snowflake_nodes --range 0-511 --max-ttl 30s
  nodeid schema --grant app > migrations/0001_nodeid.sql
  nodeid schema --verify-sql > verify_lease.sql`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn, o.Changed = c, cmd.Flags().Changed
			return cli.Run(cmd.Context(), o, runF, schemaRun)
		}),
	}
	o.Range.Register(cmd)
	cmd.Flags().Var(cli.NewDurationValue(&o.MaxTTL, postgres.DefaultMaxTTL), "max-ttl",
		fmt.Sprintf("the longest lease TTL the table allows, %s to %s", nodeid.MinTTL, nodeid.MaxTTL))
	cmd.Flags().StringVar(&o.Replication, "replication", "",
		"how the database replicates: async (a failover may lose commits) or sync (it never does) (default: the table's, async for a new table)")
	cmd.Flags().StringArrayVar(&o.Grant, "grant", nil, "also print the grants of a client role (as nodeid init --grant; repeatable)")
	cmd.Flags().StringArrayVar(&o.GrantOperator, "grant-operator", nil, "also print the grants of an operator role (as nodeid init --grant-operator; repeatable)")
	cmd.Flags().BoolVar(&o.VerifySQL, "verify-sql", false, "print the statement that verifies a lease in a transaction, for programs in other languages")
	return cmd
}

func schemaRun(_ context.Context, o *SchemaOptions) error {
	table := o.Conn.Table()
	if o.VerifySQL {
		q, err := postgres.VerifySQL(table)
		if err != nil {
			return cli.Usage(err)
		}
		_, err = fmt.Fprint(o.Env.Out, verifySQLHead, q, ";\n")
		return err
	}
	r := o.nodes
	ddl, err := postgres.Schema{Table: table, MinNode: r.Lo, MaxNode: r.Hi, MaxTTL: o.MaxTTL,
		Replication: postgres.Replication(o.Replication)}.SQL()
	if err != nil {
		return cli.Usage(err)
	}
	grants, err := grantSQL(table, o.Grant, o.GrantOperator)
	if err != nil {
		return cli.Usage(err)
	}
	_, err = fmt.Fprint(o.Env.Out, ddl, grants)
	return err
}
