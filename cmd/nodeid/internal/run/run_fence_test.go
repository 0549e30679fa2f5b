//go:build linux

package run

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
)

// The fencing tests run "nodeid run" (this test binary as the command, see
// clitest.Self) as real processes, each on a table with the single node ID 0,
// with a stamper as its command: this test binary again, which stamps
// milliseconds read from the wall clock of the test hook into files. A
// second "nodeid run --wait" takes the node ID over; no millisecond may be
// stamped under both leases, and every stamp of the second holder must come
// after every stamp of the first. The TTL of a takeover is fenceTTL, not
// the least allowed, 3s: on a loaded host a short lease can expire before
// its command has started, or a waiting holder's claim can return after
// its deadline (a 10s lease did, 1 run in 10 beside two busy loops and a
// build), which is safe, but leaves nothing to test.
const fenceTTL = "15s"

// stamperArg as the first argument makes the test binary a stamper.
const stamperArg = "nodeid-test-stamper"

func init() {
	if len(os.Args) == 3 && os.Args[1] == stamperArg {
		os.Exit(stamper(os.Args[2]))
	}
}

// stamper appends the wall clock of the test hook, in unix milliseconds,
// to DIR/PID, one stamp a line, each new millisecond with one write (a
// killed stamper leaves whole lines), until DIR/stop exists. It does not
// check the lease: whatever it stamps after it should have stopped, the
// warden let it.
func stamper(dir string) int { return stampLoop(dir, nil) }

// stampLoop is the stampers' loop. With lease, before each stamp it reads
// the lease (held, and the ceiling to stamp at or below), then the clock,
// in that order, and stamps only what the lease allows, appending each
// refusal to DIR/refused as "held" or "ceiling", one a line.
func stampLoop(dir string, lease func() (held bool, ceiling int64)) int {
	clock, err := testWallClock(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	refused, err := os.OpenFile(filepath.Join(dir, "refused"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := filepath.Join(dir, "stop")
	last := int64(math.MinInt64)
	for {
		if _, err := os.Stat(stop); err == nil {
			return 0
		}
		held, ceiling := true, int64(math.MaxInt64)
		if lease != nil {
			held, ceiling = lease()
		}
		now := clock.NowMs()
		switch {
		case !held:
			_, _ = refused.WriteString("held\n")
		case now > ceiling:
			_, _ = refused.WriteString("ceiling\n")
		case now != last:
			if _, err := f.WriteString(strconv.FormatInt(now, 10) + "\n"); err != nil {
				return 1
			}
			last = now
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// stamps returns every millisecond stamped into dir, and the stampers'
// PIDs.
func readStamps(t *testing.T, dir string) (ms []int64, pids []int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pids = append(pids, pid)
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, err := strconv.ParseInt(line, 10, 64); err == nil {
				ms = append(ms, v)
			} // else the last line, being written
		}
	}
	slices.Sort(ms)
	return slices.Compact(ms), pids
}

// span returns the first and last millisecond of sorted stamps.
func stampSpan(ms []int64) (first, last int64) {
	if len(ms) == 0 {
		return 0, 0
	}
	return ms[0], ms[len(ms)-1]
}

// checkFenced fails the test if a millisecond was stamped under both
// leases, or if a stamp of the second holder is not after every stamp of
// the first.
func checkFenced(t *testing.T, dir1, dir2 string) {
	t.Helper()
	s1, _ := readStamps(t, dir1)
	s2, _ := readStamps(t, dir2)
	if len(s1) == 0 || len(s2) == 0 {
		t.Fatalf("%d stamps of the first holder, %d of the second: nothing to compare", len(s1), len(s2))
	}
	var both []int64
	for _, ms := range s2 {
		if _, found := slices.BinarySearch(s1, ms); found {
			both = append(both, ms)
		}
	}
	f1, l1 := stampSpan(s1)
	f2, l2 := stampSpan(s2)
	t.Logf("first holder: %d stamps, %s to %s; second: %d stamps, %s to %s", len(s1), cli.ExactMs(f1), cli.ExactMs(l1), len(s2), cli.ExactMs(f2), cli.ExactMs(l2))
	if len(both) > 0 {
		t.Errorf("%d milliseconds stamped by both holders, from %s to %s", len(both), cli.ExactMs(both[0]), cli.ExactMs(both[len(both)-1]))
	}
	if f2 <= l1 {
		t.Errorf("the second holder stamped %s, not after the first holder's last stamp %s", cli.ExactMs(f2), cli.ExactMs(l1))
	}
}

// runProc is a "nodeid run" process.
type runProc struct {
	cmd            *exec.Cmd
	stdout, stderr syncbuf.Buffer
	done           chan struct{}
}

// startHolder starts "nodeid run" with args and the clock of the test hook
// in clockFile, in a process group of its own.
func startHolder(t *testing.T, clockFile string, args ...string) *runProc {
	t.Helper()
	c, err := clitest.Self(context.Background(), append([]string{"run"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	h := &runProc{cmd: c, done: make(chan struct{})}
	c.Env = append(c.Env, EnvTestClockFile+"="+clockFile)
	c.Stdout, c.Stderr = &h.stdout, &h.stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.WaitDelay = time.Second // output held by processes that outlive it (that the warden failed to kill)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGCONT)
		_ = c.Process.Kill()
		<-h.done
	})
	return h
}

func (h *runProc) pid() int { return h.cmd.Process.Pid }

func (h *runProc) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// wait waits for the holder to exit and returns its exit code.
func (h *runProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(within):
		t.Fatalf("nodeid run (pid %d) did not exit within %s; stderr: %s", h.pid(), within, h.stderr.String())
	}
	t.Logf("nodeid run (pid %d) -> %d; stderr:\n%s", h.pid(), h.cmd.ProcessState.ExitCode(), h.stderr.String())
	return h.cmd.ProcessState.ExitCode()
}

// killStampers kills the stampers of dirs that are still alive: the
// warden's job, but a failing test must not leave them behind.
func killStampers(t *testing.T, dirs ...string) {
	for _, dir := range dirs {
		_, pids := readStamps(t, dir)
		for _, pid := range pids {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.Contains(b, []byte(stamperArg)) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// stampersAlive returns the stampers of dir that can still run.
func stampersAlive(t *testing.T, dir string) []int {
	var alive []int
	_, pids := readStamps(t, dir)
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil && p.alive() {
			alive = append(alive, pid)
		}
	}
	return alive
}

// fenceSetup is what every fencing scenario needs: a database, a clock
// file, and the stamp directories of two holders.
type fenceSetup struct {
	db               *sql.DB
	dsn              string
	clock            string
	dir1, dir2       string
	testBin          string
	stamper1, stamp2 []string // the command of each holder
}

func newFenceSetup(t *testing.T) *fenceSetup {
	t.Helper()
	db, dsn := pgtest.NewDB(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &fenceSetup{db: db, dsn: dsn, clock: filepath.Join(t.TempDir(), "clock-offset"),
		dir1: t.TempDir(), dir2: t.TempDir(), testBin: exe}
	s.setClock(t, 0)
	s.stamper1 = []string{exe, stamperArg, s.dir1}
	s.stamp2 = []string{exe, stamperArg, s.dir2}
	t.Cleanup(func() { killStampers(t, s.dir1, s.dir2) })
	return s
}

// setClock steps the wall clock of the test hook to the system's plus
// offset milliseconds.
func (s *fenceSetup) setClock(t *testing.T, offset int64) {
	t.Helper()
	tmp := s.clock + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(offset, 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.clock); err != nil {
		t.Fatal(err)
	}
}

// holderArgs are the arguments of "nodeid run" on node ID 0 with ttl.
func (s *fenceSetup) holderArgs(ttl string, wait bool, command ...string) []string {
	args := []string{"--dsn", s.dsn, "--create", "--range", "0-0", "--ttl", ttl}
	if wait {
		args = append(args, "--wait")
	}
	return append(append(args, "--"), command...)
}

// waitStamping waits until a stamper of dir has stamped for 300ms.
func (s *fenceSetup) waitStamping(t *testing.T, dir string, h *runProc) {
	t.Helper()
	testkit.Until(t, 60*time.Second, "stamping into "+dir, testkit.True(func() bool {
		if h.exited() {
			t.Fatalf("nodeid run exited before its command stamped; stderr: %s", h.stderr.String())
		}
		ms, _ := readStamps(t, dir)
		first, last := stampSpan(ms)
		return len(ms) > 0 && last-first >= 300
	}))
}

// takeOver starts a second holder with --wait, waits until it has stamped
// past the first holder's last stamp for 300ms, stops it with SIGTERM and
// checks the fencing.
func (s *fenceSetup) takeOver(t *testing.T, h2 *runProc, first *runProc) {
	t.Helper()
	testkit.Until(t, 90*time.Second, "the second holder stamping past the first's last stamp", testkit.True(func() bool {
		if h2.exited() {
			t.Fatalf("the second nodeid run exited; stderr: %s\nthe server's sessions:\n%s", h2.stderr.String(), s.serverSessions())
		}
		s1, _ := readStamps(t, s.dir1)
		s2, _ := readStamps(t, s.dir2)
		_, l1 := stampSpan(s1)
		f2, l2 := stampSpan(s2)
		return len(s2) > 0 && l2 > l1 && l2-f2 >= 300
	}))
	if first != nil && !first.exited() {
		_ = syscall.Kill(-first.pid(), syscall.SIGCONT)
	}
	if err := h2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h2.wait(t, 60*time.Second)
	if first != nil {
		first.wait(t, 60*time.Second)
	}
	checkFenced(t, s.dir1, s.dir2)
}

// serverSessions describes what the server's sessions are doing and
// waiting on, for a failure that may come from the server.
func (s *fenceSetup) serverSessions() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, `SELECT pid, coalesce(backend_type, ''), coalesce(state, ''),
		coalesce(wait_event_type || ':' || wait_event, ''), coalesce(now() - backend_start, '0'), left(coalesce(query, ''), 80)
		FROM pg_stat_activity ORDER BY backend_start`)
	if err != nil {
		return fmt.Sprintf("cannot read pg_stat_activity: %v", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var pid int
		var typ, state, wait, age, query string
		if err := rows.Scan(&pid, &typ, &state, &wait, &age, &query); err != nil {
			return fmt.Sprintf("cannot read pg_stat_activity: %v", err)
		}
		fmt.Fprintf(&b, "%d %s %s %s since %s: %s\n", pid, typ, state, wait, age, query)
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, "cannot read pg_stat_activity: %v\n", err)
	}
	return b.String()
}

// procState is the state of process pid ('T' when stopped), 0 if it
// cannot be read.
func procState(pid int) byte {
	p, _ := readProc(pid)
	return p.state
}

// ctrlZ starts the first holder, waits for its stamps, and stops its
// process group as Ctrl-Z does; it returns the holder and the stampers'
// pids once nodeid run and its command are both stopped.
func (s *fenceSetup) ctrlZ(t *testing.T) (*runProc, []int) {
	t.Helper()
	h1 := startHolder(t, s.clock, s.holderArgs(fenceTTL, false, s.stamper1...)...)
	s.waitStamping(t, s.dir1, h1)
	_, pids := readStamps(t, s.dir1)
	if err := syscall.Kill(-h1.pid(), syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "nodeid run and its command stopped", testkit.True(func() bool { return procState(pids[0]) == 'T' && procState(h1.pid()) == 'T' }))
	return h1, pids
}

// startWithGrandchild starts the first holder on a shell that runs the
// stamper in the background, and waits for its stamps.
func (s *fenceSetup) startWithGrandchild(t *testing.T) *runProc {
	t.Helper()
	command := append([]string{"sh", "-c", `"$@" & wait`, "sh"}, s.stamper1...)
	h1 := startHolder(t, s.clock, s.holderArgs(fenceTTL, false, command...)...)
	s.waitStamping(t, s.dir1, h1)
	return h1
}

// TestRunFenceSupervisorStopped: SIGSTOP of nodeid run for longer than the
// TTL does not extend the lease: its command is killed at the deadline,
// before a second holder can take the node ID over.
func TestRunFenceSupervisorStopped(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1 := startHolder(t, s.clock, s.holderArgs(fenceTTL, false, s.stamper1...)...)
	s.waitStamping(t, s.dir1, h1)
	if err := syscall.Kill(h1.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h2 := startHolder(t, s.clock, s.holderArgs(fenceTTL, true, s.stamp2...)...)
	s.takeOver(t, h2, h1)
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers of the first holder still alive: %v", alive)
	}
	if !strings.Contains(h1.stderr.String(), "sending SIGTERM to") && !strings.Contains(h1.stderr.String(), "sending SIGKILL to") {
		t.Errorf("the first holder does not say that its command was stopped: %s", h1.stderr.String())
	}
}

// TestRunFenceCtrlZ: SIGTSTP to the process group of nodeid run (Ctrl-Z)
// stops its command, then itself; stopped for longer than the TTL, the
// command is killed at the deadline, before a second holder can take the
// node ID over.
func TestRunFenceCtrlZ(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1, _ := s.ctrlZ(t)
	h2 := startHolder(t, s.clock, s.holderArgs(fenceTTL, true, s.stamp2...)...)
	s.takeOver(t, h2, h1)
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers of the first holder still alive: %v", alive)
	}
}

// TestRunFenceJobControl: Ctrl-Z then fg within the TTL: the command is
// stopped, then continued, and runs to its end under the same lease.
func TestRunFenceJobControl(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1, pids := s.ctrlZ(t)
	if err := syscall.Kill(-h1.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the command continued", testkit.True(func() bool { return procState(pids[0]) != 'T' && procState(h1.pid()) != 'T' }))
	if err := os.WriteFile(filepath.Join(s.dir1, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h1.wait(t, 60*time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if row := clitest.ReadLease(t, s.db, 0); !row.Free || row.Reason != "released" || row.Epoch != 1 {
		t.Errorf("after the run: %+v, want node 0 released at epoch 1", row)
	}
}

// TestRunFenceSupervisorKilled: SIGKILL of nodeid run, whose command left
// a grandchild stamping: the warden kills it at once.
func TestRunFenceSupervisorKilled(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1 := s.startWithGrandchild(t)
	if err := h1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h2 := startHolder(t, s.clock, s.holderArgs(fenceTTL, true, s.stamp2...)...)
	s.takeOver(t, h2, nil)
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers of the first holder still alive: %v", alive)
	}
}

// TestRunWardenKilled: SIGKILL of the warden itself: nodeid run, a
// subreaper, adopts the command's processes and kills them, and releases
// the node ID.
func TestRunWardenKilled(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1 := s.startWithGrandchild(t)
	warden := childOf(t, h1.pid(), "run-warden")
	if err := syscall.Kill(warden, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := h1.wait(t, 60*time.Second)
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers still alive after nodeid run exited: %v", alive)
	}
	if code == 0 {
		t.Errorf("exit code 0 after the warden was killed")
	}
	if row := clitest.ReadLease(t, s.db, 0); !row.Free || row.Reason != "released" {
		t.Errorf("after the run: %+v, want node 0 released", row)
	}
}

// TestRunWardenStopped: SIGSTOP of the warden: nodeid run kills the
// command's processes itself at the deadline, when the lease is lost for
// want of renewals.
func TestRunWardenStopped(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	s := newFenceSetup(t)
	p, err := pgtest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	command := append([]string{"sh", "-c", `"$@" & wait`, "sh"}, s.stamper1...)
	args := s.holderArgs(fenceTTL, false, command...)
	args[1] = pgtest.WithAddr(s.dsn, p.Addr())
	h1 := startHolder(t, s.clock, args...)
	s.waitStamping(t, s.dir1, h1)
	warden := childOf(t, h1.pid(), "run-warden")
	if err := syscall.Kill(warden, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p.Cut() // no more renewals: the deadline comes
	code := h1.wait(t, 60*time.Second)
	p.Restore()
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers still alive after nodeid run exited: %v", alive)
	}
	if code != cli.ExitLeaseLost {
		t.Errorf("exit code %d, want %d (the lease ended)", code, cli.ExitLeaseLost)
	}
	if !strings.Contains(h1.stderr.String(), "deadline has come") {
		t.Errorf("stderr does not say the deadline killed the command: %s", h1.stderr.String())
	}
}

// childOf returns the child of pid whose command line contains arg.
func childOf(t *testing.T, pid int, arg string) int {
	t.Helper()
	var found int
	testkit.Until(t, 10*time.Second, "the warden process", testkit.True(func() bool {
		procs, err := readProcessTable()
		if err != nil {
			t.Fatal(err)
		}
		for c, p := range procs {
			if p.ppid != pid {
				continue
			}
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline"); err == nil && bytes.Contains(b, []byte(arg)) {
				found = c
				return true
			}
		}
		return false
	}))
	return found
}

// TestRunFenceBackwardStep: the wall clock steps back while the command
// runs, and the command exits normally: the horizon recorded at release
// still covers the stamps made before the step, and the next holder waits
// past them.
func TestRunFenceBackwardStep(t *testing.T) {
	t.Parallel()
	s := newFenceSetup(t)
	h1 := startHolder(t, s.clock, s.holderArgs("10s", false, s.stamper1...)...)
	s.waitStamping(t, s.dir1, h1)
	// Far enough back that the next holder, however slow to start, would
	// stamp again what the first stamped before the step, were it not
	// made to wait.
	s.setClock(t, -10_000)
	testkit.Until(t, 30*time.Second, "the stamper seeing the step", testkit.True(func() bool {
		_, pids := readStamps(t, s.dir1)
		b, _ := os.ReadFile(filepath.Join(s.dir1, strconv.Itoa(pids[0])))
		lines := strings.Fields(string(b))
		if len(lines) < 2 {
			return false
		}
		last, _ := strconv.ParseInt(lines[len(lines)-2], 10, 64) // the last may be incomplete
		ms, _ := readStamps(t, s.dir1)
		return last < ms[len(ms)-1]-1000
	}))
	if err := os.WriteFile(filepath.Join(s.dir1, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h1.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	s1, _ := readStamps(t, s.dir1)
	var horizon int64
	if err := s.db.QueryRowContext(clitest.Ctx(t), `SELECT horizon_ms FROM snowflake_nodes_history WHERE node_id = 0 AND epoch = 1`).Scan(&horizon); err != nil {
		t.Fatal(err)
	}
	if _, l1 := stampSpan(s1); horizon < l1 {
		t.Errorf("horizon recorded at release %s, before the last stamp %s", cli.ExactMs(horizon), cli.ExactMs(l1))
	}
	h2 := startHolder(t, s.clock, s.holderArgs("10s", true, s.stamp2...)...)
	s.takeOver(t, h2, nil)
}

// TestRunFenceForwardStep: the wall clock steps forward to just short of
// the horizon the lease recorded, so that it would pass it before the next
// renewal, and nodeid run is then killed: the warden kills the command as
// the clock nears the horizon, so that nothing is stamped past the horizon
// the lapsed lease leaves. The next holder, on a clock set back, stamps
// only after it. The warden kills the command TTL/20 before the horizon,
// 500ms here, a margin that the scheduling of a loaded host does not eat.
func TestRunFenceForwardStep(t *testing.T) {
	s := newFenceSetup(t)
	h1 := startHolder(t, s.clock, s.holderArgs("10s", false, s.stamper1...)...)
	s.waitStamping(t, s.dir1, h1)
	horizon := func() int64 {
		var h int64
		if err := s.db.QueryRowContext(clitest.Ctx(t), `SELECT horizon_ms FROM snowflake_nodes WHERE node_id = 0`).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Step right after a renewal, so that the next one is TTL/3 away.
	h0 := horizon()
	var h int64
	testkit.Until(t, 60*time.Second, "a renewal", testkit.True(func() bool {
		if h1.exited() {
			t.Fatalf("the first nodeid run exited; stderr: %s", h1.stderr.String())
		}
		h = horizon()
		return h > h0
	}))
	s.setClock(t, h-time.Now().UnixMilli()-600)
	// Unfenced, the command would stamp past the horizon 600ms after the
	// step, and 1.5s past it a good second before the next renewal; by
	// then a second holder, started when the lease lapses, stamps again.
	testkit.Until(t, 30*time.Second, "stamps 1.5s past the horizon, or the command killed", testkit.True(func() bool {
		ms, _ := readStamps(t, s.dir1)
		_, last := stampSpan(ms)
		return last > horizon()+1500 || len(stampersAlive(t, s.dir1)) == 0
	}))
	if err := h1.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	h1.wait(t, 60*time.Second)
	testkit.Until(t, 30*time.Second, "the first holder's stampers gone", testkit.True(func() bool { return len(stampersAlive(t, s.dir1)) == 0 }))
	// Released or lapsing, the node ID keeps a horizon past every stamp.
	s1, _ := readStamps(t, s.dir1)
	if _, l1 := stampSpan(s1); horizon() < l1 {
		t.Errorf("the node ID's horizon %s is before the first holder's last stamp %s", cli.ExactMs(horizon()), cli.ExactMs(l1))
	}
	s.setClock(t, 0) // the clock is set right
	h2 := startHolder(t, s.clock, s.holderArgs("10s", true, s.stamp2...)...)
	s.takeOver(t, h2, nil)
}

// TestRunFenceStartFailure: a command that cannot start leaves the node
// ID's horizon where it was, so that the next run starts at once.
func TestRunFenceStartFailure(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "run", "--dsn", dsn, "--create", "--ttl", "10s", "--", "true")
	before := clitest.ReadLease(t, db, 0)
	r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "10s", "--", "/no/such/binary")
	clitest.WantExit(t, r, cli.ExitFailure, "cannot start /no/such/binary")
	after := clitest.ReadLease(t, db, 0)
	if !after.Free || after.Epoch != before.Epoch+1 || after.Horizon != before.Horizon || after.HistoryHorizon != before.Horizon {
		t.Errorf("after the failed start: %+v; want node 0 free at epoch %d with the horizon %d it had", after, before.Epoch+1, before.Horizon)
	}
	r = harness.Run(t, "run", "--dsn", dsn, "--ttl", "10s", "--", "sh", "-c", `echo "$NODEID_HORIZON_MS"`)
	if want := strconv.FormatInt(before.Horizon, 10) + "\n"; r.Code != 0 || r.Stdout != want {
		t.Errorf("the run after the failed start: %+v; want exit 0 and the horizon %q", r, want)
	}
}

// TestRunSecondLineSparesOtherWork: two nodeid runs in one process (as
// these tests run it), B started first: when B's warden dies, B's
// supervisor kills its command's processes, and no process of A's, though
// A's were started after B's warden.
func TestRunSecondLineSparesOtherWork(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	script := func(name string) string {
		return clitest.Script(t, `echo started > `+dir+`/`+name+`
while [ ! -e `+dir+`/stop ]; do sleep 0.05; done
`)
	}
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "10s", "--", script("b"))
	waitFile(t, filepath.Join(dir, "b"), b)
	bWarden := childOf(t, os.Getpid(), "run-warden")
	a := harness.Start(t, "run", "--dsn", dsn, "--ttl", "10s", "--", script("a"))
	waitFile(t, filepath.Join(dir, "a"), a)
	if err := syscall.Kill(bWarden, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := b.Wait(t, 60*time.Second); r.Code == 0 {
		t.Errorf("B: exit code 0 after its warden was killed: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := a.Wait(t, 60*time.Second); r.Code != 0 {
		t.Errorf("A, whose command ran on while B's warden died: %+v; want exit 0", r)
	}
}
