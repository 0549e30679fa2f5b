package table

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// InitOptions are the flags of init.
type InitOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Range       cli.RangeFlags
	MaxTTL      time.Duration
	MaxTTLGiven bool // --max-ttl was given: else the table's, or the default
	Replication string
	Restored    bool

	nodes cli.NodeRange // resolved by Validate
}

// Validate checks the flags and resolves the node range.
func (o *InitOptions) Validate() error {
	r, err := o.Range.Resolve()
	if err != nil {
		return err
	}
	o.nodes = r
	if !o.MaxTTLGiven {
		o.MaxTTL = postgres.DefaultMaxTTL
	}
	if o.MaxTTL < postgres.MinTTL || o.MaxTTL > postgres.MaxTTL {
		return cli.Usagef("--max-ttl %s: it must be %s to %s", o.MaxTTL, postgres.MinTTL, postgres.MaxTTL)
	}
	mode := store.Replication(o.Replication)
	if mode != "" && mode != store.Async && mode != store.Sync {
		return cli.Usagef("--replication %q: it must be async (a failover may lose commits) or sync (it never does)", o.Replication)
	}
	return nil
}

// NewCmdInit returns "nodeid init". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdInit(env *cli.Env, runF func(context.Context, *InitOptions) error) *cobra.Command {
	o := &InitOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the lease tables, record their configuration and fill the node range",
		Long: `Create the lease table, its history and its configuration if they are missing,
record the node range and the maximum lease TTL, insert the rows of the range
(existing rows, their epochs and horizons are never touched), analyse the
table, and check that the role may use it. It must run as the table's owner.

Running it again is harmless: with a wider range it adds node IDs, with a
longer --max-ttl it raises the maximum; a range is never narrowed and a
maximum never lowered. It also brings a table made by an earlier version of
nodeid up to date. Without --nodes or --range it keeps the table's range
(0-1023 for a new table); without --max-ttl, its maximum TTL (1m for a new
table).

The maximum TTL bounds the TTL of every lease of the table: a process asking
for a longer one is refused. After a database failover that may have lost
commits, node IDs last written before it stay unclaimable for this long plus
a tenth: keep it close to the TTL your fleet uses. With --replication async,
raise it only once every standby that may be promoted has replayed the
raise (check with "nodeid list --dsn STANDBY -o json"), or a failover to one
that lacks it would quarantine for the old maximum only.

--replication records how the database replicates: async (the default for a
new table: a failover may lose the latest commits, so every lease statement
watches the server's identity and timeline, which needs the functions
pg_current_wal_lsn, pg_walfile_name and pg_control_system, and after a
failover, a move or an upgrade every node ID is quarantined for the maximum
TTL and a tenth) or sync (the HA setup never loses an acknowledged commit:
Patroni synchronous_mode_strict, CloudNativePG with required synchronous
replicas, Aurora, RDS Multi-AZ, Cloud SQL HA; no quarantine after a
failover, no WAL function needed). Changing it on an existing table takes
effect for each registry at its next claim; going from sync to async
records the server of now as the one the table is on.

--restored tells the table it was restored (a volume snapshot rolled back,
a base backup started without recovery, a point-in-time restore, or a copy
that served while the old server still did): nothing inside the database
can tell. Run it after any restore, before clients connect, with the old
server stopped. Every node ID is then quarantined for the maximum TTL and a
tenth from now, and its next claim takes an epoch of a new era, above any the
restored or the lost history could hold.`,
		Example: `  nodeid init
  nodeid init --nodes 256 --max-ttl 30s
  nodeid init --table ids.snowflake_nodes --range 512-1023
  nodeid init --replication sync          # Aurora, RDS Multi-AZ, Patroni synchronous_mode_strict
  nodeid init --restored                  # after restoring the database from a backup`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			o.MaxTTLGiven = cmd.Flags().Changed("max-ttl")
			return cli.Run(cmd.Context(), o, runF, initRun)
		}),
	}
	o.Range.Register(cmd)
	cmd.Flags().Var(cli.NewRequiredDurationValue(&o.MaxTTL), "max-ttl",
		fmt.Sprintf("the longest lease TTL the table allows, %s to %s (default: the table's, 1m for a new table)", postgres.MinTTL, postgres.MaxTTL))
	cmd.Flags().StringVar(&o.Replication, "replication", "",
		"how the database replicates: async (a failover may lose commits) or sync (it never does) (default: the table's, async for a new table)")
	_ = cmd.RegisterFlagCompletionFunc("replication", cobra.FixedCompletions([]string{"async", "sync"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().BoolVar(&o.Restored, "restored", false,
		"the database was restored from a backup: quarantine every node ID for the maximum TTL and a tenth, and move its next epoch to a new era")
	return cmd
}

func initRun(ctx context.Context, o *InitOptions) error {
	c, table := o.Conn, o.Conn.Table()
	maxTTL, r := o.MaxTTL, o.nodes
	var (
		tc          store.TableConfig
		rows        []store.Row
		raisedFrom  time.Duration
		generation  int64
		quarantined time.Time
	)
	err := c.Timed(ctx, func(ctx context.Context) error {
		st, err := c.Store(r)
		if err != nil {
			return err
		}
		if old, err := st.ReadConfig(ctx); err == nil { // an existing table keeps what is not asked
			if o.MaxTTLGiven && maxTTL < old.MaxTTL {
				return cli.Usagef("--max-ttl %s: table %s records %s, and a maximum TTL is never lowered (a lease may already use it)",
					maxTTL, table, old.MaxTTL)
			}
			if !o.MaxTTLGiven {
				maxTTL = old.MaxTTL
			}
			if maxTTL > old.MaxTTL {
				raisedFrom = old.MaxTTL
			}
			if !o.Range.Given() {
				if st, err = c.Store(cli.NodeRange{Lo: old.MinNode, Hi: old.MaxNode}); err != nil {
					return err
				}
			}
		}
		if err := st.ApplyMode(ctx, maxTTL, store.Replication(o.Replication)); err != nil {
			return err
		}
		if o.Restored {
			var err error
			if generation, quarantined, err = st.Restored(ctx); err != nil {
				return err
			}
		}
		if err := st.CheckSchema(ctx); err != nil {
			return err
		}
		if tc, err = st.ReadConfig(ctx); err != nil {
			return err
		}
		if st, err = c.Store(cli.NodeRange{Lo: tc.MinNode, Hi: tc.MaxNode}); err != nil {
			return err
		}
		rows, _, err = st.List(ctx)
		return err
	})
	if err != nil {
		return cli.Needs("ownership of "+table+" (or CREATE on its schema, for a new table)", err)
	}
	stderr, stdout := o.Env.Err, o.Env.Out
	rec := cli.NodeRange{Lo: tc.MinNode, Hi: tc.MaxNode}
	if o.Range.Given() && rec != r {
		fmt.Fprintf(stderr, "nodeid: table %s keeps its range %s: a range is widened to include the one asked for (%s), never narrowed\n",
			table, rec, r)
	}
	if maxNode := int64(1)<<nodeid.DefaultNodeBits - 1; rec.Hi > maxNode {
		fmt.Fprintf(stderr, "nodeid: warning: node IDs above %d do not fit the default Snowflake layout (%d node bits): registries must use nodeid.WithNodeBits and generators a layout with as many node bits, or lease only a part of the range (--range, WithNodeRange)\n",
			maxNode, nodeid.DefaultNodeBits)
	}
	if raisedFrom > 0 && tc.Replication == store.Async {
		fmt.Fprintf(stderr, "nodeid: the maximum TTL was raised from %s to %s: before any registry uses a TTL above %s, check that every standby that may be promoted shows %s (nodeid list --dsn STANDBY -o json), or a failover to one that lacks the raise would quarantine for %s only\n",
			raisedFrom, tc.MaxTTL, raisedFrom, tc.MaxTTL, raisedFrom)
	}
	if o.Restored {
		fmt.Fprintf(stdout, "table %s: generation %d begins: every node ID is quarantined until %s (the maximum TTL %s and a tenth), and its next claim takes an epoch of a new era\n",
			table, generation, cli.Exact(quarantined), tc.MaxTTL)
	}
	_, err = fmt.Fprintf(stdout, "table %s is ready (history %s, configuration %s): node IDs %s, %d rows, maximum TTL %s, replication %s\n",
		table, postgres.HistoryTable(table), postgres.ConfigTable(table), rec, len(rows), tc.MaxTTL, tc.Replication)
	return err
}
