package warden

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The warden is a process of its own between the supervisor (the process
// that holds and renews the lease) and the command. It leads the command's
// process group and is a child subreaper, so that every process the
// command starts stays in its tree, however it forks or changes its
// session. It holds the lease's deadline on CLOCK_BOOTTIME and the horizon
// ceiling on the wall clock, and it does not depend on the supervisor
// running: it sends SIGTERM to the command's group a grace before the
// deadline and SIGKILL to every descendant at the deadline, when the wall
// clock reaches the ceiling less TTL/20, and at once when the supervisor
// dies (its control pipe reads EOF). Only a renewal, sent by a running
// supervisor, moves the deadline. It ignores every signal it can (SIGTERM,
// SIGINT, SIGHUP, SIGTSTP, ...): what is for the command comes from the
// supervisor over the pipe. It exits once the command and all its
// descendants are gone.

// warden is the state of the warden process.
type warden struct {
	stderr io.Writer
	events *jsonLines
	clock  *WallClock
	name   string // the command's argv[0], printable

	grace, ttl time.Duration
	ceiling    int64 // unix ms: the command must not stamp after it
	deadline   int64 // CLOCK_BOOTTIME ns: nothing of the command may run after it
	killAt     int64 // CLOCK_BOOTTIME ns: SIGKILL to every descendant
	terminated bool  // SIGTERM sent; killAt no longer moves
	leaseDir   string

	pid    int // the command
	pidfd  int // the command's pidfd, -1 without one (Linux < 5.3)
	exited bool
	// reaped receives every child the warden reaps; it is closed when the
	// warden has no child left, hence no descendant (orphans are
	// reparented to it).
	reaped chan reapedChild
}

// reapedChild is a child process that exited, and how.
type reapedChild struct {
	pid int
	ws  syscall.WaitStatus
}

// Serve is the warden: the program that Config.Warden starts must call it
// (and exit with an error's status if it returns one). It reads the
// command and the lease from descriptor 3, reports on descriptor 4, and
// returns once the command and all its descendants are gone. Its own
// messages go to stderr; clock is its wall clock, with the supervisor's
// Offset if it has one.
func Serve(stderr io.Writer, clock *WallClock) error {
	ctl, status := os.NewFile(ctlFD, "control"), os.NewFile(statusFD, "status")
	for _, f := range []*os.File{ctl, status} {
		if _, err := f.Stat(); err != nil {
			return fmt.Errorf("the warden is started by its supervisor only, with its control pipe as descriptor %d and its status pipe as %d: %w",
				ctlFD, statusFD, err)
		}
		syscall.CloseOnExec(int(f.Fd())) // not for the command
	}
	// Handled (and dropped), not ignored: ignored signals would stay
	// ignored in the command, and this process must outlive whatever is
	// sent to its group.
	signal.Notify(make(chan os.Signal, 1))
	defer signal.Reset()

	dec := json.NewDecoder(ctl)
	var start message
	if err := dec.Decode(&start); err != nil || start.Op != opStart || len(start.Argv) == 0 || start.Ceiling <= 0 || start.Deadline <= 0 {
		err = fmt.Errorf("warden: no valid start message on descriptor %d (%v)", ctlFD, err)
		_ = (&jsonLines{w: status}).send(event{Ev: evFailed, Err: err.Error()})
		return err
	}
	w := &warden{
		stderr: stderr, events: &jsonLines{w: status}, clock: clock, name: start.Name,
		grace: start.Grace, ttl: start.TTL, ceiling: start.Ceiling, deadline: start.Deadline, killAt: start.Deadline,
		leaseDir: start.LeaseDir, reaped: make(chan reapedChild), pidfd: -1,
	}
	if w.name == "" {
		w.name = strconv.Quote(start.Argv[0])
	}
	msgs := make(chan message)
	go func() {
		defer close(msgs)
		for {
			var m message
			if dec.Decode(&m) != nil {
				return // EOF: the supervisor is gone
			}
			msgs <- m
		}
	}()
	if err := becomeSubreaper(); err != nil {
		w.send(event{Ev: evFailed, Err: err.Error()})
		return err
	}
	if err := w.start(start); err != nil {
		w.send(event{Ev: evFailed, Err: err.Error()})
		return nil
	}
	return w.guard(msgs)
}

func (w *warden) send(ev event) {
	_ = w.events.send(ev) // the supervisor may be gone: the warden goes on
}

// start checks the lease once more and starts the command in the warden's
// process group.
func (w *warden) start(m message) error {
	if left := time.Duration(m.Deadline - bootNow()); left <= 0 {
		return fmt.Errorf("the lease's deadline passed %s ago, before the command could start", (-left).Round(time.Millisecond))
	}
	if now := w.clock.NowMs(); now >= w.ceilingKillMs() {
		return fmt.Errorf("the wall clock (%s) is past the lease's horizon ceiling %s less TTL/20", exactTime(time.UnixMilli(now)), exactTime(time.UnixMilli(m.Ceiling)))
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
		// Should the warden itself be killed, its direct child dies with it;
		// the others are reparented to the supervisor, also a subreaper.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return err
	}
	w.pid = pid
	// Opened before the reaper starts, so that it names the command: a
	// SIGKILL through it cannot reach a process that reuses its PID.
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		w.pidfd = fd
		syscall.CloseOnExec(fd)
	}
	w.send(event{Ev: evStarted, Pid: pid})
	go w.reap()
	return nil
}

// reap collects every child of the warden, the command and the orphans
// reparented to it, until it has none.
func (w *warden) reap() {
	defer close(w.reaped)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return // ECHILD: no child left
		default:
			w.reaped <- reapedChild{pid, ws}
		}
	}
}

// reaped notes the command's exit status and reports it.
func (w *warden) noteReaped(c reapedChild) {
	if c.pid != w.pid || w.exited {
		return
	}
	w.exited = true
	code := c.ws.ExitStatus()
	if c.ws.Signaled() {
		code = 128 + int(c.ws.Signal())
	}
	w.send(event{Ev: evExit, Code: code})
}

// ceilingKillMs is the wall-clock time at which the warden kills the
// command: the horizon ceiling less TTL/20, time to kill it before it can
// stamp past the ceiling.
func (w *warden) ceilingKillMs() int64 { return w.ceiling - w.ttl.Milliseconds()/20 }

// guard bounds the running command until it and all its descendants are
// gone.
func (w *warden) guard(msgs <-chan message) error {
	termA, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		return w.killAll(WhyDeadline, err)
	}
	defer termA.stop()
	killA, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		return w.killAll(WhyDeadline, err)
	}
	defer killA.stop()
	ceilA, err := newClockAlarm(unix.CLOCK_REALTIME)
	if err != nil {
		return w.killAll(WhyCeiling, err)
	}
	defer ceilA.stop()
	var hookTick <-chan time.Time
	if w.clock.hooked() {
		t := time.NewTicker(hookPoll)
		defer t.Stop()
		hookTick = t.C
	}
	offset := w.clock.Offset()
	arm := func() error {
		return errors.Join(
			termA.at(w.deadline-int64(w.grace)),
			killA.at(w.killAt),
			// The wall clock plus the test offset reaches the ceiling when
			// the system's wall clock reaches it less the offset.
			ceilA.at((w.ceilingKillMs()-offset)*int64(time.Millisecond)),
		)
	}
	if err := arm(); err != nil {
		return w.killAll(WhyDeadline, err)
	}
	for {
		select {
		case m, ok := <-msgs:
			// A renewal's deadline, however late it is read, is the
			// lease's own. Resumed past the deadline (the whole tree
			// frozen, then thawed), the warden kills before it does
			// anything else.
			if ok && m.Op == opLease {
				w.handle(m)
			}
			why := w.due()
			if !ok {
				err := w.killAll(why, nil)
				fmt.Fprintf(w.stderr, "nodeid: the supervisor (nodeid run) is gone: killed %s and every process it started\n", w.name)
				if w.leaseDir != "" {
					_ = os.RemoveAll(w.leaseDir)
				}
				return err
			}
			if why != "" {
				return w.killAll(why, nil)
			}
			if m.Op != opLease {
				w.handle(m)
			}
			if err := arm(); err != nil {
				return w.killAll(WhyDeadline, err)
			}
		case <-termA.C:
			if why := w.due(); why != "" {
				return w.killAll(why, nil) // the kill is due too: no SIGTERM first
			}
			if !w.terminated && bootNow() >= w.deadline-int64(w.grace) && w.terminate(w.deadline) {
				w.send(event{Ev: evTerm, Why: WhyDeadline, In: max(time.Duration(w.killAt-bootNow()), 0)})
			}
		case <-killA.C:
			if why := w.due(); why != "" {
				return w.killAll(why, nil)
			}
		case <-ceilA.C:
			if why := w.due(); why != "" {
				return w.killAll(why, nil)
			}
		case <-hookTick:
			if o := w.clock.Offset(); o != offset {
				offset = o
				if err := arm(); err != nil {
					return w.killAll(WhyCeiling, err)
				}
			}
		case c, ok := <-w.reaped:
			if !ok {
				return w.killAll(whyExited, nil) // nothing left: reports done
			}
			w.noteReaped(c)
			if w.exited {
				return w.killAll(whyExited, nil)
			}
		}
	}
}

// due returns why every process of the command must be killed now, if it
// must: the deadline (or the grace after SIGTERM), else the ceiling. Both
// alarms may be found expired at once on a loaded host; the deadline is
// the reason to report then.
func (w *warden) due() string {
	switch {
	case bootNow() >= w.killAt && w.killAt < w.deadline:
		return WhyGrace
	case bootNow() >= w.killAt:
		return WhyDeadline
	case w.clock.NowMs() >= w.ceilingKillMs():
		return WhyCeiling
	}
	return ""
}

// handle applies a message of the supervisor.
func (w *warden) handle(m message) {
	switch m.Op {
	case opLease:
		w.ceiling = m.Ceiling
		w.deadline = m.Deadline
		if !w.terminated {
			w.killAt = m.Deadline
		}
	case opSignal:
		_ = syscall.Kill(-os.Getpid(), syscall.Signal(m.Signal))
	case opTerminate:
		if w.terminate(m.KillAt) {
			w.send(event{Ev: evTerm, Why: whyAsked, In: max(time.Duration(w.killAt-bootNow()), 0)})
		}
	}
}

// terminate sends SIGTERM to the command's process group, and SIGCONT so
// that a stopped command can act on it, and brings SIGKILL forward to
// killAt if it is sooner. It reports whether it sent them now: not if it
// had already, nor to a command that has exited (reaped or not), which the
// signals would not stop: what it left behind is killed once it is reaped.
func (w *warden) terminate(killAt int64) bool {
	w.killAt = min(w.killAt, killAt)
	if w.terminated || w.commandExited() {
		return false
	}
	w.terminated = true
	_ = syscall.Kill(-os.Getpid(), syscall.SIGTERM)
	_ = syscall.Kill(-os.Getpid(), syscall.SIGCONT)
	return true
}

// commandExited reports whether the command has exited: reaped, or a
// zombie that the reaper has yet to collect (the reaper may hold its
// status while the warden's loop acts on a message).
func (w *warden) commandExited() bool {
	if w.exited {
		return true
	}
	var info unix.Siginfo // zeroed: Signo stays 0 if the command runs
	err := unix.Waitid(unix.P_PID, w.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == unix.ECHILD || err == nil && info.Signo == int32(unix.SIGCHLD)
}

// killAll kills every descendant of the warden, round after round, until
// it has no child left (hence no descendant), reports it to the supervisor
// and returns. why, if not empty, is reported first, but not for a command
// that has exited (reaped or not): an alarm that expires as the command
// exits by itself may be taken before its exit is noted, and the command
// was not killed then; what it left behind is killed all the same. cause
// is an error that forced it. The command itself is killed first, through
// its pidfd, with one system call: a round reads every process of /proc,
// and a command thawed with its warden runs meanwhile; nothing is written
// (a report, a message) before it.
func (w *warden) killAll(why string, cause error) error {
	report := why != "" && why != whyExited && !w.commandExited()
	if why != whyExited && w.pidfd >= 0 {
		_ = unix.PidfdSendSignal(w.pidfd, unix.SIGKILL, nil, 0)
	}
	if w.pidfd >= 0 {
		_ = unix.Close(w.pidfd)
		w.pidfd = -1
	}
	if report {
		w.send(event{Ev: evKill, Why: why})
	}
	k := treeKiller{parent: os.Getpid(), failed: func(pid int, err error) {
		fmt.Fprintf(w.stderr, "nodeid: cannot kill process %d of %s: %v; trying again\n", pid, w.name, err)
	}}
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		if _, _, err := k.round(); err != nil {
			cause = errors.Join(cause, err)
		}
		pause.Reset(2 * time.Millisecond)
		select {
		case c, ok := <-w.reaped:
			if !ok {
				w.send(event{Ev: evDone})
				return cause
			}
			w.noteReaped(c)
		case <-pause.C:
		}
	}
}

// exactTime writes t as the library's messages do: UTC, to the millisecond.
func exactTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
