package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/holder"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
)

// "nodeid run" is the supervisor of its command: it holds and renews the
// lease and passes each renewal, signal and stop on to the warden, a
// process of its own (this program, as "nodeid run-warden") that bounds
// the command by the lease's deadline. Package warden holds both sides;
// this file ties them to the lease.

// testClockOffset, set by the tests only, gives the wall clock of run, its
// warden and the tests' commands an offset that the tests step.
var testClockOffset func(getenv func(string) string) warden.Offset

// sharedProcess says that nodeid run runs in a process beside other work
// (see ShareProcess).
var sharedProcess bool

// ShareProcess tells nodeid run, before any run starts, that it runs in a
// process that runs other work beside it, as the tests that run it
// in-process, several at once, do: the warden's supervisor then kills only
// what is its command's (warden.Config.Shared).
func ShareProcess() { sharedProcess = true }

// wallClock returns the wall clock of run and its warden.
func wallClock(getenv func(string) string) (*warden.WallClock, error) {
	var off warden.Offset
	if testClockOffset != nil {
		off = testClockOffset(getenv)
	}
	return warden.NewWallClock(off)
}

// NewCmdWarden returns the hidden warden process of "nodeid run".
func NewCmdWarden(env *cli.Env) *cobra.Command {
	return &cobra.Command{
		Use:    "run-warden",
		Short:  `The warden of "nodeid run": bounds its command by the lease; started by "nodeid run" only`,
		Hidden: true,
		Example: `  nodeid run-warden 3<control 4>status   # as "nodeid run" starts it: the command
                                          # and the lease come over descriptor 3`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(*cobra.Command, []string, *cli.Conn) error {
			clock, err := wallClock(env.Getenv)
			if err != nil {
				return err
			}
			return warden.Serve(env.Err, clock)
		}),
	}
}

// supervise runs the command of "nodeid run" under the lease and returns
// its exit code as a cli.ExitError (nil for 0), or why it could not run.
func supervise(c *cli.Conn, o *Options, lease *nodeid.Lease, clock *warden.WallClock, steps *warden.StepWatch, sigs <-chan os.Signal) error {
	env, grace, ttl, argv := o.Env, o.Grace, o.TTL, o.Argv
	name := cli.Printable(argv[0])
	// Waiting past the horizon took time: the lease must still be held.
	if err := lease.Err(); err != nil {
		holder.ReleaseUnused(lease)
		return fmt.Errorf("%s before %s could start", strings.TrimPrefix(err.Error(), "nodeid: "), name)
	}
	ceiling, ok := leaseCeiling(lease)
	deadline := lease.Deadline()
	if !ok || time.Until(deadline) <= 0 {
		holder.ReleaseUnused(lease)
		return fmt.Errorf("the lease of node ID %d expired before %s could start", lease.NodeID(), name)
	}
	dir, err := os.MkdirTemp("", "nodeid-run-")
	if err != nil {
		holder.ReleaseUnused(lease)
		return err
	}
	defer os.RemoveAll(dir)
	lf := leaseFileWriter{dir: dir, lease: lease, clock: clock}
	// One reading for the file and the environment: two readings of the
	// wall and monotonic clocks can round a millisecond apart.
	deadlineMs, err := lf.write(true, deadline, ceiling)
	if err != nil {
		holder.ReleaseUnused(lease)
		return err
	}
	vars := map[string]string{
		EnvNode:       strconv.FormatInt(lease.NodeID(), 10),
		EnvEpoch:      strconv.FormatInt(lease.Epoch(), 10),
		EnvOwner:      lease.Owner(),
		EnvGrace:      strconv.FormatInt(grace.Milliseconds(), 10),
		EnvHorizonMs:  strconv.FormatInt(lease.PreviousHorizon(), 10),
		EnvCeilingMs:  strconv.FormatInt(ceiling, 10),
		EnvDeadlineMs: strconv.FormatInt(deadlineMs, 10),
		EnvLeaseFile:  filepath.Join(dir, leaseFileName),
	}
	o.Exports.addTo(vars, lease.NodeID(), lease.Epoch())
	sup, err := warden.Start(warden.Config{
		Argv: argv, Env: commandEnv(o.KeepDBEnv, vars), Name: name,
		NodeID: lease.NodeID(), Deadline: deadline, Ceiling: ceiling, Grace: grace, TTL: ttl, LeaseDir: dir,
		Warden: func() (*exec.Cmd, error) {
			w, err := env.Self(context.Background(), "run-warden")
			if err != nil {
				return nil, err
			}
			if w.Env == nil {
				w.Env = os.Environ()
			}
			w.Env = withoutKeys(w.Env, dbSecretEnv)
			return w, nil
		},
		Stdin: env.In, Stdout: env.Out, Stderr: env.RawErr, Log: env.Err,
		Clock: clock, Steps: steps, Shared: sharedProcess,
	})
	if err != nil {
		holder.ReleaseUnused(lease)
		return fmt.Errorf("cannot start %s: %w", name, err)
	}

	poll := time.NewTicker(warden.PollInterval(ttl))
	defer poll.Stop()
	lost := lease.Done()
loop:
	for {
		select {
		case <-sup.Done():
			break loop
		case sig := <-sigs:
			sup.Signal(sig.(syscall.Signal))
		case <-lost:
			lost = nil
			sup.Terminate(cli.OneLine(strings.TrimPrefix(lease.Err().Error(), "nodeid: ")))
			_, _ = lf.write(false, deadline, ceiling)
		case <-poll.C:
			// A renewal: its deadline and horizon ceiling go to the warden
			// and the lease file.
			d := lease.Deadline()
			c, ok := leaseCeiling(lease)
			if !ok || (d.Equal(deadline) && c == ceiling) {
				continue
			}
			deadline, ceiling = d, c
			sup.Extend(d, c)
			if _, err := lf.write(true, d, c); err != nil {
				fmt.Fprintf(env.Err, "nodeid: cannot rewrite the lease file: %v\n", err)
			}
		}
	}
	exit := sup.Wait()

	// Every process of the command is gone: release with the horizon its
	// stamps need.
	if exit.NothingRan() {
		holder.ReleaseUnused(lease)
		return fmt.Errorf("cannot start %s: %s", name, exit.StartErr)
	}
	if err := lease.ReleaseStamped(context.Background(), exit.Horizon); err != nil {
		if errors.Is(err, nodeid.ErrLeaseLost) {
			switch {
			case exit.Terminated: // reported with the SIGTERM
			case lost == nil && exit.Exited:
				// run learnt that the lease ended, but the command had
				// exited by then: it was not stopped, and its code stands.
				fmt.Fprintf(env.Err, "nodeid: %s had exited by itself (code %d) before the lease's end reached it: it was not signalled\n", name, exit.Code)
			default:
				fmt.Fprintf(env.Err, "nodeid: %s before the command exited\n", cli.OneLine(strings.TrimPrefix(err.Error(), "nodeid: ")))
			}
		} else {
			fmt.Fprintf(env.Err, "%s; the node ID frees up when its lease expires\n", c.Describe(err))
		}
	}
	code, reported := exit.Code, exit.Exited
	if !reported && exit.SecondLine && exit.KilledBy != "" {
		code, reported = 128+int(syscall.SIGKILL), true
	}
	switch {
	case exit.Terminated || exit.KilledBy != "":
		// Stopped for the lease before it exited (a command that had
		// exited by itself is not): the command's own code may well be 0.
		how := "its warden exited without reporting its exit status"
		if reported {
			how = "it exited with code " + strconv.Itoa(code)
		}
		return &cli.ExitError{Code: cli.ExitLeaseLost, Msg: fmt.Sprintf("%s was stopped because the lease of node ID %d ended (%s)", name, lease.NodeID(), how)}
	case reported && code == 0:
		return nil
	case reported:
		return &cli.ExitError{Code: code}
	}
	return &cli.ExitError{Code: cli.ExitFailure, Msg: fmt.Sprintf("the warden of %s exited without reporting its exit status; its processes were killed", name)}
}

// withoutKeys returns env without the variables named in keys.
func withoutKeys(env, keys []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range keys {
			drop = drop || k == d
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// The lease file of a command: EnvLeaseFile names it, and "nodeid run"
// rewrites it (write, then rename) at every renewal and when the lease
// ends. One key=value a line:
//
//	node=NODE
//	epoch=EPOCH
//	held=true|false
//	deadline_ms=UNIX_MS
//	deadline_boottime_ns=NS
//	horizon_ceiling_ms=UNIX_MS
const leaseFileName = "lease"

// leaseFileWriter writes the lease file of a command.
type leaseFileWriter struct {
	dir   string
	lease *nodeid.Lease
	clock *warden.WallClock
}

// wallDeadline returns deadline as unix milliseconds by the wall clock
// (rounded down) and on CLOCK_BOOTTIME.
func (f leaseFileWriter) wallDeadline(deadline time.Time) (ms, bootNs int64) {
	bootNs = warden.BootTime(deadline)
	left := time.Until(deadline)
	return f.clock.NowMs() + left.Milliseconds(), bootNs
}

// write replaces dir/lease atomically and returns the deadline it wrote in
// unix milliseconds, so that the environment carries the same value.
func (f leaseFileWriter) write(held bool, deadline time.Time, ceiling int64) (deadlineMs int64, err error) {
	ms, boot := f.wallDeadline(deadline)
	s := fmt.Sprintf("node=%d\nepoch=%d\nheld=%t\ndeadline_ms=%d\ndeadline_boottime_ns=%d\nhorizon_ceiling_ms=%d\n",
		f.lease.NodeID(), f.lease.Epoch(), held, ms, boot, ceiling)
	tmp := filepath.Join(f.dir, leaseFileName+".tmp")
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return 0, err
	}
	return ms, os.Rename(tmp, filepath.Join(f.dir, leaseFileName))
}

// leaseCeiling returns the horizon the lease has recorded in the database,
// the latest unix millisecond its IDs may be stamped with; ok is false once
// the lease has ended.
func leaseCeiling(l *nodeid.Lease) (ceiling int64, ok bool) {
	return l.Horizon(), l.Err() == nil
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
