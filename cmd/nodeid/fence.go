package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// The fence of "nodeid run" is a process of its own between the supervisor
// (the "nodeid run" process, which holds and renews the lease) and the
// command. It leads the command's process group and is a child subreaper,
// so that every process the command starts stays in its tree, however it
// forks or changes its session. It holds the lease's deadline on
// CLOCK_BOOTTIME and the horizon ceiling on the wall clock, and it does
// not depend on the supervisor running: it sends SIGTERM to the command's
// group a grace before the deadline and SIGKILL to every descendant at the
// deadline, when the wall clock reaches the ceiling less TTL/20, and at
// once when the supervisor dies (its control pipe reads EOF). Only a
// renewal, sent by a running supervisor, moves the deadline. It ignores
// every signal it can (SIGTERM, SIGINT, SIGHUP, SIGTSTP, ...): what is for
// the command comes from the supervisor over the pipe. It exits once the
// command and all its descendants are gone.

// runFenceCommand is the hidden fence process of "nodeid run".
func (a *app) runFenceCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "run-fence",
		Short:  `The fence of "nodeid run": bounds its command by the lease; started by "nodeid run" only`,
		Hidden: true,
		Example: `  nodeid run-fence 3<control 4>status   # as "nodeid run" starts it: the command
                                         # and the lease come over descriptor 3`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(*cobra.Command, []string) error { return a.runFence() }),
	}
}

// fence is the state of the fence process.
type fence struct {
	a      *app
	events *jsonLines
	clock  *wallClock
	argv0  string

	grace, ttl time.Duration
	ceiling    int64 // unix ms: the command must not stamp after it
	deadline   int64 // CLOCK_BOOTTIME ns: nothing of the command may run after it
	killAt     int64 // CLOCK_BOOTTIME ns: SIGKILL to every descendant
	terminated bool  // SIGTERM sent; killAt no longer moves
	leaseDir   string

	pid    int // the command
	exited bool
	// reaped receives every child the fence reaps; it is closed when the
	// fence has no child left, hence no descendant (orphans are
	// reparented to it).
	reaped chan reapedChild
}

// reapedChild is a child process that exited, and how.
type reapedChild struct {
	pid int
	ws  syscall.WaitStatus
}

func (a *app) runFence() error {
	ctl, status := os.NewFile(fenceCtlFD, "control"), os.NewFile(fenceStatusFD, "status")
	for _, f := range []*os.File{ctl, status} {
		if _, err := f.Stat(); err != nil {
			return fmt.Errorf(`run-fence is started by "nodeid run" only, with its control pipe as descriptor %d and its status pipe as %d: %w`,
				fenceCtlFD, fenceStatusFD, err)
		}
		syscall.CloseOnExec(int(f.Fd())) // not for the command
	}
	// Handled (and dropped), not ignored: ignored signals would stay
	// ignored in the command, and this process must outlive whatever is
	// sent to its group.
	signal.Notify(make(chan os.Signal, 1))

	dec := json.NewDecoder(ctl)
	var start fenceMsg
	if err := dec.Decode(&start); err != nil || start.Op != opStart || len(start.Argv) == 0 || start.Ceiling <= 0 || start.Deadline <= 0 {
		err = fmt.Errorf("run-fence: no valid start message on descriptor %d (%v)", fenceCtlFD, err)
		_ = (&jsonLines{w: status}).send(fenceEvent{Ev: evFailed, Err: err.Error()})
		return err
	}
	clock, err := newWallClock(a.getenv)
	if err != nil {
		_ = (&jsonLines{w: status}).send(fenceEvent{Ev: evFailed, Err: err.Error()})
		return err
	}
	f := &fence{
		a: a, events: &jsonLines{w: status}, clock: clock, argv0: printable(start.Argv[0]),
		grace: start.Grace, ttl: start.TTL, ceiling: start.Ceiling, deadline: start.Deadline, killAt: start.Deadline,
		leaseDir: start.LeaseDir, reaped: make(chan reapedChild),
	}
	msgs := make(chan fenceMsg)
	go func() {
		defer close(msgs)
		for {
			var m fenceMsg
			if dec.Decode(&m) != nil {
				return // EOF: the supervisor is gone
			}
			msgs <- m
		}
	}()
	if err := becomeSubreaper(); err != nil {
		f.send(fenceEvent{Ev: evFailed, Err: err.Error()})
		return err
	}
	if err := f.start(start); err != nil {
		f.send(fenceEvent{Ev: evFailed, Err: err.Error()})
		return nil
	}
	return f.guard(msgs)
}

func (f *fence) send(ev fenceEvent) {
	_ = f.events.send(ev) // the supervisor may be gone: the fence goes on
}

// start checks the lease once more and starts the command in the fence's
// process group.
func (f *fence) start(m fenceMsg) error {
	if left := time.Duration(m.Deadline - bootNow()); left <= 0 {
		return fmt.Errorf("the lease's deadline passed %s ago, before the command could start", (-left).Round(time.Millisecond))
	}
	if now := f.clock.nowMs(); now >= f.ceilingKillMs() {
		return fmt.Errorf("the wall clock (%s) is past the lease's horizon ceiling %s less TTL/20", exactMs(now), exactMs(m.Ceiling))
	}
	path, err := exec.LookPath(m.Argv[0])
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	if err != nil {
		return err
	}
	pid, err := syscall.ForkExec(path, m.Argv, &syscall.ProcAttr{
		Env:   m.Env,
		Files: []uintptr{0, 1, 2},
		// Should the fence itself be killed, its direct child dies with it;
		// the others are reparented to the supervisor, also a subreaper.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return err
	}
	f.pid = pid
	f.send(fenceEvent{Ev: evStarted, Pid: pid})
	go f.reap()
	return nil
}

// reap collects every child of the fence, the command and the orphans
// reparented to it, until it has none.
func (f *fence) reap() {
	defer close(f.reaped)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return // ECHILD: no child left
		default:
			f.reaped <- reapedChild{pid, ws}
		}
	}
}

// reaped notes the command's exit status and reports it.
func (f *fence) noteReaped(c reapedChild) {
	if c.pid != f.pid || f.exited {
		return
	}
	f.exited = true
	code := c.ws.ExitStatus()
	if c.ws.Signaled() {
		code = 128 + int(c.ws.Signal())
	}
	f.send(fenceEvent{Ev: evExit, Code: code})
}

// ceilingKillMs is the wall-clock time at which the fence kills the
// command: the horizon ceiling less TTL/20, time to kill it before it can
// stamp past the ceiling.
func (f *fence) ceilingKillMs() int64 { return f.ceiling - f.ttl.Milliseconds()/20 }

// guard bounds the running command until it and all its descendants are
// gone.
func (f *fence) guard(msgs <-chan fenceMsg) error {
	termA, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		return f.killAll(whyDeadline, err)
	}
	defer termA.stop()
	killA, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		return f.killAll(whyDeadline, err)
	}
	defer killA.stop()
	ceilA, err := newClockAlarm(unix.CLOCK_REALTIME)
	if err != nil {
		return f.killAll(whyCeiling, err)
	}
	defer ceilA.stop()
	var hookTick <-chan time.Time
	if f.clock.hook != "" {
		t := time.NewTicker(hookPoll)
		defer t.Stop()
		hookTick = t.C
	}
	offset := f.clock.offset()
	arm := func() error {
		return errors.Join(
			termA.at(f.deadline-int64(f.grace)),
			killA.at(f.killAt),
			// The wall clock plus the test offset reaches the ceiling when
			// the system's wall clock reaches it less the offset.
			ceilA.at((f.ceilingKillMs()-offset)*int64(time.Millisecond)),
		)
	}
	if err := arm(); err != nil {
		return f.killAll(whyDeadline, err)
	}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				fmt.Fprintf(f.a.stderr, "nodeid: the supervisor (nodeid run) is gone: killing %s and every process it started\n", f.argv0)
				err := f.killAll("", nil)
				if f.leaseDir != "" {
					_ = os.RemoveAll(f.leaseDir)
				}
				return err
			}
			f.handle(m)
			if err := arm(); err != nil {
				return f.killAll(whyDeadline, err)
			}
		case <-termA.C:
			if !f.terminated && bootNow() >= f.deadline-int64(f.grace) {
				f.terminate(f.deadline)
				f.send(fenceEvent{Ev: evTerm, Why: whyDeadline, In: max(time.Duration(f.killAt-bootNow()), 0)})
			}
		case <-killA.C:
			if why := f.due(); why != "" {
				return f.killAll(why, nil)
			}
		case <-ceilA.C:
			if why := f.due(); why != "" {
				return f.killAll(why, nil)
			}
		case <-hookTick:
			if o := f.clock.offset(); o != offset {
				offset = o
				if err := arm(); err != nil {
					return f.killAll(whyCeiling, err)
				}
			}
		case c, ok := <-f.reaped:
			if !ok {
				return f.killAll(whyExited, nil) // nothing left: reports done
			}
			f.noteReaped(c)
			if f.exited {
				return f.killAll(whyExited, nil)
			}
		}
	}
}

// due returns why every process of the command must be killed now, if it
// must: the deadline (or the grace after SIGTERM), else the ceiling. Both
// alarms may be found expired at once on a loaded host; the deadline is
// the reason to report then.
func (f *fence) due() string {
	switch {
	case bootNow() >= f.killAt && f.killAt < f.deadline:
		return whyGrace
	case bootNow() >= f.killAt:
		return whyDeadline
	case f.clock.nowMs() >= f.ceilingKillMs():
		return whyCeiling
	}
	return ""
}

// handle applies a message of the supervisor.
func (f *fence) handle(m fenceMsg) {
	switch m.Op {
	case opLease:
		f.ceiling = m.Ceiling
		f.deadline = m.Deadline
		if !f.terminated {
			f.killAt = m.Deadline
		}
	case opSignal:
		_ = syscall.Kill(-os.Getpid(), syscall.Signal(m.Signal))
	case opTerminate:
		f.terminate(m.KillAt)
	}
}

// terminate sends SIGTERM to the command's process group, and SIGCONT so
// that a stopped command can act on it, and brings SIGKILL forward to
// killAt if it is sooner.
func (f *fence) terminate(killAt int64) {
	f.killAt = min(f.killAt, killAt)
	if f.terminated {
		return
	}
	f.terminated = true
	_ = syscall.Kill(-os.Getpid(), syscall.SIGTERM)
	_ = syscall.Kill(-os.Getpid(), syscall.SIGCONT)
}

// killAll kills every descendant of the fence, round after round, until
// it has no child left (hence no descendant), reports it to the supervisor
// and returns. why, if not empty, is reported first; cause is an error
// that forced it.
func (f *fence) killAll(why string, cause error) error {
	if why != "" && why != whyExited {
		f.send(fenceEvent{Ev: evKill, Why: why})
	}
	k := treeKiller{root: os.Getpid(), failed: func(pid int, err error) {
		fmt.Fprintf(f.a.stderr, "nodeid: cannot kill process %d of %s: %v; trying again\n", pid, f.argv0, err)
	}}
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		if _, _, err := k.round(); err != nil {
			cause = errors.Join(cause, err)
		}
		pause.Reset(2 * time.Millisecond)
		select {
		case c, ok := <-f.reaped:
			if !ok {
				f.send(fenceEvent{Ev: evDone})
				return cause
			}
			f.noteReaped(c)
		case <-pause.C:
		}
	}
}
