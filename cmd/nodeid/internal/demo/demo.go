package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/ids"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
	"github.com/nodeid/nodeid/pgserver"
	"github.com/nodeid/nodeid/postgres"
)

// Settings of the demo.
const (
	demoTable   = "nodeid_demo"
	demoWorkers = 3 // as many as node IDs: a replacement must wait for one
	// demoTTL is short, so that a killed worker's node ID lapses quickly,
	// and long enough that a loaded machine does not delay the survivors'
	// renewals past their deadlines (3s leases were lost that way).
	demoTTL     = 5 * time.Second
	demoMint    = 200 * time.Millisecond // between two IDs of a worker
	demoTimeout = 50 * time.Second       // the whole demo, server start included
	demoWait    = 20 * time.Second       // any one step
	// demoTakes is how long the demo takes, as the help and the README say:
	// measured 5.9 to 6.8 s from start to end, throwaway server included.
	demoTakes = "about 7 seconds"
	// demoFailoverTakes is how long "demo --failover" takes: measured 9.1
	// to 10.3 s, two servers included.
	demoFailoverTakes = "about 10 seconds"
)

// errInterrupted ends a demo stopped by Ctrl-C.
var errInterrupted = errors.New("interrupted")

// Options are the flags of demo.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Failover bool
}

// Validate checks that --failover is not given a database with --dsn: it
// starts its own servers. DATABASE_URL, which "nodeid --help" tells users to
// export, is left alone (failover says so).
func (o *Options) Validate() error {
	if !o.Failover {
		return nil
	}
	if dsn, source := o.Conn.DSNSource(); dsn != "" && source == "--dsn" {
		return cli.Usagef("--failover starts a primary and a standby of its own: it does not take a database (--dsn is set)")
	}
	return nil
}

// NewCmdDemo returns "nodeid demo". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdDemo(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Show leasing, minting, a crash and a takeover, on a throwaway PostgreSQL",
		Long: fmt.Sprintf(`Run the whole story in %s. Without --dsn or DATABASE_URL the demo
starts a throwaway PostgreSQL from the local server binaries (initdb and
postgres on PATH, or Debian's, Homebrew's or Postgres.app's) in a fresh
database; with one, it works in a scratch table (%s unless --table is
given) that must not exist yet, and drops it at the end.

%d worker processes (this program, re-executed) each lease a node ID with a
TTL of %s and mint an ID every %s with the fenced generator. The demo
kills one with SIGKILL, shows its node ID lapsing (expired) and being taken
over by a new worker with a higher epoch, traces an ID of each holder with
"who", stops the workers (they release their node IDs) and cleans up:
workers, tables or server, temporary files; also on Ctrl-C (exit code 130).

With --failover it shows a database failover instead, on a throwaway primary
and asynchronous standby (local server binaries; not with --dsn): the
workers follow the primary with a multi-host DSN; replication is cut, a
worker claims a node ID on the primary alone, the primary crashes and the
standby is promoted without that claim. The worker learns that its claim was
lost, the node ID stays quarantined for the table's maximum TTL and a tenth,
then a new worker claims it at an epoch of a new era, stamping after
every ID the lost claim could have minted, while the others keep their
leases. It takes %s.`,
			demoTakes, demoTable, demoWorkers, demoTTL, demoMint, demoFailoverTakes),
		Example: `  nodeid demo
  nodeid demo --failover
  DATABASE_URL=postgres://me@localhost/scratch nodeid demo --table nodeid_demo_2`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			if err := demoSupported(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("table") {
				c.SetTable(demoTable)
			}
			o.Conn = c
			return cli.Run(cmd.Context(), o, runF, demoRun)
		}),
	}
	cmd.Flags().BoolVar(&o.Failover, "failover", false, "show a database failover on a throwaway primary and standby")
	return cmd
}

func demoRun(ctx context.Context, o *Options) error {
	ictx, stop := o.Env.Interrupted(ctx)
	defer stop()
	ctx, cancel := context.WithTimeout(ictx, demoTimeout)
	defer cancel()
	d := &demo{env: o.Env, c: o.Conn, out: o.Env.Out, start: time.Now(), errw: &lockedWriter{w: o.Env.Err}, interrupted: ictx}
	var err error
	if o.Failover {
		err = d.failover(ctx)
	} else {
		err = d.run(ctx)
	}
	d.cleanup()
	switch {
	case errors.Is(err, errInterrupted) || ictx.Err() != nil:
		return &cli.ExitError{Code: cli.ExitInterrupted, Msg: "demo interrupted; workers stopped and everything it created removed"}
	case err != nil:
		return err
	}
	fmt.Fprintf(d.out, "\nDone in %s.\n", time.Since(d.start).Round(100*time.Millisecond))
	return nil
}

// demo is one run of the demo and what it must clean up.
type demo struct {
	env         *cli.Env
	c           *cli.Conn
	out         io.Writer
	errw        io.Writer
	start       time.Time
	interrupted context.Context // cancelled by Ctrl-C

	dsn      string
	workers  []*worker
	cleanups []func() // run in reverse order
}

func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.out, "\n==> "+format+"\n", args...)
}

func (d *demo) cleanup() {
	for _, w := range d.workers {
		w.stop(5 * time.Second)
	}
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
}

func (d *demo) run(ctx context.Context) error {
	if err := d.database(ctx); err != nil {
		return err
	}
	c, rng := d.c, cli.NodeRange{Lo: 0, Hi: demoWorkers - 1}

	d.step("nodeid init --table %s --range %s", c.Table(), rng)
	st, err := c.Store(rng)
	if err != nil {
		return err
	}
	if err := st.Apply(ctx, time.Minute); err != nil {
		return err
	}
	if err := d.table(ctx, true); err != nil {
		return err
	}

	d.step("Starting %d workers: separate processes, each leasing a node ID (TTL %s) and minting an ID every %s", demoWorkers, demoTTL, demoMint)
	if err := d.startWorkers(ctx); err != nil {
		return err
	}
	for _, w := range d.workers {
		_, node, epoch, minted := w.state()
		fmt.Fprintf(d.out, "%s (pid %d): node ID %d, epoch %d, IDs %d, %d, ...\n", w.owner, w.pid(), node, epoch, minted[0], minted[1])
	}
	if err := d.table(ctx, false); err != nil {
		return err
	}

	victim := d.workers[1]
	_, vnode, vepoch, _ := victim.state()
	d.step("Killing %s (pid %d, node ID %d) with SIGKILL: it cannot release its node ID", victim.owner, victim.pid(), vnode)
	victim.kill()
	_, _, _, vminted := victim.state()
	lastOfVictim := vminted[len(vminted)-1]
	fmt.Fprintf(d.out, "It minted %d IDs, the last %d. Its lease stays held until it expires:\n", len(vminted), lastOfVictim)
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("Waiting for node ID %d to lapse: nobody renews it, and a TTL after its last renewal it expires", vnode)
	if err := d.waitState(ctx, vnode, admin.Expired); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "Node ID %d expired after %s; it is free for the next claim, at a higher epoch:\n", vnode, time.Since(victim.killed).Round(100*time.Millisecond))
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("Starting demo-worker-%d: it takes over node ID %d", demoWorkers+1, vnode)
	heir, err := d.startWorker(demoWorkers + 1)
	if err != nil {
		return err
	}
	if err := d.waitMinted(ctx, heir, 1); err != nil {
		return err
	}
	_, hnode, hepoch, hminted := heir.state()
	fmt.Fprintf(d.out, "%s (pid %d): node ID %d, epoch %d (was %d), first ID %d: stamped after the old holder's horizon\n",
		heir.owner, heir.pid(), hnode, hepoch, vepoch, hminted[0])
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("nodeid who %d %d: each ID of node ID %d traced to its own holder", lastOfVictim, hminted[0], vnode)
	if err := d.who(ctx, lastOfVictim, hminted[0]); err != nil {
		return err
	}

	d.step("Stopping the workers with SIGTERM: each releases its node ID, recording the last millisecond it stamped")
	for _, w := range d.workers {
		if w != victim && w.lostReason() != "" {
			fmt.Fprintf(d.out, "%s had lost its lease: %s\n", w.owner, w.lostReason())
		}
		w.stop(10 * time.Second)
	}
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("nodeid show %d: the history of node ID %d", vnode, vnode)
	return d.show(ctx, st, vnode)
}

// database sets up the database: a throwaway server and a fresh database,
// or the scratch table of the DSN given, and registers their removal.
func (d *demo) database(ctx context.Context) error {
	c := d.c
	if dsn, source := c.DSNSource(); dsn != "" {
		d.step("Using the database of %s, in the scratch table %s", source, c.Table())
		st, err := c.Store(cli.NodeRange{Lo: 0, Hi: demoWorkers - 1})
		if err != nil {
			return err
		}
		switch err := st.CheckSchema(ctx); {
		case err == nil:
			return cli.Usagef("table %s already exists: the demo works in a scratch table of its own, which it drops at the end; name another with --table", c.Table())
		case postgres.SQLSTATE(err) != "42P01":
			return err
		}
		d.dsn = dsn
		d.cleanups = append(d.cleanups, d.dropTables)
		return nil
	}
	d.step("Starting a throwaway PostgreSQL (no --dsn or DATABASE_URL given)")
	srv, err := pgserver.StartLocal(ctx)
	if err != nil {
		if d.interrupted.Err() != nil {
			return errInterrupted
		}
		return fmt.Errorf("cannot start a throwaway PostgreSQL: %w; or give a database with --dsn or DATABASE_URL", err)
	}
	d.cleanups = append(d.cleanups, func() { _ = srv.Close() })
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		return err
	}
	d.cleanups = append(d.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.DropDatabase(ctx, db)
	})
	version, _ := srv.Version(ctx)
	version, _, _ = strings.Cut(version, " on ")
	fmt.Fprintf(d.out, "%s (%s) at %s, database %s; removed at the end\n", version, srv.Kind(), srv.Addr(), db)
	d.dsn = srv.DSN(db)
	c.SetDSN(d.dsn)
	return nil
}

// dropTables drops the scratch tables the demo created in the user's
// database.
func (d *demo) dropTables() {
	db, err := d.c.DB()
	if err != nil {
		return
	}
	table := d.c.Table()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The name was validated by postgres.ValidateTable: it needs no quoting.
	names := table + ", " + postgres.HistoryTable(table) + " and " + postgres.ConfigTable(table)
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table+", "+postgres.HistoryTable(table)+", "+postgres.ConfigTable(table)); err != nil {
		fmt.Fprintf(d.errw, "nodeid: could not drop the demo's tables %s: %s\n", names, cli.OneLine(err.Error()))
		return
	}
	fmt.Fprintf(d.out, "Dropped the scratch tables %s.\n", names)
}

// startWorkers starts demo workers 1 to demoWorkers and waits until each
// has minted five IDs, which take a second: their leases have been renewed
// meanwhile.
func (d *demo) startWorkers(ctx context.Context) error {
	for i := 1; i <= demoWorkers; i++ {
		if _, err := d.startWorker(i); err != nil {
			return err
		}
	}
	for _, w := range d.workers {
		if err := d.waitMinted(ctx, w, 5); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) startWorker(n int) (*worker, error) {
	w, err := startWorker(d.env, n, d.dsn, d.errw, "--table", d.c.Table(), "--range", fmt.Sprintf("0-%d", demoWorkers-1),
		"--ttl", demoTTL.String(), "--interval", demoMint.String())
	if err != nil {
		return nil, fmt.Errorf("cannot start a worker process: %w", err)
	}
	d.workers = append(d.workers, w)
	return w, nil
}

// table prints the lease table, all rows if all.
func (d *demo) table(ctx context.Context, all bool) error {
	n, err := table.Snapshot(ctx, d.c)
	if err != nil {
		return d.wrap(ctx, err)
	}
	return n.Write(d.out, &table.ListOptions{All: all, Output: cli.OutputFlag{Value: cli.OutTable}})
}

// who traces IDs of the default layout.
func (d *demo) who(ctx context.Context, idList ...bw.ID) error {
	t, err := ids.Trace(ctx, d.c, idList...)
	if err != nil {
		return d.wrap(ctx, err)
	}
	return t.Write(d.out, d.env.Loc)
}

// waitMinted waits until w has minted n IDs.
func (d *demo) waitMinted(ctx context.Context, w *worker, n int) error {
	return d.until(ctx, fmt.Sprintf("%s to mint an ID", w.owner), func() (bool, error) {
		if _, _, _, minted := w.state(); len(minted) >= n {
			return true, nil
		}
		if w.done() {
			return false, fmt.Errorf("%s exited before minting an ID (see its messages above)", w.owner)
		}
		return false, nil
	})
}

// waitState waits until node is in state s.
func (d *demo) waitState(ctx context.Context, node int64, s admin.State) error {
	return d.until(ctx, fmt.Sprintf("node ID %d to be %s", node, s), func() (bool, error) {
		n, err := table.Snapshot(ctx, d.c)
		if err != nil {
			return false, err
		}
		for _, r := range n.Rows {
			if r.NodeID == node {
				return r.State(n.Now) == s, nil
			}
		}
		return false, fmt.Errorf("node ID %d is not in table %s", node, d.c.Table())
	})
}

// until polls cond until it holds, fails, ctx ends or demoWait passes.
func (d *demo) until(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(demoWait)
	for {
		ok, err := cond()
		switch {
		case err != nil:
			return d.wrap(ctx, err)
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("waited %s for %s", demoWait, what)
		}
		select {
		case <-ctx.Done():
			return d.wrap(ctx, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wrap turns the failures that an interruption causes into errInterrupted.
func (d *demo) wrap(ctx context.Context, err error) error {
	if d.interrupted.Err() != nil {
		return errInterrupted
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the demo took longer than %s: %w", demoTimeout, err)
	}
	return err
}
