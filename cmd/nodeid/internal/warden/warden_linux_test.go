package warden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeid/nodeid/internal/testkit"
)

// The tests run the warden, and for some the supervisor, as processes of
// their own: this test binary, in the role roleEnv names.
const (
	roleEnv     = "WARDEN_TEST_ROLE"     // "warden", "supervisor" or "kill-after-exit"
	clockEnv    = "WARDEN_TEST_CLOCK"    // the offset file of the wall clock, for both roles
	argvEnv     = "WARDEN_TEST_ARGV"     // supervisor: the command, as JSON
	deadlineEnv = "WARDEN_TEST_DEADLINE" // supervisor: the deadline, from its start
	whyEnv      = "WARDEN_TEST_WHY"      // kill-after-exit: the reason of the kill
	heldEnv     = "WARDEN_TEST_HELD"     // kill-after-exit: true if the reaper holds the command's status
	dirEnv      = "WARDEN_TEST_DIR"      // kill-after-exit: a directory of its own
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "warden":
		clock, err := NewWallClock(fileOffset(os.Getenv(clockEnv)))
		if err == nil {
			err = Serve(os.Stderr, clock)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "supervisor":
		os.Exit(superviseMain())
	case "kill-after-exit":
		os.Exit(killAfterExitMain(os.Getenv(whyEnv), os.Getenv(heldEnv) == "true", os.Getenv(dirEnv)))
	}
	testkit.Main(m, nil)
}

// fileOffset is an Offset read from path (0 while it is missing or
// empty), or nil for no path.
func fileOffset(path string) Offset {
	if path == "" {
		return nil
	}
	return func() (int64, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return strconv.ParseInt(s, 10, 64)
		}
		return 0, nil
	}
}

// lockedBuffer is a Config.Log the test reads while the supervisor writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// config returns a Config for argv with the given deadline from now, a
// grace of a third of it, and a horizon ceiling a minute ahead, its warden
// this test binary on the wall clock of clockFile ("" for the system's).
func config(t testing.TB, clockFile string, deadline time.Duration, argv ...string) (Config, *lockedBuffer) {
	t.Helper()
	clock, err := NewWallClock(fileOffset(clockFile))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	return Config{
		Argv: argv, Env: os.Environ(), Name: argv[0],
		NodeID: 7, Deadline: time.Now().Add(deadline), Ceiling: clock.NowMs() + time.Minute.Milliseconds(),
		Grace: deadline / 3, TTL: time.Minute,
		Warden: func() (*exec.Cmd, error) {
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), roleEnv+"=warden", clockEnv+"="+clockFile)
			return c, nil
		},
		Stdout: os.Stdout, Stderr: os.Stderr, Log: log, Clock: clock,
	}, log
}

// start starts cfg and fails the test if it cannot.
func start(t *testing.T, cfg Config) *Supervisor {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-s.Done():
		default:
			s.Terminate("the test ended")
			s.Wait()
		}
	})
	return s
}

// wait waits for the command's end, failing the test after within.
func wait(t *testing.T, s *Supervisor, within time.Duration) Exit {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(within):
		t.Fatalf("the command did not end within %s", within)
	}
	e := s.Wait()
	t.Logf("exit: %+v", e)
	return e
}

// tree is a shell script that starts processes in every way of leaving a
// tree but a subreaper's (a background child, an orphan of a subshell, a
// new session), writes their PIDs and its own to the file pids, and
// then runs body.
func tree(t *testing.T, body string) (script, pids string) {
	t.Helper()
	dir := t.TempDir()
	pids = filepath.Join(dir, "pids")
	script = filepath.Join(dir, "tree.sh")
	src := `#!/bin/sh
sleep 1000 & echo $! >> ` + pids + `.tmp
(sleep 1000 & echo $! >> ` + pids + `.tmp)
if command -v setsid >/dev/null; then setsid sleep 1000 & echo $! >> ` + pids + `.tmp; fi
echo $$ >> ` + pids + `.tmp
mv ` + pids + `.tmp ` + pids + `
` + body + "\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, pids
}

// readPIDs waits for the file of tree's PIDs and returns them.
func readPIDs(t *testing.T, path string, within time.Duration) []int {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		if b, err := os.ReadFile(path); err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			if len(pids) < 3 {
				t.Fatalf("%s holds %d PIDs: %q", path, len(pids), b)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", path, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// living returns the processes of pids that can still run code.
func living(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil && p.alive() {
			alive = append(alive, pid)
		}
	}
	return alive
}

// TestExitCode: the command's exit code comes back; the horizon at exit is
// the wall clock read after it was gone.
func TestExitCode(t *testing.T) {
	cfg, _ := config(t, "", time.Minute, "sh", "-c", "exit 7")
	before := cfg.Clock.NowMs()
	e := wait(t, start(t, cfg), time.Minute)
	after := cfg.Clock.NowMs()
	if !e.Started || !e.Exited || e.Code != 7 || e.KilledBy != "" || e.SecondLine || e.Terminated || e.NothingRan() {
		t.Errorf("exit %+v; want the command's code 7", e)
	}
	if e.Horizon < before || e.Horizon > after {
		t.Errorf("horizon %d, want the clock at exit, within [%d, %d]", e.Horizon, before, after)
	}
}

// TestStartFailure: a command that cannot start is reported; nothing ran.
func TestStartFailure(t *testing.T) {
	cfg, _ := config(t, "", time.Minute, filepath.Join(t.TempDir(), "missing"))
	e := wait(t, start(t, cfg), time.Minute)
	if !e.NothingRan() || e.Exited || !strings.Contains(e.StartErr.Error(), "no such file") {
		t.Errorf("exit %+v; want a start error, nothing run", e)
	}
}

// TestConfigChecked: a Config without what the warden needs is refused
// before anything starts.
func TestConfigChecked(t *testing.T) {
	good, _ := config(t, "", time.Minute, "true")
	for name, change := range map[string]func(*Config){
		"no command": func(c *Config) { c.Argv = nil },
		"no warden":  func(c *Config) { c.Warden = nil },
		"no grace":   func(c *Config) { c.Grace = 0 },
		"no ceiling": func(c *Config) { c.Ceiling = 0 },
	} {
		cfg := good
		change(&cfg)
		if s, err := Start(cfg); err == nil {
			s.Wait()
			t.Errorf("%s: started", name)
		}
	}
}

// TestDeadlineKillsTree: at the deadline every process of the command's
// tree is killed, those that ignore SIGTERM and left its process group
// included.
func TestDeadlineKillsTree(t *testing.T) {
	script, pidFile := tree(t, `trap '' TERM; while :; do sleep 1; done`)
	cfg, log := config(t, "", 3*time.Second, script)
	s := start(t, cfg)
	pids := readPIDs(t, pidFile, time.Minute)
	e := wait(t, s, time.Minute)
	// The warden kills at the deadline; the supervisor's second line may
	// find it due at the same instant and kill the warden too.
	if e.KilledBy != WhyDeadline || !(e.Exited && e.Code == 128+int(syscall.SIGKILL) || e.SecondLine) {
		t.Errorf("exit %+v; want SIGKILL at the deadline", e)
	}
	if alive := living(pids); len(alive) > 0 {
		t.Errorf("processes %v of the command's tree %v outlived it", alive, pids)
	}
	for _, want := range []string{"the lease of node ID 7 was not renewed", "the lease's deadline has come"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}

// TestExitKillsLeftovers: when the command exits, what it left running is
// killed before Wait returns.
func TestExitKillsLeftovers(t *testing.T) {
	script, pidFile := tree(t, `exit 0`)
	cfg, _ := config(t, "", time.Minute, script)
	e := wait(t, start(t, cfg), time.Minute)
	if !e.Exited || e.Code != 0 || e.KilledBy != "" {
		t.Errorf("exit %+v; want 0", e)
	}
	if alive := living(readPIDs(t, pidFile, time.Second)); len(alive) > 0 {
		t.Errorf("processes %v outlived the command", alive)
	}
}

// TestExtendMovesTheDeadline: a renewal passed on with Extend keeps the
// command running past the first deadline.
func TestExtendMovesTheDeadline(t *testing.T) {
	dir := t.TempDir()
	goOn := filepath.Join(dir, "go-on")
	cfg, _ := config(t, "", 3*time.Second, "sh", "-c", `while [ ! -e `+goOn+` ]; do sleep 0.01; done; exit 3`)
	first := cfg.Deadline
	s := start(t, cfg)
	s.Extend(time.Now().Add(time.Minute), cfg.Ceiling+60_000)
	<-time.After(time.Until(first) + 500*time.Millisecond) // the first deadline has passed
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, s, time.Minute); !e.Exited || e.Code != 3 || e.KilledBy != "" || e.Terminated {
		t.Errorf("exit %+v; want the command's 3, past the first deadline", e)
	}
}

// TestTerminateAndSignal: Terminate sends SIGTERM, which the command may
// act on; Signal passes a signal on to its process group.
func TestTerminateAndSignal(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cfg, log := config(t, "", time.Minute, "sh", "-c", `trap 'exit 5' HUP; trap 'exit 42' TERM; touch `+ready+`; while :; do sleep 0.01; done`)
	s := start(t, cfg)
	readyWait(t, ready)
	s.Signal(syscall.SIGHUP)
	if e := wait(t, s, time.Minute); !e.Exited || e.Code != 5 {
		t.Errorf("after SIGHUP: exit %+v; want 5", e)
	}

	os.Remove(ready)
	cfg, log = config(t, "", time.Minute, cfg.Argv...)
	s = start(t, cfg)
	readyWait(t, ready)
	s.Terminate("the lease was taken over")
	if e := wait(t, s, time.Minute); !e.Exited || e.Code != 42 || !e.Terminated || e.KilledBy != "" {
		t.Errorf("after Terminate: exit %+v; want 42", e)
	}
	if !strings.Contains(log.String(), "nodeid: the lease was taken over: sending SIGTERM to sh, SIGKILL in 20s") {
		t.Errorf("the log does not say why and when:\n%s", log)
	}
}

func readyWait(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClockHook: the warden reads the wall clock with the supervisor's
// Offset; stepped forward past the horizon ceiling less TTL/20, it kills
// the command, and the horizon at exit covers the ceiling.
func TestClockHook(t *testing.T) {
	clockFile := filepath.Join(t.TempDir(), "offset")
	script, pidFile := tree(t, `while :; do sleep 1; done`)
	cfg, log := config(t, clockFile, time.Minute, script)
	steps, err := NewStepWatch(cfg.Clock)
	if err != nil {
		t.Fatal(err)
	}
	defer steps.Close()
	cfg.Steps = steps
	s := start(t, cfg)
	pids := readPIDs(t, pidFile, time.Minute)
	if err := os.WriteFile(clockFile, []byte("120000\n"), 0o644); err != nil { // two minutes forward
		t.Fatal(err)
	}
	e := wait(t, s, time.Minute)
	if e.KilledBy != WhyCeiling || !e.Stepped || e.Horizon < cfg.Ceiling {
		t.Errorf("exit %+v; want SIGKILL at the ceiling %d, a stepped clock and a horizon at or after the ceiling", e, cfg.Ceiling)
	}
	if alive := living(pids); len(alive) > 0 {
		t.Errorf("processes %v outlived the command", alive)
	}
	if !strings.Contains(log.String(), "was the clock set forward?") {
		t.Errorf("the log does not say why:\n%s", log)
	}
}

// TestWallClockOffset: the offset is added and followed; a failing read
// keeps the last one, and fails NewWallClock at once.
func TestWallClockOffset(t *testing.T) {
	off, fail := int64(1500), false
	c, err := NewWallClock(func() (int64, error) {
		if fail {
			return 0, errors.New("unreadable")
		}
		return off, nil
	})
	if err != nil || c.Offset() != 1500 {
		t.Fatalf("offset %d, %v; want 1500", c.Offset(), err)
	}
	if now, sys := c.NowMs(), time.Now().UnixMilli(); now < sys+1500-1000 || now > sys+1500 {
		t.Errorf("NowMs %d, system clock %d: the offset of 1500 is not added", now, sys)
	}
	off = -20
	if c.Offset() != -20 {
		t.Errorf("offset %d after a change to -20", c.Offset())
	}
	fail = true
	if c.Offset() != -20 {
		t.Errorf("offset %d after a failed read; want the last, -20", c.Offset())
	}
	if _, err := NewWallClock(func() (int64, error) { return 0, errors.New("unreadable") }); err == nil {
		t.Error("NewWallClock did not fail with a failing offset")
	}
	if plain, _ := NewWallClock(nil); plain.Offset() != 0 || plain.hooked() {
		t.Error("a clock without an Offset has one")
	}
}

// superviseMain is the supervisor role: it starts the command of argvEnv
// with the deadline of deadlineEnv and waits for its end.
func superviseMain() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(argvEnv)), &argv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := time.ParseDuration(os.Getenv(deadlineEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, _ := config(&testing.T{}, os.Getenv(clockEnv), d, argv...)
	cfg.Log = os.Stderr
	s, err := Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := s.Wait()
	fmt.Printf("%+v\n", e)
	return 0
}

// startSupervisor runs the supervisor role as a process of its own, with
// the command and deadline given.
func startSupervisor(t *testing.T, deadline time.Duration, argv ...string) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(argv)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), roleEnv+"=supervisor", argvEnv+"="+string(b), deadlineEnv+"="+deadline.String())
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

// waitGone waits until none of pids is alive, failing the test after
// within.
func waitGone(t *testing.T, pids []int, within time.Duration, what string) {
	t.Helper()
	for deadline := time.Now().Add(within); len(living(pids)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes %v of the command's tree %v still run after %s", what, living(pids), pids, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSupervisorKilled: the warden kills the command's tree at once when
// its supervisor dies, long before the deadline.
func TestSupervisorKilled(t *testing.T) {
	script, pidFile := tree(t, `trap '' TERM; while :; do sleep 1; done`)
	sup := startSupervisor(t, 10*time.Minute, script)
	pids := readPIDs(t, pidFile, time.Minute)
	if alive := living(pids); len(alive) != len(pids) {
		t.Fatalf("only %v of %v run", alive, pids)
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids, time.Minute, "after the supervisor was killed")
}

// TestSupervisorStopped: a stopped supervisor does not extend the
// deadline: the warden kills the command's tree at it.
func TestSupervisorStopped(t *testing.T) {
	script, pidFile := tree(t, `trap '' TERM; while :; do sleep 1; done`)
	sup := startSupervisor(t, 4*time.Second, script)
	pids := readPIDs(t, pidFile, time.Minute)
	if err := sup.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids, time.Minute, "with the supervisor stopped")
	if p, err := readProc(sup.Process.Pid); err != nil || p.state != 'T' {
		t.Errorf("the supervisor is not stopped any more: %+v, %v", p, err)
	}
}

// killAfterExitMain is the kill-after-exit role: a warden whose command
// (sh, leaving a sleep behind) has exited when the kill at the deadline or
// the ceiling (why) begins. With held, the reaper has collected the
// command and holds its status, not yet noted, as it does while the
// warden's loop takes an alarm; without, the command is a zombie the
// reaper has yet to collect, and stays one until the kill has begun (the
// reaper starts once the sleep is killed). It writes the warden's events
// to stdout.
func killAfterExitMain(why string, held bool, dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := becomeSubreaper(); err != nil {
		return fail(err)
	}
	clock, err := NewWallClock(nil)
	if err != nil {
		return fail(err)
	}
	w := &warden{
		stderr: os.Stderr, events: &jsonLines{w: os.Stdout}, clock: clock, name: "sh",
		grace: time.Second, ttl: time.Minute, ceiling: clock.NowMs(), deadline: bootNow(), killAt: bootNow(),
		reaped: make(chan reapedChild),
	}
	sleepFile := filepath.Join(dir, "sleep")
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "sleep 1000 & echo $! > " + sleepFile + "; exit 3"},
		&syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 2, 2}, Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		return fail(err)
	}
	w.pid = pid
	// Blocks until the command has exited: a zombie, not collected.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		return fail(err)
	}
	b, err := os.ReadFile(sleepFile)
	if err != nil {
		return fail(err)
	}
	sleep, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fail(err)
	}
	if held {
		go w.reap()
		// The reaper collects the command, then waits for the loop to take
		// its status.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
			if err == unix.ECHILD {
				break
			}
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("the reaper did not collect the command within a minute (%v)", err))
			}
		}
	} else {
		go func() {
			// The sleep dies in the kill's first round, after the kill
			// decided what to report.
			var info unix.Siginfo
			_ = unix.Waitid(unix.P_PID, sleep, &info, unix.WEXITED|unix.WNOWAIT, nil)
			w.reap()
		}()
	}
	if err := w.killAll(why, nil); err != nil {
		return fail(err)
	}
	if alive := living([]int{pid, sleep}); len(alive) > 0 {
		return fail(fmt.Errorf("processes %v outlived the kill", alive))
	}
	return 0
}

// TestKillAfterExitIsNoKill: a command that has exited by itself when the
// kill at the deadline or the ceiling begins is not reported killed: its
// exit and code are, and what it left behind is killed all the same. The
// reaper may hold the command's status, or not have collected it yet,
// while the warden's loop takes an alarm that expired at the same time;
// before, the warden then reported the kill first, and run exited with 5,
// the lease's end, although the command had exited first.
func TestKillAfterExitIsNoKill(t *testing.T) {
	for _, why := range []string{WhyDeadline, WhyCeiling, WhyGrace} {
		for _, held := range []bool{true, false} {
			name := why + "/zombie"
			if held {
				name = why + "/reaped"
			}
			t.Run(name, func(t *testing.T) {
				c := exec.Command(os.Args[0], "-test.run=^$")
				c.Env = append(os.Environ(), roleEnv+"=kill-after-exit", whyEnv+"="+why, heldEnv+"="+strconv.FormatBool(held), dirEnv+"="+t.TempDir())
				c.Stderr = os.Stderr
				c.WaitDelay = time.Second
				var out bytes.Buffer
				c.Stdout = &out
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("the warden: %v; events:\n%s", err, out.String())
					}
				case <-time.After(2 * time.Minute):
					_ = c.Process.Kill()
					<-done
					t.Fatalf("the warden did not end within 2 minutes; events:\n%s", out.String())
				}
				var evs []event
				dec := json.NewDecoder(&out)
				for dec.More() {
					var ev event
					if err := dec.Decode(&ev); err != nil {
						t.Fatal(err)
					}
					evs = append(evs, ev)
				}
				t.Logf("events: %+v", evs)
				exited := false
				for _, ev := range evs {
					switch ev.Ev {
					case evKill:
						t.Errorf("the warden reported a kill (%s) of a command that had exited by itself: %+v", ev.Why, evs)
					case evExit:
						exited = true
						if ev.Code != 3 {
							t.Errorf("exit code %d, want the command's 3", ev.Code)
						}
					}
				}
				if !exited || len(evs) == 0 || evs[len(evs)-1].Ev != evDone {
					t.Errorf("events %+v; want the command's exit, then done", evs)
				}
			})
		}
	}
}

// The supervisor's own alarm may fire at the deadline just as the command
// exits by itself, before it has read the warden's report of that exit:
// the exit, once read, is the command's own, not a kill. A command that
// SIGKILL ended was killed.
func TestSupervisorKillAfterExitIsNoKill(t *testing.T) {
	for _, c := range []struct {
		code int
		want string
	}{{0, ""}, {3, ""}, {128 + int(syscall.SIGTERM), ""}, {killedCode, WhyDeadline}} {
		s := &Supervisor{cfg: Config{Log: io.Discard}, name: "cmd"}
		s.report(WhyDeadline)
		if s.exit.KilledBy != WhyDeadline {
			t.Fatalf("KilledBy after the alarm: %q", s.exit.KilledBy)
		}
		s.handle(event{Ev: evExit, Code: c.code})
		if !s.exit.Exited || s.exit.Code != c.code || s.exit.KilledBy != c.want {
			t.Errorf("exit %d reported after the deadline's kill: %+v; want KilledBy %q", c.code, s.exit, c.want)
		}
	}
}
