package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeid/nodeid"
)

// supervisor is the "nodeid run" process while its command runs: it holds
// and renews the lease, passes each renewal and signal on to the fence,
// and, as a second line, kills the command's processes itself at the
// deadline if the fence has not reported them gone.
type supervisor struct {
	a          *app
	lease      *nodeid.Lease
	grace, ttl time.Duration
	argv       []string
	name       string // argv[0], printable
	clock      *wallClock
	steps      *stepWatch
	keepDBEnv  bool
	sigs       <-chan os.Signal
	exports    *exportFlags // --export

	leaseDir    string
	fence       *exec.Cmd
	fenceStart  uint64 // the fence's start, in clock ticks after boot
	ctl         *jsonLines
	events      chan fenceEvent // closed when the fence's status pipe reads EOF
	fenceExited chan struct{}

	deadline time.Time // the last deadline sent to the fence
	ceiling  int64     // the last horizon ceiling sent to the fence

	started     bool   // the command started, or may have
	startErr    string // why the command could not start; nothing ran
	code        int    // the command's exit code, if haveCode
	haveCode    bool
	terminating bool // SIGTERM sent or asked for
	killedBy    string
	secondLine  bool // the supervisor killed the command's processes itself
}

// pollInterval is how often the supervisor looks for a renewal to pass on
// to the fence: often enough that a renewal made TTL/3 into the lease
// reaches the fence well before the deadline less the grace.
func pollInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/60, 10*time.Millisecond), 250*time.Millisecond)
}

// run runs the command and returns its exit code as an exitCodeError (nil
// for 0), or why it could not run.
func (s *supervisor) run() error {
	l := s.lease
	// Waiting past the horizon took time: the lease must still be held.
	if err := l.Err(); err != nil {
		releaseUnused(l)
		return fmt.Errorf("%s before %s could start", strings.TrimPrefix(err.Error(), "nodeid: "), s.name)
	}
	ceiling, ok := leaseCeiling(l)
	if !ok || time.Until(l.Deadline()) <= 0 {
		releaseUnused(l)
		return fmt.Errorf("the lease of node ID %d expired before %s could start", l.NodeID(), s.name)
	}
	s.deadline, s.ceiling = l.Deadline(), ceiling
	dir, err := os.MkdirTemp("", "nodeid-run-")
	if err != nil {
		releaseUnused(l)
		return err
	}
	s.leaseDir = dir
	defer os.RemoveAll(dir)
	if err := s.writeLeaseFile(true); err != nil {
		releaseUnused(l)
		return err
	}
	if err := s.startFence(); err != nil {
		releaseUnused(l)
		return fmt.Errorf("cannot start %s: %w", s.name, err)
	}
	s.loop()
	return s.finish()
}

// startFence starts the fence process and sends it the command.
func (s *supervisor) startFence() error {
	// Should the fence die, the command's processes are reparented here.
	if err := becomeSubreaper(); err != nil {
		return err
	}
	c, err := s.a.self(context.Background(), "run-fence")
	if err != nil {
		return err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return err
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	c.Env = withoutKeys(env, dbSecretEnv)
	c.ExtraFiles = []*os.File{ctlR, statusW} // descriptors 3 and 4
	c.Stdin, c.Stdout, c.Stderr = s.a.stdin, s.a.stdout, s.a.rawStderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the command's process group
	c.WaitDelay = time.Second                           // output held open by an escaped process
	since := uint64(bootNow() / int64(10*time.Millisecond))
	err = c.Start()
	ctlR.Close()
	statusW.Close()
	if err != nil {
		ctlW.Close()
		statusR.Close()
		return err
	}
	s.fence = c
	s.fenceStart = since - 1 // clock ticks are 10ms (USER_HZ 100): one early
	if p, err := readProc(c.Process.Pid); err == nil {
		s.fenceStart = p.start
	}
	s.fenceExited = make(chan struct{})
	go func() {
		_ = c.Wait()
		ctlW.Close()
		close(s.fenceExited)
	}()
	s.events = make(chan fenceEvent)
	go func() {
		defer close(s.events)
		defer statusR.Close()
		dec := json.NewDecoder(statusR)
		for {
			var ev fenceEvent
			if dec.Decode(&ev) != nil {
				return
			}
			s.events <- ev
		}
	}()
	s.ctl = &jsonLines{w: ctlW}
	deadlineMs, _ := s.wallDeadline()
	lease := map[string]string{
		EnvNode:       strconv.FormatInt(s.lease.NodeID(), 10),
		EnvEpoch:      strconv.FormatInt(s.lease.Epoch(), 10),
		EnvOwner:      s.lease.Owner(),
		EnvGrace:      strconv.FormatInt(s.grace.Milliseconds(), 10),
		EnvHorizonMs:  strconv.FormatInt(s.lease.PreviousHorizon(), 10),
		EnvCeilingMs:  strconv.FormatInt(s.ceiling, 10),
		EnvDeadlineMs: strconv.FormatInt(deadlineMs, 10),
		EnvLeaseFile:  filepath.Join(s.leaseDir, leaseFileName),
	}
	s.exports.addTo(lease, s.lease.NodeID(), s.lease.Epoch())
	// Should this fail, the fence exits and the loop sees it.
	_ = s.ctl.send(fenceMsg{
		Op: opStart, Argv: s.argv, Env: commandEnv(s.keepDBEnv, lease),
		Grace: s.grace, TTL: s.ttl, LeaseDir: s.leaseDir,
		Deadline: bootDeadline(s.deadline), Ceiling: s.ceiling,
	})
	return nil
}

// wallDeadline returns the deadline as unix milliseconds by the wall clock
// (rounded down) and on CLOCK_BOOTTIME.
func (s *supervisor) wallDeadline() (ms, bootNs int64) {
	bootNs = bootDeadline(s.deadline)
	left := time.Duration(bootNs - bootNow())
	return s.clock.nowMs() + left.Milliseconds(), bootNs
}

func (s *supervisor) writeLeaseFile(held bool) error {
	ms, boot := s.wallDeadline()
	return writeLeaseFile(s.leaseDir, leaseState{
		node: s.lease.NodeID(), epoch: s.lease.Epoch(), held: held,
		deadlineMs: ms, deadlineBootNs: boot, horizonCeilingMs: s.ceiling,
	})
}

// loop supervises the command until it and every process it started are
// gone.
func (s *supervisor) loop() {
	poll := time.NewTicker(pollInterval(s.ttl))
	defer poll.Stop()
	deadline, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		fmt.Fprintf(s.a.stderr, "nodeid: %v: killing %s\n", err, s.name)
		s.kill()
		return
	}
	defer deadline.stop()
	_ = deadline.at(bootDeadline(s.deadline))
	lost := s.lease.Lost()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				// The fence died without reporting the command's
				// processes gone: they are reparented here.
				s.events = nil
				s.kill()
				return
			}
			if s.handle(ev) {
				return
			}
		case sig := <-s.sigs:
			s.forward(sig.(syscall.Signal))
		case <-lost:
			lost = nil
			s.terminate(oneLine(strings.TrimPrefix(s.lease.Err().Error(), "nodeid: ")))
			_ = s.writeLeaseFile(false)
		case <-poll.C:
			s.propagate(deadline)
		case <-deadline.C:
			d := s.lease.Deadline()
			if time.Until(d) > 0 {
				_ = deadline.at(bootDeadline(d)) // renewed since
				continue
			}
			s.report(whyDeadline)
			s.kill()
			return
		}
	}
}

// handle acts on an event of the fence; it reports whether the command
// and all its processes are gone.
func (s *supervisor) handle(ev fenceEvent) bool {
	switch ev.Ev {
	case evStarted:
		s.started = true
	case evFailed:
		s.startErr = ev.Err
	case evTerm:
		if !s.terminating && s.killedBy == "" {
			s.terminating = true
			fmt.Fprintf(s.a.stderr, "nodeid: the lease of node ID %d was not renewed and its deadline is %s away: sending SIGTERM to %s, SIGKILL in %s\n",
				s.lease.NodeID(), max(time.Until(s.lease.Deadline()), 0).Round(time.Millisecond), s.name, ev.In.Round(time.Millisecond))
		}
	case evKill:
		s.report(ev.Why)
	case evExit:
		s.code, s.haveCode = ev.Code, true
	case evDone:
		return true
	}
	return false
}

// report says once why every process of the command is being killed.
func (s *supervisor) report(why string) {
	if s.killedBy != "" {
		return
	}
	s.killedBy = why
	switch why {
	case whyGrace:
		fmt.Fprintf(s.a.stderr, "nodeid: sending SIGKILL to %s and every process it started: the lease's grace is over\n", s.name)
	case whyDeadline:
		fmt.Fprintf(s.a.stderr, "nodeid: sending SIGKILL to %s and every process it started: the lease's deadline has come\n", s.name)
	case whyCeiling:
		fmt.Fprintf(s.a.stderr, "nodeid: sending SIGKILL to %s and every process it started: the wall clock reached the lease's horizon ceiling %s less TTL/20 before a renewal raised it (was the clock set forward?)\n",
			s.name, exactMs(s.ceiling))
	}
}

// forward passes a signal on to the command's process group. Ctrl-Z stops
// the command, then the supervisor; SIGCONT continues the command.
func (s *supervisor) forward(sig syscall.Signal) {
	_ = s.ctl.send(fenceMsg{Op: opSignal, Signal: int(sig)})
	if sig == syscall.SIGTSTP {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

// terminate asks the fence to send SIGTERM now and SIGKILL after the grace,
// at the deadline at the latest.
func (s *supervisor) terminate(reason string) {
	killIn := max(min(time.Until(s.lease.Deadline()), s.grace), 0)
	if !s.terminating {
		s.terminating = true
		fmt.Fprintf(s.a.stderr, "nodeid: %s: sending SIGTERM to %s, SIGKILL in %s\n", reason, s.name, killIn.Round(time.Millisecond))
	}
	_ = s.ctl.send(fenceMsg{Op: opTerminate, KillAt: bootNow() + int64(killIn)})
}

// propagate passes a renewal's deadline and horizon ceiling on to the
// fence and the lease file.
func (s *supervisor) propagate(deadline *clockAlarm) {
	d := s.lease.Deadline()
	c, ok := leaseCeiling(s.lease)
	if !ok || (d.Equal(s.deadline) && c == s.ceiling) {
		return
	}
	s.deadline, s.ceiling = d, c
	boot := bootDeadline(d)
	_ = s.ctl.send(fenceMsg{Op: opLease, Deadline: boot, Ceiling: c})
	_ = deadline.at(boot)
	if err := s.writeLeaseFile(true); err != nil {
		fmt.Fprintf(s.a.stderr, "nodeid: cannot rewrite the lease file: %v\n", err)
	}
}

// kill is the second line: the supervisor kills the fence and every
// process started since (orphans of a dead fence are reparented to the
// supervisor, a subreaper), round after round, until none is alive.
func (s *supervisor) kill() {
	s.secondLine = true
	me := os.Getpid()
	k := treeKiller{root: me, since: s.fenceStart, failed: func(pid int, err error) {
		fmt.Fprintf(s.a.stderr, "nodeid: cannot kill process %d of %s: %v; trying again\n", pid, s.name, err)
	}}
	for {
		none, seen, err := k.round()
		for _, pid := range seen {
			if p, err := readProc(pid); err == nil && p.ppid == me && pid != s.fence.Process.Pid && !p.alive() {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // an adopted orphan
			}
		}
		if err == nil && none {
			return
		}
		select {
		case ev, ok := <-s.events:
			if ok {
				s.handle(ev)
			} else {
				s.events = nil
			}
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// finish waits for the fence to exit, releases the lease with the horizon
// the command's stamps need, and returns the command's exit code.
func (s *supervisor) finish() error {
	select {
	case <-s.fenceExited:
	case <-time.After(5 * time.Second):
		// The fence reported the command gone but lingers: it is not needed.
		_ = s.fence.Process.Kill()
		<-s.fenceExited
	}
	if s.events != nil {
		for ev := range s.events {
			s.handle(ev)
		}
	}
	// Every process of the command is gone: nothing can stamp after now.
	nowMs := s.clock.nowMs()
	l := s.lease
	switch {
	case s.startErr != "" && !s.started:
		releaseUnused(l) // nothing ran
		return fmt.Errorf("cannot start %s: %s", s.name, s.startErr)
	case !s.steps.Stepped():
		_ = nodeid.NewMinter(l).Bind(func() int64 { return nowMs })
	default:
		// The clock was set while the command ran: stamps made before a
		// backward step may be after now, but not after the ceiling.
		_ = nodeid.NewMinter(l).Bind(func() int64 { return max(nowMs, s.ceiling) })
	}
	if err := l.Release(context.Background()); err != nil {
		if errors.Is(err, nodeid.ErrLeaseLost) {
			if !s.terminating { // not reported yet
				fmt.Fprintf(s.a.stderr, "nodeid: %s before the command exited\n", oneLine(strings.TrimPrefix(err.Error(), "nodeid: ")))
			}
		} else {
			fmt.Fprintf(s.a.stderr, "%s; the node ID frees up when its lease expires\n", s.a.describe(err))
		}
	}
	switch {
	case s.haveCode && s.code == 0:
		return nil
	case s.haveCode:
		return &exitCodeError{code: s.code}
	case s.secondLine && s.killedBy != "":
		return &exitCodeError{code: 128 + int(syscall.SIGKILL)}
	}
	return &exitCodeError{code: exitFailure, msg: fmt.Sprintf("the fence of %s exited without reporting its exit status; its processes were killed", s.name)}
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
