package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
	"github.com/nodeid/nodeid/postgres"
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
var dbSecretEnv = []string{EnvDatabaseURL, "PGPASSWORD", "PGSSLPASSWORD"}

// waitReportEvery is how often run --wait says it is still waiting.
var waitReportEvery = 30 * time.Second

// runOptions are the flags of run.
type runOptions struct {
	ttl, grace, timeout time.Duration
	graceSet            bool
	owner               string
	wait                bool
	create              bool
	keepDBEnv           bool
	metricsAddr         string
	nodeBits            int
	rf                  rangeFlags
	exports             exportFlags
}

func (a *app) runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARGS...]",
		Short: "Run a program in any language under a node-ID lease",
		Long: `Acquire a node ID, start COMMAND with the lease in its environment, renew the
lease while it runs, stop it if the lease is lost, release the node ID when
it exits, and exit with its exit code (128+N if signal N killed it).

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
  - Unless nodeid run runs as root, the warden cannot kill a descendant that
    runs as another user (a setuid program).
  - Stamps must come from this host's wall clock.

Passwords: a password in --dsn is visible to every user of this host (ps,
/proc); give it in PGPASSWORD, in a password file (~/.pgpass, or the file
PGPASSFILE names) or in DATABASE_URL, which only the same user and root can
read.

Metrics: with --metrics-addr HOST:PORT, nodeid run serves the lease's
metrics (the library's nodeid_* instruments) and its own process's (go_*,
process_*) in Prometheus's text format on /metrics, and /healthz: 200 "ok"
while the lease is held and its deadline is more than the grace away, 503
with the reason before the claim, once the lease is lost or ended, and
when a renewal is overdue (for a liveness or readiness probe).

Exit codes: the command's; 1 if it could not start or the database failed;
2 bad usage; 3 no node ID available (or --timeout passed); 130 if
interrupted while waiting for a node ID.

nodeid run needs Linux (a child subreaper, CLOCK_BOOTTIME timers, /proc):
elsewhere it refuses at once, and runs nothing unbounded.`,
		Example: `  nodeid run -- python3 service.py
  nodeid run --ttl 30s --grace 5s --owner billing-7 -- java -jar billing.jar
  nodeid run --wait --timeout 5m --range 0-63 -- ./worker --flag`,
		Args: minArgs(1, "a command to run, after --"),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			o.graceSet = cmd.Flags().Changed("grace")
			return a.runUnderLease(cmd, o, args)
		}),
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // flags after COMMAND are the command's
	fl.Var(newDurationValue(&o.ttl, nodeid.DefaultTTL), "ttl",
		fmt.Sprintf("lease TTL, %s to %s; a crashed holder's node ID frees up after it", nodeid.MinTTL, nodeid.MaxTTL))
	fl.Var(&defaultedDuration{durationValue: newDurationValue(&o.grace, 0), def: "TTL/6"}, "grace",
		"time between SIGTERM and the deadline; at most TTL/2")
	fl.StringVar(&o.owner, "owner", "", "holder name recorded in the table (default host-pid-random)")
	fl.BoolVar(&o.wait, "wait", false, "wait for a node ID to free up instead of exiting with code 3")
	fl.Var(&defaultedDuration{durationValue: newDurationValue(&o.timeout, 0)}, "timeout",
		"with --wait: give up after this long, with exit code 3 (default: wait as long as it takes)")
	fl.BoolVar(&o.create, "create", false, "create the lease table if it is missing (else a missing table is an error)")
	fl.BoolVar(&o.keepDBEnv, "keep-db-env", false, "pass DATABASE_URL, PGPASSWORD and PGSSLPASSWORD on to the command")
	fl.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on /metrics and the lease's health on /healthz at HOST:PORT (\":9464\")")
	fl.IntVar(&o.nodeBits, "node-bits", nodeid.DefaultNodeBits,
		"width of the node field of the IDs the command mints: a node range beyond it is refused")
	o.rf.registerDefault(cmd, "the table's", "the table's")
	o.exports.register(cmd)
	return cmd
}

// defaultedDuration is a duration flag whose default is described in words
// ("TTL/6"), or not shown if def is empty.
type defaultedDuration struct {
	*durationValue
	def string
}

func (d *defaultedDuration) String() string {
	if d.durationValue == nil || d.text == "" {
		return d.def
	}
	return d.durationValue.String()
}

func (a *app) runUnderLease(cmd *cobra.Command, o runOptions, args []string) error {
	// Never an unbounded command: without the warden, nothing runs.
	if err := warden.Supported(); err != nil {
		return err
	}
	grace := o.grace
	if !o.graceSet {
		grace = o.ttl / 6
	}
	if grace <= 0 || grace > o.ttl/2 {
		return usagef("--grace %s: it must be positive and at most half the TTL (%s)", grace, o.ttl/2)
	}
	if o.timeout > 0 && !o.wait {
		return usagef("--timeout %s: it bounds --wait, which is not given", o.timeout)
	}
	r, err := o.rf.resolve()
	if err != nil {
		return err
	}
	clock, err := a.wallClock()
	if err != nil {
		return err
	}
	db, err := a.openDB()
	if err != nil {
		return err
	}
	if err := a.checkExports(cmd.Context(), &o.exports, o.rf.given(), r); err != nil {
		return err
	}
	opts := []nodeid.Option{
		nodeid.WithTTL(o.ttl), nodeid.WithTable(a.table), nodeid.WithCreateTable(o.create), nodeid.WithNodeBits(o.nodeBits),
		nodeid.WithLogger(slog.New(newLineHandler(a.stderr, slog.LevelWarn))),
	}
	// Without --range or --nodes, the table's recorded range (a new table,
	// with --create, gets the default one).
	which := "a node ID"
	if o.rf.given() {
		if limit := int64(1)<<min(o.nodeBits, 62) - 1; r.hi > limit {
			return usagef("node range %s: node IDs above %d do not fit --node-bits %d; give the node bits of the command's ID layout", r, limit, o.nodeBits)
		}
		opts = append(opts, nodeid.WithNodeRange(r.lo, r.hi))
		which = fmt.Sprintf("a node ID of %s", r)
	}
	if o.owner != "" {
		opts = append(opts, nodeid.WithOwner(o.owner))
	}
	var m *runMetrics
	if o.metricsAddr != "" {
		if m, err = startRunMetrics(o.metricsAddr); err != nil {
			return err
		}
		defer m.close()
		fmt.Fprintf(a.stderr, "nodeid: metrics on http://%s/metrics, health on /healthz\n", m.addr)
		opts = append(opts, nodeid.WithMeterProvider(m.provider))
	}
	a.privileges = "SELECT, INSERT and UPDATE on " + a.table + " and " + a.table + "_history"

	ictx, stop := a.interrupted(cmd.Context())
	defer stop()
	ctx := ictx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ictx, o.timeout, fmt.Errorf("gave up after --timeout %s", o.timeout))
		defer cancel()
	}
	// From before the claim: a step at any time of the lease counts.
	steps, err := warden.NewStepWatch(clock)
	if err != nil {
		return err
	}
	defer steps.Close()
	lease, closeReg, err := a.acquire(ctx, db, opts, o, which)
	defer closeReg()
	switch {
	case err == nil:
	case ictx.Err() != nil:
		return &exitCodeError{code: 130, msg: "interrupted while waiting for a node ID"}
	case !o.create && postgres.SQLSTATE(err) == "42P01":
		return fmt.Errorf("%s; or add --create", a.explain(err))
	case errors.Is(err, nodeid.ErrNoNodeIDAvailable) && !o.wait:
		return fmt.Errorf("%w; --wait waits for one, a wider --range offers more", err)
	default:
		return err
	}
	if m != nil {
		m.setHealth(leaseHealth(lease, grace))
	}

	if err := a.waitPastHorizon(ctx, lease, clock, o); err != nil {
		releaseUnused(lease)
		switch {
		case ictx.Err() != nil:
			return &exitCodeError{code: 130, msg: "interrupted while waiting for the clock to pass the node ID's horizon"}
		case ctx.Err() != nil: // --timeout
			return &exitCodeError{code: exitNoNodeID, msg: err.Error()}
		}
		return err
	}
	// From here on, these signals are for the supervisor to pass on.
	sigs, stopSigs := signalsForCommand()
	defer stopSigs()
	stop()
	return a.supervise(lease, grace, o.ttl, args, o.keepDBEnv, clock, steps, sigs, &o.exports)
}

// acquire claims a node ID; with --wait, when none is free, it says so and
// waits for one, saying every waitReportEvery that it still waits. The
// returned function closes the registries.
func (a *app) acquire(ctx context.Context, db *sql.DB, opts []nodeid.Option, o runOptions, which string) (*nodeid.Lease, func(), error) {
	reg, err := nodeid.New(db, append(opts, nodeid.WithWait(false))...)
	if err != nil {
		return nil, func() {}, err
	}
	lease, err := reg.Acquire(ctx)
	if err == nil || !o.wait || !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
		return lease, func() { _ = reg.Close() }, err
	}
	waitReg, werr := nodeid.New(db, append(opts, nodeid.WithWait(true))...)
	closeBoth := func() { _ = reg.Close(); _ = waitReg.Close() }
	if werr != nil {
		return nil, func() { _ = reg.Close() }, werr
	}
	until := ""
	if o.timeout > 0 {
		until = ", for at most " + o.timeout.String()
	}
	fmt.Fprintf(a.stderr, "nodeid: %s; waiting for one to free up (--wait%s)\n", strings.TrimPrefix(err.Error(), "nodeid: "), until)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(waitReportEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(a.stderr, "nodeid: still waiting for %s in table %s (%s so far)\n",
					which, a.table, time.Since(start).Round(time.Second))
			}
		}
	}()
	first := err
	lease, err = waitReg.Acquire(ctx)
	close(done)
	wg.Wait()
	if err != nil && ctx.Err() != nil && !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
		// Interrupted, or --timeout passed, while a claim was under way.
		err = fmt.Errorf("%w: stopped waiting: %w", first, context.Cause(ctx))
	}
	return lease, closeBoth, err
}

// releaseUnused releases a lease under which nothing ran: the node ID
// keeps the previous holder's horizon.
func releaseUnused(lease *nodeid.Lease) {
	_ = nodeid.NewMinter(lease).Bind(func() int64 { return 0 })
	_ = lease.Release(context.Background())
}

// waitPastHorizon waits until the wall clock is past the previous holder's
// horizon: up to TTL/5, or with --wait as long as ctx allows.
func (a *app) waitPastHorizon(ctx context.Context, lease *nodeid.Lease, clock *warden.WallClock, o runOptions) error {
	prev := lease.PreviousHorizon()
	behind := func() time.Duration { return time.Duration(prev+1-clock.NowMs()) * time.Millisecond }
	wait := behind()
	if wait <= 0 {
		return nil
	}
	tooFar := fmt.Errorf("%w: node ID %d may be stamped only after %s, %s from now by this host's clock; check the clocks of this host and of the node ID's previous holder",
		nodeid.ErrClockBehind, lease.NodeID(), exactMs(prev), wait.Round(time.Millisecond))
	if !o.wait && wait > o.ttl/5 {
		return fmt.Errorf("%w (--wait waits for it)", tooFar)
	}
	if wait > time.Second {
		fmt.Fprintf(a.stderr, "nodeid: node ID %d may be stamped only after %s, %s from now by this host's clock: waiting\n",
			lease.NodeID(), exactMs(prev), wait.Round(time.Millisecond))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: stopped waiting: %w", tooFar, context.Cause(ctx))
		case <-t.C:
		}
		if wait = behind(); wait <= 0 {
			return nil
		}
		t.Reset(wait) // the clock was set back meanwhile
	}
}

// leaseCeiling returns the horizon the lease has recorded in the database,
// the latest unix millisecond its IDs may be stamped with; ok is false once
// the lease is lost. nodeid.Minter.Check admits a stamp, at the lease's base
// (before any deadline), exactly when the stamp is not after that horizon,
// so the largest stamp it admits is found by bisection: 64 atomic loads.
func leaseCeiling(l *nodeid.Lease) (ceiling int64, ok bool) {
	m := nodeid.NewMinter(l)
	admits := func(ms int64) bool { return m.Check(0, ms) == nil }
	lo, hi := int64(0), int64(math.MaxInt64) // every horizon is a unix ms after the claim
	if !admits(lo) {
		return 0, false
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if admits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true
}

// commandEnv returns the command's environment: this process's, without
// the database's secrets (unless keepDB) and with the lease's variables.
func commandEnv(keepDB bool, lease map[string]string) []string {
	drop := map[string]bool{}
	for k := range lease {
		drop[k] = true
	}
	if !keepDB {
		for _, k := range dbSecretEnv {
			drop[k] = true
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	for _, k := range []string{EnvNode, EnvEpoch, EnvOwner, EnvGrace, EnvHorizonMs, EnvCeilingMs, EnvDeadlineMs, EnvLeaseFile} {
		if v, ok := lease[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, exportedEnv(lease)...)
}
