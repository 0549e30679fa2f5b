package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/postgres"
)

// InitOptions are the flags of init.
type InitOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Range       cli.RangeFlags
	Layout      idlayout.LayoutFlags // --layout and --node-bits: the node IDs the table's IDs can hold
	Yes         bool                 // create or add more than cli.ConfirmRows rows without asking
	MaxTTL      time.Duration
	MaxTTLGiven bool // --max-ttl was given: else the table's, or the default
	Replication string
	Restored    bool
	// NoStandbyWait confirms a raise of the maximum TTL without waiting for
	// the standbys: the operator has checked them.
	NoStandbyWait bool
	// StandbyWait bounds the wait for the standbys to replay a raise.
	StandbyWait time.Duration
	// Grant and GrantOperator name roles to grant what a client, or an
	// operator, of the table needs (postgres.GrantSQL, GrantOperatorSQL).
	Grant, GrantOperator []string

	nodes    cli.NodeRange // resolved by Validate
	nodeBits int           // of Layout, resolved by Validate
}

// Validate checks the flags and resolves the node range, which must fit
// the layout's node bits.
func (o *InitOptions) Validate() error {
	r, err := o.Range.Resolve()
	if err != nil {
		return err
	}
	l, err := o.Layout.Layout()
	if err != nil {
		return err
	}
	if l.NodeBits < 1 || l.NodeBits > cli.MaxNodeBits {
		return cli.Usagef("--node-bits %d: it must be 1 to %d (a table holds node IDs 0 to %d)", l.NodeBits, cli.MaxNodeBits, postgres.MaxNode)
	}
	o.nodes, o.nodeBits = r, int(l.NodeBits)
	if o.Range.Given() {
		if err := o.Range.CheckNodeBits(r, o.nodeBits, o.Layout.Described()); err != nil {
			return err
		}
	}
	if !o.MaxTTLGiven {
		o.MaxTTL = postgres.DefaultMaxTTL
	}
	if o.MaxTTL < nodeid.MinTTL || o.MaxTTL > nodeid.MaxTTL {
		return cli.Usagef("--max-ttl %s: it must be %s to %s", o.MaxTTL, nodeid.MinTTL, nodeid.MaxTTL)
	}
	mode := admin.Replication(o.Replication)
	if mode != "" && mode != admin.Async && mode != admin.Sync {
		return cli.Usagef("--replication %q: it must be async (a failover may lose commits) or sync (it never does)", o.Replication)
	}
	if o.Restored && !o.MaxTTLGiven {
		return cli.Usagef("--restored needs --max-ttl: the longest TTL any holder of the restored database's old history may hold, which a copy cannot know (it may be older than a raise of the maximum); every node ID is quarantined for it and a tenth")
	}
	if o.StandbyWait <= 0 {
		return cli.Usagef("--standby-wait %s: it must be positive", o.StandbyWait)
	}
	return validRoles(o.Grant, o.GrantOperator)
}

// validRoles checks the roles of --grant and --grant-operator.
func validRoles(client, operator []string) error {
	for _, r := range append(append([]string{}, client...), operator...) {
		if r == "" || len(r) > 63 {
			return cli.Usagef("--grant %q: a role name is 1 to 63 bytes", r)
		}
	}
	return nil
}

// grantSQL returns the statements of --grant and --grant-operator.
func grantSQL(table string, client, operator []string) (string, error) {
	var b strings.Builder
	for _, r := range client {
		q, err := postgres.GrantSQL(table, r)
		if err != nil {
			return "", err
		}
		b.WriteString(q)
	}
	for _, r := range operator {
		q, err := postgres.GrantOperatorSQL(table, r)
		if err != nil {
			return "", err
		}
		b.WriteString(q)
	}
	return b.String(), nil
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

A range must fit the node field of the IDs minted from the table: 10 bits,
0-1023, in the default layout; give the layout with --layout or --node-bits
(up to 20) for a wider one. Creating or adding more than 65,536 rows asks
for confirmation on stdin, unless --yes is given: a range that large is
more often a slip than a fleet.

The maximum TTL bounds the TTL of every lease of the table: a process asking
for a longer one is refused. After a database failover that may have lost
commits, node IDs last claimed before it stay unclaimable for this long plus
a tenth: keep it close to the TTL your fleet uses. Wherever the server
tells its identity a raise is recorded as pending, which every quarantine counts with at once;
init then waits (at most --standby-wait) until every standby the primary
streams to (pg_stat_replication) has replayed it, and only then lets leases
use it, so that a failover to a standby that lacks the raise cannot
quarantine for the old maximum only. Seeing the position of a standby
that streams without a replication slot needs pg_read_all_stats (one that
streams from a physical slot is judged by its slot); without it, or for
standbys the primary does not stream to now, check them yourself and pass
--no-standby-wait. WAL clients that replay nothing (pg_receivewal,
pg_basebackup -X stream, logical consumers) are no standbys, and never
waited for. A table created there is pending in the same way, and hands out no
node ID, until every standby and replication slot the server has once
the creation has committed has replayed it (confirmed at once where there
are none): a failover to one that lacks it would let a table created
again there hand out the node IDs the lost one did. init waits for that
too.

--replication records how the database replicates: async (the default for a
new table: a failover may lose the latest commits) or sync (the HA setup
never loses an acknowledged commit). Every claim, and init, watches the
server's identity and timeline wherever the server answers the functions
pg_current_wal_lsn, pg_walfile_name and pg_control_system, whatever the
mode: a synchronous standby may still lack a commit whose wait was
cancelled. After a failover, a move or an upgrade every node ID is then
quarantined for the maximum TTL and a tenth. Only sync on a server that
refuses the functions (Aurora) trusts the service: no quarantine after a
failover, no WAL function needed. Changing it on an existing table takes
effect for each registry at its next claim.

--restored --max-ttl D declares a restore: after a dump restored into
another cluster, an upgrade or a move (another system identifier, which
the table detects: until the declaration it hands out no node ID, and
processes exit with code 4), and after a restore nothing inside the
database can tell (a volume snapshot rolled back, a base backup or a
point-in-time restore, a copy that served while the old server still did).
Run it after any restore, before clients connect, with the old server
stopped. D is the longest TTL any holder of the old history may hold: a
copy cannot know it, for it may predate a raise of the maximum. Every node
ID is then quarantined for the larger of D and the recorded maximum, and a
tenth, from now, and its next claim takes an epoch of a new era, above any
the restored or the lost history could hold.

--grant ROLE gives a client role what leasing needs, and nothing more:
EXECUTE on the table's client functions (claim, renew, release, verify, and
the confirmations a first use may make), USAGE on its schema and SELECT on
its tables; never INSERT, UPDATE, DELETE or TRUNCATE, so that no client can
rewrite the fencing state. --grant-operator ROLE adds the operator
functions (evict, the restore's declaration, prune). The functions run as
the tables' owner (SECURITY DEFINER); every other role gets SQLSTATE 42501.
See docs/sql.md.`,
		Example: `  nodeid init
  nodeid init --nodes 256 --max-ttl 30s
  nodeid init --table ids.snowflake_nodes --range 512-1023
  nodeid init --range 0-99999 --node-bits 17 --yes
  nodeid init --replication sync          # Aurora and other services without the WAL functions
  nodeid init --restored --max-ttl 1m     # after a restore, a move or an upgrade
  nodeid init --grant app --grant-operator ops`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			o.MaxTTLGiven = cmd.Flags().Changed("max-ttl")
			return cli.Run(cmd.Context(), o, runF, initRun)
		}),
	}
	o.Range.Register(cmd)
	o.Layout.RegisterNodeBits(cmd, "width of the node field of the IDs minted from the table's node IDs: a range beyond it is refused")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, fmt.Sprintf("create or add more than %s rows without asking", cli.Count(cli.ConfirmRows)))
	cmd.Flags().Var(cli.NewRequiredDurationValue(&o.MaxTTL), "max-ttl",
		fmt.Sprintf("the longest lease TTL the table allows, %s to %s (default: the table's, 1m for a new table)", nodeid.MinTTL, nodeid.MaxTTL))
	cmd.Flags().StringVar(&o.Replication, "replication", "",
		"how the database replicates: async (a failover may lose commits) or sync (it never does) (default: the table's, async for a new table)")
	_ = cmd.RegisterFlagCompletionFunc("replication", cobra.FixedCompletions([]string{"async", "sync"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().BoolVar(&o.Restored, "restored", false,
		"declare a restore, a move or an upgrade (needs --max-ttl, the longest TTL the old history's holders may hold): quarantine every node ID for it and a tenth, and move its next epoch to a new era")
	cmd.Flags().BoolVar(&o.NoStandbyWait, "no-standby-wait", false,
		"confirm a raise of the maximum TTL, or the table's creation, without waiting for the standbys to replay it (you have checked them)")
	cmd.Flags().StringArrayVar(&o.Grant, "grant", nil,
		"grant a client role what it needs: EXECUTE on the table's client functions, SELECT on its tables, and no write on them (repeatable)")
	cmd.Flags().StringArrayVar(&o.GrantOperator, "grant-operator", nil,
		"grant a role what a client needs and the operator functions too: evict, restored and prune (repeatable)")
	cmd.Flags().DurationVar(&o.StandbyWait, "standby-wait", time.Minute,
		"how long to wait for every standby to replay a raise of the maximum TTL, or the table's creation")
	return cmd
}

func initRun(ctx context.Context, o *InitOptions) error {
	if err := confirmRows(ctx, o); err != nil {
		return err
	}
	c, table := o.Conn, o.Conn.Table()
	maxTTL, r := o.MaxTTL, o.nodes
	var (
		tc          admin.TableConfig
		rows        []admin.Row
		generation  int64
		quarantined time.Time
		declared    = maxTTL
	)
	err := c.Timed(ctx, func(ctx context.Context) error {
		st, err := c.Store(r)
		if err != nil {
			return err
		}
		if old, err := st.ReadConfig(ctx); err == nil { // an existing table keeps what is not asked
			if o.Restored {
				declared = maxTTL // the quarantine's bound, which may be below the recorded maximum
				maxTTL = max(maxTTL, old.MaxTTL)
			}
			if o.MaxTTLGiven && maxTTL < old.MaxTTL {
				return cli.Conflictf("--max-ttl %s: table %s records %s, and a maximum TTL is never lowered (a lease may already use it): leave out --max-ttl, or give %s or more",
					maxTTL, table, old.MaxTTL, old.MaxTTL)
			}
			if !o.MaxTTLGiven {
				maxTTL = old.MaxTTL
			}
			if !o.Range.Given() {
				if st, err = c.Store(cli.NodeRange{Lo: old.MinNode, Hi: old.MaxNode}); err != nil {
					return err
				}
			}
		}
		if err := st.ApplyMode(ctx, maxTTL, admin.Replication(o.Replication)); err != nil {
			return err
		}
		if grants, err := grantSQL(table, o.Grant, o.GrantOperator); err != nil {
			return err
		} else if grants != "" {
			if _, err := st.DB().ExecContext(ctx, grants); err != nil {
				return fmt.Errorf("grant: %w", err)
			}
		}
		if o.Restored {
			var err error
			if generation, quarantined, err = st.Restored(ctx, declared); err != nil {
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
	if maxNode := cli.MaxNodeOf(o.nodeBits); rec.Hi > maxNode {
		fmt.Fprintf(stderr, "nodeid: warning: table %s holds node IDs %s, and those above %d do not fit the %d node bits of the layout (%s): registries must use nodeid.WithNodeBits and generators a layout with as many node bits, or lease only a part of the range (--range, WithNodeRange)\n",
			table, rec, maxNode, o.nodeBits, o.Layout.Described())
	}
	if o.Restored {
		fmt.Fprintf(stdout, "table %s: generation %d begins: every node ID is quarantined until %s (the longest lease of the old history, %s, and a tenth), and its next claim takes an epoch of a new era\n",
			table, generation, cli.Exact(quarantined), max(declared, tc.MaxTTL, tc.PendingMaxTTL))
	}
	if tc.CreationPending {
		if tc, err = confirmCreation(ctx, o); err != nil {
			return err
		}
	}
	if tc.PendingMaxTTL > 0 {
		if tc, err = confirmRaise(ctx, o, tc.MaxTTL); err != nil {
			return err
		}
	}
	if tc.RestorePending {
		fmt.Fprintf(stderr, "nodeid: table %s is on another server than the one it records (a dump restored elsewhere, an upgrade, a move) and hands out no node ID until you declare the restore: nodeid init --restored --max-ttl D, D the longest TTL any holder of the old history may hold\n",
			table)
	}
	_, err = fmt.Fprintf(stdout, "table %s is ready (history %s, configuration %s): node IDs %s, %d rows, maximum TTL %s, replication %s\n",
		table, postgres.HistoryTable(table), postgres.ConfigTable(table), rec, len(rows), tc.MaxTTL, tc.Replication)
	return err
}

// confirmCreation ends the table's pending creation once every standby
// the primary streams to, and every physical replication slot, has
// replayed it (or at once with --no-standby-wait), and returns the table's
// configuration then: until then no node ID is handed out.
func confirmCreation(ctx context.Context, o *InitOptions) (admin.TableConfig, error) {
	c, table := o.Conn, o.Conn.Table()
	st, err := c.Store(o.nodes)
	if err != nil {
		return admin.TableConfig{}, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.StandbyWait) // the wait for the standbys, across every server
	defer cancel()
	elsewhere := ""
	for {
		mark, err := st.PendingCreation(ctx)
		if err != nil || !mark.Pending {
			if err != nil {
				return admin.TableConfig{}, err
			}
			return st.ReadConfig(ctx)
		}
		if again, err := waitForMark(waitCtx, o, st, mark.Mark, "the creation", &elsewhere); err != nil {
			return admin.TableConfig{}, err
		} else if again {
			continue
		}
		_, err = st.ConfirmCreation(ctx, mark)
		if !errors.Is(err, admin.ErrServerChanged) {
			if err != nil {
				return admin.TableConfig{}, err
			}
			return st.ReadConfig(ctx)
		}
		fmt.Fprintf(o.Env.Err, "nodeid: the server of table %s changed (a failover, a move or a restart) while init waited for its standbys: reading the pending creation again there\n", table)
	}
}

// confirmRaise makes the pending raise of the maximum TTL the maximum, once
// every standby the primary streams to has replayed it (or at once with
// --no-standby-wait), and returns the table's configuration then. A role
// that cannot see the standbys' positions is refused, saying why.
func confirmRaise(ctx context.Context, o *InitOptions, from time.Duration) (admin.TableConfig, error) {
	c, table := o.Conn, o.Conn.Table()
	st, err := c.Store(o.nodes)
	if err != nil {
		return admin.TableConfig{}, err
	}
	stderr := o.Env.Err
	waitCtx, cancel := context.WithTimeout(ctx, o.StandbyWait) // the wait for the standbys, across every server
	defer cancel()
	var (
		mark      admin.RaiseMark
		maxTTL    time.Duration
		raised    bool
		elsewhere string
	)
	for {
		// The raise to confirm is the one pending now, with a WAL position
		// after its commit and the server it was read on: a raise made while
		// init waits stays pending, since the standbys were not seen to
		// have it, and a position read before a failover says nothing of
		// the new server's standbys.
		if mark, err = st.PendingRaise(ctx); err != nil || mark.Raise == 0 {
			if err != nil {
				return admin.TableConfig{}, err
			}
			return st.ReadConfig(ctx)
		}
		if again, err := waitForMark(waitCtx, o, st, mark.Mark, "the raise of the maximum TTL", &elsewhere); err != nil {
			return admin.TableConfig{}, err
		} else if again {
			continue
		}
		maxTTL, raised, err = st.ConfirmRaise(ctx, mark)
		if !errors.Is(err, admin.ErrServerChanged) {
			break
		}
		fmt.Fprintf(stderr, "nodeid: the server of table %s changed (a failover, a move or a restart) while init waited for its standbys: reading the pending raise again there\n", table)
	}
	if err != nil {
		return admin.TableConfig{}, err
	}
	if raised {
		fmt.Fprintf(stderr, "nodeid: the maximum TTL of table %s is raised from %s to %s; a standby without a replication slot that was not streaming, and a backup taken before now, lack the raise: after restoring one, declare it with nodeid init --restored --max-ttl %s\n",
			table, from, maxTTL, maxTTL)
	}
	tc, err := st.ReadConfig(ctx)
	if err == nil && tc.PendingMaxTTL > 0 {
		fmt.Fprintf(stderr, "nodeid: a raise of the maximum TTL of table %s to %s was made while init waited for the standbys to replay the raise to %s: it stays pending; run init again to confirm it\n",
			table, tc.PendingMaxTTL, mark.Raise)
	}
	return tc, err
}

// waitForMark waits for the standbys to have mark, unless
// --no-standby-wait; again is set when the mark must be read again: a
// replication slot made, or taken up by another process, meanwhile, or
// the standbys read on another server than the mark's (a failover since),
// once a server: read twice on the same other server (a pooler that sends
// reads to a standby), they end the wait with their error. *elsewhere is
// the last mark's server whose standbys were read elsewhere.
func waitForMark(ctx context.Context, o *InitOptions, st *admin.Store, mark admin.Mark, what string, elsewhere *string) (again bool, err error) {
	if o.NoStandbyWait {
		return false, nil
	}
	err = waitForStandbys(ctx, o, st, mark, what)
	switch {
	case errors.Is(err, admin.ErrSlotsChanged):
		return true, nil
	case errors.Is(err, admin.ErrServerChanged) && mark.Server != *elsewhere:
		*elsewhere = mark.Server
		fmt.Fprintf(o.Env.Err, "nodeid: %v: reading %s of table %s again\n", err, what, o.Conn.Table())
		return true, nil
	}
	return false, err
}

// waitForStandbys waits until every standby the primary streams to, and
// every physical replication slot, has WAL position lsn, saying once on
// stderr which have not; ctx bounds the wait (--standby-wait). what is
// what they must replay, for messages.
func waitForStandbys(ctx context.Context, o *InitOptions, st *admin.Store, mark admin.Mark, what string) error {
	table := o.Conn.Table()
	err := st.WaitStandbys(ctx, mark, func(lsn string, behind []admin.Standby) {
		fmt.Fprintf(o.Env.Err, "nodeid: waiting for the standbys and replication slots to replay %s (WAL position %s): %s\n", what, lsn, admin.Labels(behind))
	})
	var (
		hidden *admin.HiddenStandbyError
		late   *admin.StandbysBehindError
	)
	switch {
	case errors.As(err, &hidden):
		return fmt.Errorf("%s of table %s is recorded as pending and not confirmed: %w; grant that, or check every standby that may be promoted has replayed %s and run init again with --no-standby-wait",
			what, table, err, hidden.LSN)
	case errors.As(err, &late):
		return fmt.Errorf("%s of table %s stays pending: after %s %w; run init again once they have: a standby that is paused or delayed, or down with its replication slot kept, is still one that may be promoted",
			what, table, o.StandbyWait, err)
	}
	return err
}

// confirmRows asks for confirmation, unless --yes is given, before init
// creates or adds more than cli.ConfirmRows rows: the rows of the range
// for a new table (at most those for a table of an earlier version, which
// records no range), else those that widening the table's range to include
// the one asked for adds. Without an answer on stdin it fails, naming the
// count and --yes. Without --range or --nodes init adds no more than the
// default range's rows.
func confirmRows(ctx context.Context, o *InitOptions) error {
	if o.Yes || !o.Range.Given() {
		return nil
	}
	c, table, r := o.Conn, o.Conn.Table(), o.nodes
	var (
		old     admin.TableConfig
		readErr error
	)
	err := c.Timed(ctx, func(ctx context.Context) error {
		st, err := c.Store(r)
		if err != nil {
			return err
		}
		old, readErr = st.ReadConfig(ctx)
		return nil // init's own statements say why a table cannot be read, if it matters
	})
	if err != nil {
		return err
	}
	adds := r.Size()
	question := fmt.Sprintf("Create table %s with node IDs %s, %s rows?", table, r, cli.Count(adds))
	what := fmt.Sprintf("%s creates table %s with %s rows, and more than %s are created only when confirmed",
		o.Range.Flag(), table, cli.Count(adds), cli.Count(cli.ConfirmRows))
	switch {
	case readErr == nil:
		from := cli.NodeRange{Lo: old.MinNode, Hi: old.MaxNode}
		to := cli.NodeRange{Lo: min(from.Lo, r.Lo), Hi: max(from.Hi, r.Hi)}
		adds = to.Size() - from.Size()
		question = fmt.Sprintf("Widen the range of table %s from %s to %s, adding %s rows?", table, from, to, cli.Count(adds))
		what = fmt.Sprintf("%s adds %s rows to table %s, and more than %s are added only when confirmed",
			o.Range.Flag(), cli.Count(adds), table, cli.Count(cli.ConfirmRows))
	case errors.Is(readErr, admin.ErrUnconfigured):
		question = fmt.Sprintf("Bring table %s up to date and fill node IDs %s, up to %s rows?", table, r, cli.Count(adds))
		what = fmt.Sprintf("%s adds up to %s rows to table %s, and more than %s are added only when confirmed",
			o.Range.Flag(), cli.Count(adds), table, cli.Count(cli.ConfirmRows))
	}
	if adds <= cli.ConfirmRows {
		return nil
	}
	stderr := o.Env.Err
	fmt.Fprintf(stderr, "%s [y/N] ", question)
	ok, err := confirm(o.Env.In, fmt.Errorf("%s: no answer on stdin; pass --yes to go ahead", what))
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: the answer was not yes; nothing changed", what)
	}
	return nil
}
