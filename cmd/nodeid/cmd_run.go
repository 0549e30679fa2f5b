package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
)

// The environment of a command started by "nodeid run".
const (
	EnvNode      = "NODEID_NODE"           // the leased node ID
	EnvEpoch     = "NODEID_EPOCH"          // the claim's fencing epoch
	EnvGrace     = "NODEID_DEADLINE_GRACE" // whole milliseconds between SIGTERM and the deadline
	EnvHorizonMs = "NODEID_HORIZON_MS"     // unix ms: stamp only IDs after it
)

// runOptions are the flags of run.
type runOptions struct {
	ttl, grace time.Duration
	owner      string
	wait       bool
	rf         rangeFlags
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
  NODEID_NODE            the node ID to put in the IDs it mints
  NODEID_EPOCH           the claim's fencing epoch (for epoch bits or fencing tokens)
  NODEID_HORIZON_MS      unix milliseconds: stamp only IDs strictly after it
                         (nodeid run starts the command only once the clock has
                         passed it, waiting up to --ttl/5)
  NODEID_DEADLINE_GRACE  whole milliseconds (--grace): the time the command is
                         given between SIGTERM and the lease's local deadline

The contract: on SIGTERM the command must stop minting IDs at once; it may
spend up to NODEID_DEADLINE_GRACE milliseconds on a shutdown that mints
nothing. nodeid run sends SIGTERM when the lease is lost (taken over,
evicted, expired) or when the local deadline is less than the grace away and
no renewal has moved it; it sends SIGKILL once the grace has passed, and at
the deadline at the latest. The deadline precedes the lease's expiry in the
database, so no other process can hold the node ID while the command may
still mint. The grace must be at most half the TTL (renewals run every
TTL/3); the default is TTL/6.

The command runs in a process group of its own: SIGINT, SIGTERM and SIGHUP
sent to nodeid run are forwarded to the group, lease-loss signals go to the
whole group, and when the command exits whatever is left of its group is
killed before the lease is released, recording the exit time as the exact
horizon (so the node ID is free for the next holder at once). If nodeid run
itself is killed, the command gets SIGKILL (Linux parent-death signal).
Being in a background process group, the command cannot read from the
terminal: run services, not interactive programs.`,
		Example: `  nodeid run -- python3 service.py
  nodeid run --ttl 30s --grace 5s --owner billing-7 -- java -jar billing.jar
  nodeid run --wait --range 0-63 -- ./worker --flag`,
		Args: minArgs(1, "a command to run, after --"),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			return a.runUnderLease(cmd, o, args)
		}),
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // flags after COMMAND are the command's
	fl.Var(newDurationValue(&o.ttl, nodeid.DefaultTTL), "ttl",
		fmt.Sprintf("lease TTL, %s to %s; a crashed holder's node ID frees up after it", nodeid.MinTTL, nodeid.MaxTTL))
	fl.Var(newDurationValue(&o.grace, 0), "grace", "time between SIGTERM and the deadline; at most TTL/2 (default TTL/6)")
	fl.StringVar(&o.owner, "owner", "", "holder name recorded in the table (default host-pid-random)")
	fl.BoolVar(&o.wait, "wait", false, "wait for a node ID to free up instead of exiting with code 3")
	o.rf.register(cmd)
	return cmd
}

func (a *app) runUnderLease(cmd *cobra.Command, o runOptions, args []string) error {
	grace := o.grace
	if !cmd.Flags().Changed("grace") {
		grace = o.ttl / 6
	}
	if grace <= 0 || grace > o.ttl/2 {
		return usagef("--grace %s: it must be positive and at most half the TTL (%s)", grace, o.ttl/2)
	}
	r, err := o.rf.resolve()
	if err != nil {
		return err
	}
	db, err := a.openDB()
	if err != nil {
		return err
	}
	opts := []nodeid.Option{
		nodeid.WithTTL(o.ttl), nodeid.WithTable(a.table), nodeid.WithNodeRange(r.lo, r.hi), nodeid.WithWait(o.wait), nodeid.WithCreateTable(true),
		nodeid.WithLogger(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if o.owner != "" {
		opts = append(opts, nodeid.WithOwner(o.owner))
	}
	reg, err := nodeid.New(db, opts...)
	if err != nil {
		return err
	}
	defer reg.Close()
	a.privileges = "SELECT, INSERT and UPDATE on " + a.table + " and " + a.table + "_history"
	actx, stop := a.interrupted(cmd.Context())
	lease, err := reg.Acquire(actx)
	stop()
	if errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
		return fmt.Errorf("%w; --wait waits for one, a wider --range offers more", err)
	}
	if err != nil {
		return err
	}
	if err := waitPastHorizon(lease, o.ttl/5); err != nil {
		_ = lease.Release(context.Background())
		return err
	}
	return a.supervise(lease, grace, args)
}

// waitPastHorizon waits until the wall clock is past the previous holder's
// horizon, up to max.
func waitPastHorizon(lease *nodeid.Lease, max time.Duration) error {
	wait := time.Until(time.UnixMilli(lease.PreviousHorizon() + 1))
	if wait <= 0 {
		return nil
	}
	if wait > max {
		return fmt.Errorf("%w: node ID %d may be stamped only after %s, %s from now by this host's clock; check the clocks of this host and of the node ID's previous holder",
			nodeid.ErrClockBehind, lease.NodeID(), exactMs(lease.PreviousHorizon()), wait.Round(time.Millisecond))
	}
	time.Sleep(wait)
	return nil
}

// supervise runs the command under the lease, as the run command's help
// says, and returns its exit code as an exitCodeError (nil for 0).
func (a *app) supervise(lease *nodeid.Lease, grace time.Duration, args []string) error {
	c := exec.Command(args[0], args[1:]...)
	c.Env = append(os.Environ(),
		EnvNode+"="+strconv.FormatInt(lease.NodeID(), 10),
		EnvEpoch+"="+strconv.FormatInt(lease.Epoch(), 10),
		EnvGrace+"="+strconv.FormatInt(grace.Milliseconds(), 10),
		EnvHorizonMs+"="+strconv.FormatInt(lease.PreviousHorizon(), 10),
	)
	c.Stdin, c.Stdout, c.Stderr = a.stdin, a.stdout, a.rawStderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.WaitDelay = time.Second // output still held open by leftovers of the group

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	if err := c.Start(); err != nil {
		_ = lease.Release(context.Background())
		return fmt.Errorf("cannot start %s: %w", printable(args[0]), err)
	}
	pgid := c.Process.Pid
	var exitMs int64
	exited := make(chan struct{})
	go func() {
		_ = c.Wait()
		// Leftovers of the group must not mint after the horizon recorded.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		exitMs = time.Now().UnixMilli()
		close(exited)
	}()

	name := printable(args[0])
	termTimer := time.NewTimer(time.Until(lease.Deadline()) - grace)
	defer termTimer.Stop()
	var (
		killC       <-chan time.Time
		terminating bool
		lost        = lease.Lost()
	)
	terminate := func(reason string) {
		if terminating {
			return
		}
		terminating = true
		killAt := min(time.Until(lease.Deadline()), grace)
		fmt.Fprintf(a.stderr, "nodeid: %s: sending SIGTERM to %s, SIGKILL in %s\n", reason, name, max(killAt, 0).Round(time.Millisecond))
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		killC = time.After(killAt)
	}
supervise:
	for {
		select {
		case <-exited:
			break supervise
		case s := <-sigs:
			_ = syscall.Kill(-pgid, s.(syscall.Signal))
		case <-lost:
			lost = nil
			terminate(oneLine(strings.TrimPrefix(lease.Err().Error(), "nodeid: ")))
		case <-termTimer.C:
			if left := time.Until(lease.Deadline()); left > grace {
				termTimer.Reset(left - grace)
				continue
			}
			terminate(fmt.Sprintf("the lease of node ID %d was not renewed and its deadline is %s away", lease.NodeID(),
				max(time.Until(lease.Deadline()), 0).Round(time.Millisecond)))
		case <-killC:
			killC = nil
			fmt.Fprintf(a.stderr, "nodeid: sending SIGKILL to %s: the lease's grace is over\n", name)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}

	// The command and its group are gone: nothing minted after exitMs.
	_ = lease.Bind(func() int64 { return exitMs })
	if err := lease.Release(context.Background()); err != nil {
		if errors.Is(err, nodeid.ErrLeaseLost) {
			if !terminating { // not reported yet
				fmt.Fprintf(a.stderr, "nodeid: %s before the command exited\n", oneLine(strings.TrimPrefix(err.Error(), "nodeid: ")))
			}
		} else {
			fmt.Fprintf(a.stderr, "%s; the node ID frees up when its lease expires\n", a.describe(err))
		}
	}
	if code := processExitCode(c.ProcessState); code != 0 {
		return &exitCodeError{code: code}
	}
	return nil
}

// processExitCode is the shell's convention: the exit status, or 128+N for
// a process killed by signal N.
func processExitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailure
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
