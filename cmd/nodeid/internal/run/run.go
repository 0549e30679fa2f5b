package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/holder"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
)

// The environment of a command started by "nodeid run".
const (
	EnvNode       = "NODEID_NODE"               // the leased node ID
	EnvEpoch      = "NODEID_EPOCH"              // the claim's fencing epoch
	EnvOwner      = "NODEID_OWNER"              // the holder name recorded on the lease (for the statement of schema --verify-sql)
	EnvGrace      = "NODEID_DEADLINE_GRACE"     // whole milliseconds between SIGTERM and the deadline
	EnvHorizonMs  = "NODEID_HORIZON_MS"         // unix ms: stamp only IDs after it
	EnvCeilingMs  = "NODEID_HORIZON_CEILING_MS" // unix ms: stamp no ID after it (as of the start)
	EnvDeadlineMs = "NODEID_DEADLINE_MS"        // unix ms: the lease's deadline by the wall clock (as of the start)
	EnvLeaseFile  = "NODEID_LEASE_FILE"         // the lease file, rewritten at every renewal
)

// dbSecretEnv are the variables that may hold the database's password:
// the command does not get them unless --keep-db-env is given.
var dbSecretEnv = []string{cli.EnvDatabaseURL, "PGPASSWORD", "PGSSLPASSWORD"}

// waitReportEvery is how often run --wait says it is still waiting.
var waitReportEvery = 30 * time.Second

// Options are the flags and the command of run.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	holder.Flags
	Wait        bool
	WaitTimeout time.Duration // --wait-timeout, or --timeout with --wait
	Timeout     time.Duration // --timeout: for one release, --wait-timeout's old name
	KeepDBEnv   bool
	MetricsAddr string
	Layout      idlayout.LayoutFlags // --layout and --node-bits: how many node IDs the command's IDs hold
	Exports     exportFlags
	Partition   bool     // judge the exports over --range alone
	Argv        []string // the command and its arguments

	nodes    cli.NodeRange // resolved by Validate
	nodeBits int           // of Layout, resolved by Validate
	waitFlag string        // the flag that bounds the wait, for messages
}

// Validate checks the flags: the grace, the layout, --wait-timeout, the node
// range.
func (o *Options) Validate() error {
	if err := o.ValidateGrace(); err != nil {
		return err
	}
	l, err := o.Layout.Layout()
	if err != nil {
		return err
	}
	o.nodeBits = int(l.NodeBits)
	o.waitFlag = "--wait-timeout"
	switch {
	case o.WaitTimeout > 0 && !o.Wait:
		return cli.Usagef("--wait-timeout %s: it bounds --wait, which is not given", o.WaitTimeout)
	case o.Timeout > 0 && o.Wait && o.WaitTimeout == 0:
		// The old name of the wait's bound, kept for one release: scripts
		// use it. Without --wait, --timeout is the global flag's, which
		// run does not use (it keeps its own timing).
		o.WaitTimeout, o.waitFlag = o.Timeout, "--timeout"
	}
	r, err := o.Nodes()
	if err != nil {
		return err
	}
	o.nodes = r
	switch {
	case o.Partition && len(o.Exports.list) == 0:
		return cli.Usagef("--partition: it says over which node IDs --export is judged, and there is no --export")
	case o.Partition && !o.Range.Given():
		return cli.Usagef("--partition: the exports are then judged over this process's node range alone; give it with --range or --nodes")
	}
	return nil
}

// NewCmdRun returns "nodeid run". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdRun(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARGS...]",
		Short: "Run a program in any language under a node-ID lease",
		Long: `Acquire a node ID, start COMMAND with the lease in its environment, renew the
lease while it runs, stop it if the lease is lost, release the node ID when
it exits, and exit with its exit code (128+N if signal N killed it), or 5
if it was stopped because the lease ended.

The command's environment gets:
  NODEID_NODE                the node ID to put in the IDs it mints
  NODEID_EPOCH               the claim's fencing epoch (for epoch bits or
                             fencing tokens)
  NODEID_OWNER               the holder name recorded on the lease (with
                             NODEID_NODE and NODEID_EPOCH, for the statement
                             of "nodeid schema --verify-sql")
  NODEID_HORIZON_MS          unix milliseconds: stamp only IDs strictly after it
                             (nodeid run starts the command once the wall clock
                             has passed it, waiting up to TTL/5, or for as long
                             as it takes with --wait)
  NODEID_HORIZON_CEILING_MS  unix milliseconds: stamp no ID after it, as of the
                             start (renewals raise it)
  NODEID_DEADLINE_MS         unix milliseconds: the lease's deadline by the wall
                             clock, as of the start (renewals move it)
  NODEID_DEADLINE_GRACE      whole milliseconds (--grace): the time the command
                             is given between SIGTERM and the deadline
  NODEID_LEASE_FILE          a file rewritten (write, then rename) at every
                             renewal and when the lease ends, one key=value a
                             line: node, epoch, held (true or false),
                             deadline_ms, deadline_boottime_ns (the deadline on
                             CLOCK_BOOTTIME, which no clock step moves) and
                             horizon_ceiling_ms
DATABASE_URL, PGPASSWORD and PGSSLPASSWORD are removed from it unless
--keep-db-env is given.

The contract: on SIGTERM the command must stop minting IDs at once; it may
spend up to NODEID_DEADLINE_GRACE milliseconds on a shutdown that mints
nothing. The grace must be at most half the TTL (renewals run every TTL/3).

How the command is bounded: it runs under a warden, a small nodeid process
that leads the command's process group, adopts every orphan of the
command's tree (a child subreaper, so a double fork or setsid does not take
a process out of it) and holds the lease's deadline on its own monotonic
clock. The warden sends SIGTERM to the group when the lease is lost (taken
over, evicted, expired) or a grace before the deadline if no renewal has
moved it, and SIGKILL to every process descended from it: at the deadline;
when the wall clock reaches the lease's horizon ceiling less TTL/20 (a
forward step of the clock); and at once if nodeid run dies. Only a renewal
by a running nodeid run moves the deadline, so a stopped (SIGSTOP, Ctrl-Z)
or killed nodeid run does not extend it; and the deadline precedes the
lease's expiry in the database: nothing the command started still runs
when another process can claim the node ID. Should the warden itself be
killed, nodeid run adopts the command's processes and kills them at once;
should it be stopped, nodeid run kills them at the deadline.

When the command exits, whatever it left running is killed, and the node ID
is released with an exact horizon: the wall-clock time read once every
process of the command is gone, so that the next holder may start at once.
If the wall clock was set (stepped) while the command ran, the horizon is
the larger of that time and the ceiling, which covers the stamps made
before a backward step. A command that could not start leaves the previous
holder's horizon in place.

Signals: SIGINT, SIGTERM and SIGHUP to nodeid run are passed on to the
command's process group. Ctrl-Z (SIGTSTP) stops the command's group, then
nodeid run; fg or bg (SIGCONT) continues both. A command stopped for longer
than the lease allows is killed at the deadline. In its own, background,
process group the command cannot read from the terminal: run services, not
interactive programs.

What still needs the command's cooperation:
  - After a forward step of the wall clock straight past the ceiling less
    TTL/20, the command may stamp IDs after the ceiling for as long as the
    warden takes to kill it: the time the kernel takes to wake it, one read
    of /proc and a SIGKILL to each process, which a loaded host lengthens.
    (A step that lands short of the ceiling less TTL/20 leaves TTL/20 for
    that.) A command that reads horizon_ceiling_ms from NODEID_LEASE_FILE,
    and stamps nothing after it, makes none.
  - The warden kills the processes of its own tree only: a process the
    command has started through another (a systemd unit, a container
    runtime, ssh, a job queue) is outside it.
  - Unless nodeid run runs as the root user, the warden cannot kill a
    descendant that runs as another user (a setuid program).
  - Stamps must come from this host's wall clock.

Passwords: a password in --dsn is visible to every user of this host (ps,
/proc); give it in PGPASSWORD, in a password file (~/.pgpass, or the file
PGPASSFILE names) or in DATABASE_URL, which only the same user and the
root user can read.

Metrics: with --metrics-addr HOST:PORT, nodeid run serves the lease's
metrics (the library's nodeid_* instruments) and its own process's (go_*,
process_*) in Prometheus's text format on /metrics, and /healthz: 200 "ok"
while the lease is held and its deadline is more than the grace away, 503
with the reason before the claim, once the lease is lost or ended, and
when a renewal is overdue (for a liveness or readiness probe).

Exit codes: the command's; 1 if it could not start or the database failed;
2 bad usage; 3 no node ID available (or --wait-timeout passed); 5 if the lease
ended while the command ran and nodeid run stopped it, whatever the
command's own code (a command that exits 0 on SIGTERM must not look
finished to a service manager that restarts on failure); 130 if
interrupted while waiting for a node ID.

nodeid run needs Linux (a child subreaper, CLOCK_BOOTTIME timers, /proc):
elsewhere it refuses at once, and runs nothing unbounded.`,
		Example: `  nodeid run -- python3 service.py
  nodeid run --ttl 30s --grace 5s --owner billing-7 -- java -jar billing.jar
  nodeid run --wait --wait-timeout 5m --range 0-63 -- ./worker --flag`,
		Args: cli.MinArgs(1, "a command to run, after --"),
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, c *cli.Conn) error {
			// Never an unbounded command: without the warden, nothing runs.
			if err := warden.Supported(); err != nil {
				return err
			}
			o.Conn, o.Argv = c, args
			return cli.Run(cmd.Context(), o, runF, runUnderLease)
		}),
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // flags after COMMAND are the command's
	o.Register(cmd, "time between SIGTERM and the deadline; at most TTL/2")
	fl.BoolVar(&o.Wait, "wait", false, "wait for a node ID to free up instead of exiting with code 3")
	fl.Var(&cli.DefaultedDuration{DurationValue: cli.NewDurationValue(&o.WaitTimeout, 0)}, "wait-timeout",
		"with --wait: give up after this long, with exit code 3 (default: wait as long as it takes)")
	fl.Var(&cli.DefaultedDuration{DurationValue: cli.NewDurationValue(&o.Timeout, 0)}, "timeout",
		"not used by run, which keeps its own timing; with --wait, for this release only, --wait-timeout's old name")
	fl.BoolVar(&o.KeepDBEnv, "keep-db-env", false, "pass DATABASE_URL, PGPASSWORD and PGSSLPASSWORD on to the command")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on /metrics and the lease's health on /healthz at HOST:PORT (\":9464\")")
	o.Layout.RegisterNodeBits(cmd, "width of the node field of the IDs the command mints: a node range beyond it is refused")
	o.Exports.register(cmd)
	fl.BoolVar(&o.Partition, "partition", false,
		"judge --export over --range alone, not the table's whole range: the processes that lease the table's other node IDs run generators whose IDs never meet these")
	return cmd
}

func runUnderLease(ctx context.Context, o *Options) error {
	c, env, table, r := o.Conn, o.Env, o.Conn.Table(), o.nodes
	clock, err := wallClock(env.Getenv)
	if err != nil {
		return err
	}
	db, err := c.DB()
	if err != nil {
		return err
	}
	if err := checkExports(ctx, c, &o.Exports, o.Partition, o.Range.Given(), r); err != nil {
		return err
	}
	opts := append(o.Options(table), nodeid.WithNodeBits(o.nodeBits),
		nodeid.WithLogger(holder.NewLogger(env.Err, slog.LevelInfo)))
	// Without --range or --nodes, the table's recorded range (a new table,
	// with --create, gets the default one).
	which := "a node ID"
	if o.Range.Given() {
		if limit := int64(1)<<min(o.nodeBits, 62) - 1; r.Hi > limit {
			return cli.Usagef("node range %s: node IDs above %d do not fit --node-bits %d; give the node bits of the command's ID layout", r, limit, o.nodeBits)
		}
		opts = append(opts, nodeid.WithNodeRange(r.Lo, r.Hi))
		which = fmt.Sprintf("a node ID of %s", r)
	}
	var m *holder.Metrics
	if o.MetricsAddr != "" {
		if m, err = holder.StartMetrics(o.MetricsAddr); err != nil {
			return err
		}
		defer m.Close()
		fmt.Fprintf(env.Err, "nodeid: metrics on http://%s/metrics, health on /healthz\n", m.Addr)
		opts = append(opts, nodeid.WithMeterProvider(m.Provider))
	}

	ictx, stop := env.Interrupted(ctx)
	defer stop()
	ctx = ictx
	if o.waitFlag == "--timeout" {
		fmt.Fprintf(env.Err, "nodeid: --timeout with --wait is named --wait-timeout now; --timeout bounds the wait for this release only\n")
	}
	if o.WaitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ictx, o.WaitTimeout, fmt.Errorf("gave up after %s %s", o.waitFlag, o.WaitTimeout))
		defer cancel()
	}
	// From before the claim: a step at any time of the lease counts.
	steps, err := warden.NewStepWatch(clock)
	if err != nil {
		return err
	}
	defer steps.Close()
	lease, closeReg, err := holder.Acquire(ctx, db, opts, holder.Waiting{
		Wait: o.Wait, Timeout: o.WaitTimeout, Every: waitReportEvery, Which: which, Table: table, Log: env.Err,
	})
	defer closeReg()
	switch {
	case err == nil:
	case ictx.Err() != nil:
		return &cli.ExitError{Code: 130, Msg: "interrupted while waiting for a node ID"}
	case errors.Is(err, nodeid.ErrNoNodeIDAvailable) && !o.Wait:
		return fmt.Errorf("%w; --wait waits for one, a wider --range offers more", err)
	default:
		return cli.Needs(holder.Privileges(table), o.CreateHint(c, err))
	}
	if m != nil {
		m.SetHealth(holder.LeaseHealth(lease, o.Grace))
	}

	if err := holder.WaitPastHorizon(ctx, env.Err, lease, clock, o.TTL, o.Wait); err != nil {
		holder.ReleaseUnused(lease)
		switch {
		case ictx.Err() != nil:
			return &cli.ExitError{Code: 130, Msg: "interrupted while waiting for the clock to pass the node ID's horizon"}
		case ctx.Err() != nil: // --wait-timeout
			return &cli.ExitError{Code: cli.ExitNoNodeID, Msg: err.Error()}
		}
		return err
	}
	// From here on, these signals are for the supervisor to pass on.
	sigs, stopSigs := signalsForCommand()
	defer stopSigs()
	stop()
	return supervise(c, o, lease, clock, steps, sigs)
}
