package warden

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported returns nil where the warden runs: Linux.
func Supported() error { return nil }

// Supervisor is the supervisor's side of a command started under a
// warden: it passes each renewal (Extend), signal (Signal) and stop
// (Terminate) on to the warden and, as a second line, kills the command's
// processes itself at the deadline if the warden has not reported them
// gone. Its methods are safe for concurrent use.
type Supervisor struct {
	cfg  Config
	name string

	warden       *exec.Cmd
	wardenStart  uint64 // the warden's start, in clock ticks after boot
	ctl          *jsonLines
	events       chan event // closed when the warden's status pipe reads EOF
	wardenExited chan struct{}

	ops  chan func(alarm *clockAlarm) // run by loop
	done chan struct{}                // closed when exit is final
	exit Exit

	// Owned by loop.
	deadline    time.Time // the last deadline sent to the warden
	ceiling     int64     // the last horizon ceiling sent to the warden
	terminating bool      // SIGTERM sent or asked for
	killing     bool      // the kill of every process of the command reported
}

// Start starts the warden process (Config.Warden) and, under it, the
// command, bound by cfg.Deadline and cfg.Ceiling. The calling process
// becomes a child subreaper, so that the command's processes are
// reparented to it should the warden die. Whether the command itself
// started is told by Wait: an error here means nothing ran.
func Start(cfg Config) (*Supervisor, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, name: cfg.Name, deadline: cfg.Deadline, ceiling: cfg.Ceiling,
		ops: make(chan func(*clockAlarm)), done: make(chan struct{})}
	if s.name == "" {
		s.name = fmt.Sprintf("%q", cfg.Argv[0])
	}
	if err := s.startWarden(); err != nil {
		return nil, err
	}
	go s.run()
	return s, nil
}

// startWarden starts the warden process and sends it the command.
func (s *Supervisor) startWarden() error {
	// Should the warden die, the command's processes are reparented here.
	if err := becomeSubreaper(); err != nil {
		return err
	}
	c, err := s.cfg.Warden()
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
	c.ExtraFiles = []*os.File{ctlR, statusW} // descriptors 3 and 4
	c.Stdin, c.Stdout, c.Stderr = s.cfg.Stdin, s.cfg.Stdout, s.cfg.Stderr
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
	s.warden = c
	s.wardenStart = since - 1 // clock ticks are 10ms (USER_HZ 100): one early
	if p, err := readProc(c.Process.Pid); err == nil {
		s.wardenStart = p.start
	}
	s.wardenExited = make(chan struct{})
	go func() {
		_ = c.Wait()
		ctlW.Close()
		close(s.wardenExited)
	}()
	s.events = make(chan event)
	go func() {
		defer close(s.events)
		defer statusR.Close()
		dec := json.NewDecoder(statusR)
		for {
			var ev event
			if dec.Decode(&ev) != nil {
				return
			}
			s.events <- ev
		}
	}()
	s.ctl = &jsonLines{w: ctlW}
	// Should this fail, the warden exits and the loop sees it.
	_ = s.ctl.send(message{
		Op: opStart, Argv: s.cfg.Argv, Env: s.cfg.Env, Name: s.name,
		Grace: s.cfg.Grace, TTL: s.cfg.TTL, LeaseDir: s.cfg.LeaseDir,
		Deadline: BootTime(s.deadline), Ceiling: s.ceiling,
	})
	return nil
}

// do runs op in the supervisor's loop; it does nothing once the command
// and all its processes are gone.
func (s *Supervisor) do(op func(*clockAlarm)) {
	select {
	case s.ops <- op:
	case <-s.done:
	}
}

// Extend moves the deadline and the horizon ceiling to a renewal's: the
// warden's and the second line's.
func (s *Supervisor) Extend(deadline time.Time, ceiling int64) {
	s.do(func(alarm *clockAlarm) {
		if deadline.Equal(s.deadline) && ceiling == s.ceiling {
			return
		}
		s.deadline, s.ceiling = deadline, ceiling
		boot := BootTime(deadline)
		_ = s.ctl.send(message{Op: opLease, Deadline: boot, Ceiling: ceiling})
		if alarm != nil {
			_ = alarm.at(boot)
		}
	})
}

// Signal passes sig on to the command's process group. SIGTSTP stops the
// command, then the calling process (SIGSTOP); SIGCONT continues the
// command.
func (s *Supervisor) Signal(sig syscall.Signal) {
	s.do(func(*clockAlarm) {
		_ = s.ctl.send(message{Op: opSignal, Signal: int(sig)})
		if sig == syscall.SIGTSTP {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
	})
}

// Terminate stops the command: SIGTERM to its process group now, SIGKILL
// to every process it started after the grace, at the deadline at the
// latest. reason says why, in the message it writes to Config.Log. A
// command that has exited is not signalled (the warden kills what it left
// behind), and Exit.Terminated counts only a SIGTERM that the warden sent
// while the command ran.
func (s *Supervisor) Terminate(reason string) {
	s.do(func(*clockAlarm) {
		if s.exit.Exited {
			return
		}
		killIn := max(min(time.Until(s.deadline), s.cfg.Grace), 0)
		if !s.terminating {
			s.terminating = true
			fmt.Fprintf(s.cfg.Log, "nodeid: %s: sending SIGTERM to %s, SIGKILL in %s\n", reason, s.name, killIn.Round(time.Millisecond))
		}
		_ = s.ctl.send(message{Op: opTerminate, KillAt: bootNow() + int64(killIn)})
	})
}

// Done is closed once the command and every process it started are gone
// and Wait returns at once.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Wait waits until the command and every process it started are gone and
// the warden has exited, and returns how the command ended.
func (s *Supervisor) Wait() Exit {
	<-s.done
	return s.exit
}

func (s *Supervisor) run() {
	s.loop()
	s.finish()
	close(s.done)
}

// loop supervises the command until it and every process it started are
// gone.
func (s *Supervisor) loop() {
	deadline, err := newClockAlarm(unix.CLOCK_BOOTTIME)
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "nodeid: %v: killing %s\n", err, s.name)
		s.kill()
		return
	}
	defer deadline.stop()
	_ = deadline.at(BootTime(s.deadline))
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				// The warden died without reporting the command's
				// processes gone: they are reparented here.
				s.events = nil
				s.kill()
				return
			}
			if s.handle(ev) {
				return
			}
		case op := <-s.ops:
			op(deadline)
		case <-deadline.C:
			if time.Until(s.deadline) > 0 {
				_ = deadline.at(BootTime(s.deadline)) // extended since
				continue
			}
			s.report(WhyDeadline)
			s.kill()
			return
		}
	}
}

// handle acts on an event of the warden; it reports whether the command
// and all its processes are gone.
func (s *Supervisor) handle(ev event) bool {
	switch ev.Ev {
	case evStarted:
		s.exit.Started = true
	case evFailed:
		s.exit.StartErr = errors.New(ev.Err)
	case evTerm:
		// The warden sends it before the command's exit, if at all.
		s.exit.Terminated = s.exit.Terminated || !s.exit.Exited
		if !s.terminating && s.exit.KilledBy == "" {
			s.terminating = true
			fmt.Fprintf(s.cfg.Log, "nodeid: the lease of node ID %d was not renewed and its deadline is %s away: sending SIGTERM to %s, SIGKILL in %s\n",
				s.cfg.NodeID, max(time.Until(s.deadline), 0).Round(time.Millisecond), s.name, ev.In.Round(time.Millisecond))
		}
	case evKill:
		s.report(ev.Why)
	case evExit:
		s.exit.Code, s.exit.Exited = ev.Code, true
		if ev.Code != killedCode {
			// The command exited by itself as the kill was decided (the
			// supervisor's alarm may fire before the warden's report of
			// that exit is read): it was not killed.
			s.exit.KilledBy = ""
		}
	case evDone:
		return true
	}
	return false
}

// killedCode is the exit code the warden reports for a command that
// SIGKILL ended.
const killedCode = 128 + int(syscall.SIGKILL)

// report says once why every process of the command is being killed, and
// records it in Exit.KilledBy unless the command's exit was reported
// before: then only what it left behind is killed.
func (s *Supervisor) report(why string) {
	if s.killing {
		return
	}
	s.killing = true
	if !s.exit.Exited {
		s.exit.KilledBy = why
	}
	switch why {
	case WhyGrace:
		fmt.Fprintf(s.cfg.Log, "nodeid: sending SIGKILL to %s and every process it started: the lease's grace is over\n", s.name)
	case WhyDeadline:
		fmt.Fprintf(s.cfg.Log, "nodeid: sending SIGKILL to %s and every process it started: the lease's deadline has come\n", s.name)
	case WhyCeiling:
		fmt.Fprintf(s.cfg.Log, "nodeid: sending SIGKILL to %s and every process it started: the wall clock reached the lease's horizon ceiling %s less TTL/20 before a renewal raised it (was the clock set forward?)\n",
			s.name, exactTime(time.UnixMilli(s.ceiling)))
	}
}

// kill is the second line: the supervisor kills the warden and every
// process started since (orphans of a dead warden are reparented to the
// supervisor, a subreaper), round after round, until none is alive.
func (s *Supervisor) kill() {
	s.exit.SecondLine = true
	// Asked to stop the command, whose exit the warden has not reported:
	// this stops it.
	s.exit.Terminated = s.exit.Terminated || s.terminating && !s.exit.Exited
	me := os.Getpid()
	k := treeKiller{parent: me, since: s.wardenStart, failed: func(pid int, err error) {
		fmt.Fprintf(s.cfg.Log, "nodeid: cannot kill process %d of %s: %v; trying again\n", pid, s.name, err)
	}}
	if s.cfg.Shared {
		k.group = s.warden.Process.Pid // the command's process group (Setpgid)
	}
	for {
		none, seen, err := k.round()
		for _, pid := range seen {
			if p, err := readProc(pid); err == nil && p.ppid == me && pid != s.warden.Process.Pid && !p.alive() {
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

// finish waits for the warden to exit and reads the horizon: every
// process of the command is gone, so nothing can stamp after now.
func (s *Supervisor) finish() {
	select {
	case <-s.wardenExited:
	case <-time.After(5 * time.Second):
		// The warden reported the command gone but lingers: it is not needed.
		_ = s.warden.Process.Kill()
		<-s.wardenExited
	}
	if s.events != nil {
		for ev := range s.events {
			s.handle(ev)
		}
	}
	s.exit.Horizon = s.cfg.Clock.NowMs()
	if s.cfg.Steps != nil && s.cfg.Steps.Stepped() {
		// The clock was set while the command ran: stamps made before a
		// backward step may be after now, but not after the ceiling.
		s.exit.Stepped = true
		s.exit.Horizon = max(s.exit.Horizon, s.ceiling)
	}
}
