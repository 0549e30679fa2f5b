//go:build linux

package run

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
)

// The freeze tests stop the whole tree of a first "nodeid run" (run, its
// warden and its command, as docker pause, a cgroup freezer, a checkpoint
// or a suspended VM do) until a second "nodeid run --wait" has taken the
// node ID over and the first lease's deadline has passed on the monotonic
// clock, then continue the command first and its warden only once the
// command has acted: the order in which the warden can do nothing for it.
// The first lease is short (freezeTTL) so that the takeover comes soon;
// the second, which has only to stamp, is long (fenceTTL).
const freezeTTL = 3 * time.Second

// coopStamperArg as the first argument makes the test binary a cooperative
// stamper.
const coopStamperArg = "nodeid-test-coop-stamper"

func init() {
	if len(os.Args) == 3 && os.Args[1] == coopStamperArg {
		os.Exit(coopStamper(os.Args[2]))
	}
}

// coopStamper is the stamper of run_fence_test.go made to follow the whole
// of docs/run.md's contract: before each stamp it re-reads the lease file,
// and stamps nothing once the file says the lease is not held, nor a
// millisecond after the file's horizon_ceiling_ms: the check is made on
// the stamp itself, after the clock is read, so that no pause between the
// check and the stamp can let a stamp past it. Each refusal is appended
// to DIR/refused, as "ceiling" or "held".
func coopStamper(dir string) int {
	path := os.Getenv(EnvLeaseFile)
	return stampLoop(dir, func() (bool, int64) { return readLease(path) })
}

// readLease reads the lease file at path: held is false if it cannot be
// read or parsed (run removes it when it exits).
func readLease(path string) (held bool, ceiling int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, 0
	}
	ceiling = -1
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "held":
			held = v == "true"
		case "horizon_ceiling_ms":
			if c, err := strconv.ParseInt(v, 10, 64); err == nil {
				ceiling = c
			}
		}
	}
	return held && ceiling >= 0, ceiling
}

// leaseFileOf returns the lease file named in the environment of process
// pid.
func leaseFileOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, EnvLeaseFile+"="); ok {
			return v
		}
	}
	t.Fatalf("process %d has no %s", pid, EnvLeaseFile)
	return ""
}

// bootNow returns CLOCK_BOOTTIME in nanoseconds, the clock of the lease
// file's deadline_boottime_ns.
func bootNow(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// frozenTree is the first holder, frozen whole.
type frozenTree struct {
	h1                *runProc
	warden, command   int
	lease             leaseFile // as it was when the tree froze
	deadline, ceiling int64     // the lease file's deadline_boottime_ns and horizon_ceiling_ms
	frozeAt           int64     // CLOCK_BOOTTIME ns
}

// freeze starts the first holder on command, whose stamps go to dir1,
// waits for its stamps, and stops its whole tree: the command and its
// warden (one process group), then nodeid run.
func (s *fenceSetup) freeze(t *testing.T, command ...string) *frozenTree {
	t.Helper()
	h1 := startHolder(t, s.clock, s.holderArgs(freezeTTL.String(), false, command...)...)
	s.waitStamping(t, s.dir1, h1)
	f := &frozenTree{h1: h1, warden: childOf(t, h1.pid(), "run-warden")}
	_, pids := readStamps(t, s.dir1)
	if len(pids) != 1 {
		t.Fatalf("stampers %v, want one", pids)
	}
	f.command = pids[0]
	if err := syscall.Kill(-f.warden, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(h1.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	f.frozeAt = bootNow(t)
	testkit.Until(t, 10*time.Second, "nodeid run, its warden and its command stopped", testkit.True(func() bool {
		return procState(f.command) == 'T' && procState(f.warden) == 'T' && procState(h1.pid()) == 'T'
	}))
	// Frozen, run rewrites the lease file no more.
	f.lease = readLeaseFile(t, leaseFileOf(t, f.command))
	f.deadline, f.ceiling = f.lease.int(t, "deadline_boottime_ns"), f.lease.int(t, "horizon_ceiling_ms")
	return f
}

// takenOver starts the second holder and waits until it stamps, the first
// lease's deadline has passed on CLOCK_BOOTTIME, and the wall clock of the
// test hook is past the first lease's horizon ceiling: whatever the first
// command stamps from then on is past its ceiling. Every claim and renewal
// of the first lease started before the freeze, so its deadline, the
// warden's included (which a renewal's message, unread, may have moved
// past the file's), falls less than a TTL after the freeze.
func (s *fenceSetup) takenOver(t *testing.T, f *frozenTree) *runProc {
	t.Helper()
	h2 := startHolder(t, s.clock, s.holderArgs(fenceTTL, true, s.stamp2...)...)
	clock, err := testWallClock(func(k string) string {
		if k == EnvTestClockFile {
			return s.clock
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 90*time.Second, "the second holder stamping past the first's deadline and ceiling", testkit.True(func() bool {
		if h2.exited() {
			t.Fatalf("the second nodeid run exited; stderr: %s", h2.stderr.String())
		}
		s2, _ := readStamps(t, s.dir2)
		return len(s2) >= 20 && bootNow(t) > max(f.deadline, f.frozeAt+int64(freezeTTL)) && clock.NowMs() > f.ceiling
	}))
	if row := clitest.ReadLease(t, s.db, 0); row.Epoch != 2 {
		t.Fatalf("node 0 after the takeover: %+v, want epoch 2", row)
	}
	return h2
}

// cont continues pid and waits until it is no longer stopped.
func cont(t *testing.T, pid int, what string) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, what+" continued", testkit.True(func() bool { return procState(pid) != 'T' }))
}

// stampsAfter returns the stamps of sorted ms after ceiling.
func stampsAfter(ms []int64, ceiling int64) []int64 {
	i, _ := slices.BinarySearch(ms, ceiling+1)
	return ms[i:]
}

// bothStamped returns the milliseconds stamped into both dirs.
func bothStamped(t *testing.T, dir1, dir2 string) []int64 {
	s1, _ := readStamps(t, dir1)
	s2, _ := readStamps(t, dir2)
	var both []int64
	for _, ms := range s2 {
		if _, found := slices.BinarySearch(s1, ms); found {
			both = append(both, ms)
		}
	}
	return both
}

// TestRunFreezeCooperative: a command that re-reads the lease file before
// each stamp stamps nothing past its lease's horizon ceiling after a
// freeze of its whole tree held past the lease's deadline, though it runs
// on after the thaw while its warden stays stopped, and the lease file
// still says the lease is held.
func TestRunFreezeCooperative(t *testing.T) {
	s := newFenceSetup(t)
	f := s.freeze(t, s.testBin, coopStamperArg, s.dir1)
	if f.lease["held"] != "true" {
		t.Fatalf("the lease file of the frozen holder: %v, want held=true", f.lease)
	}
	h2 := s.takenOver(t, f)
	frozen := time.Duration(bootNow(t) - f.frozeAt)

	// The command first, on its own: it must refuse on the ceiling, since
	// the file, which run could not rewrite, still says held=true.
	cont(t, f.command, "the command")
	refusals := func() int {
		b, _ := os.ReadFile(filepath.Join(s.dir1, "refused"))
		return strings.Count(string(b), "ceiling\n")
	}
	// 100 turns of its loop, refused or not, with the warden stopped.
	testkit.Until(t, 30*time.Second, "the command refusing or stamping 100 times past its ceiling", testkit.True(func() bool {
		s1, _ := readStamps(t, s.dir1)
		return refusals()+len(stampsAfter(s1, f.ceiling)) >= 100
	}))
	n := refusals()
	cont(t, f.warden, "the warden")
	cont(t, f.h1.pid(), "nodeid run")
	if code := f.h1.wait(t, 60*time.Second); code != cli.ExitLeaseLost {
		t.Errorf("the first nodeid run: exit code %d, want %d (the lease ended)", code, cli.ExitLeaseLost)
	}
	if alive := stampersAlive(t, s.dir1); len(alive) > 0 {
		t.Errorf("stampers of the first holder still alive: %v", alive)
	}
	s1, _ := readStamps(t, s.dir1)
	after := stampsAfter(s1, f.ceiling)
	t.Logf("frozen for %s (deadline passed %s before the thaw); the command refused %d times before its warden was continued; %d stamps past the ceiling %s",
		frozen.Round(time.Millisecond), time.Duration(bootNow(t)-f.deadline).Round(time.Millisecond), n, len(after), cli.ExactMs(f.ceiling))
	if len(after) > 0 {
		t.Errorf("%d stamps past the lease's horizon ceiling %s, from %s", len(after), cli.ExactMs(f.ceiling), cli.ExactMs(after[0]))
	}
	if err := h2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h2.wait(t, 60*time.Second)
	checkFenced(t, s.dir1, s.dir2)
}

// TestRunFreezeUncooperative: a command that keeps only the contract's two
// rules (stamp after NODEID_HORIZON_MS, stop on SIGTERM) and is thawed
// before its warden stamps past its lease's horizon ceiling, milliseconds
// that the next holder stamps too: run cannot bound it while its warden is
// not scheduled (docs/run.md). Once continued, the warden kills it at once
// for the deadline, before nodeid run itself is continued.
func TestRunFreezeUncooperative(t *testing.T) {
	s := newFenceSetup(t)
	f := s.freeze(t, s.stamper1...)
	h2 := s.takenOver(t, f)
	frozen := time.Duration(bootNow(t) - f.frozeAt)

	cont(t, f.command, "the command")
	// The hazard: without its warden the command stamps what the second
	// holder stamps.
	testkit.Until(t, 30*time.Second, "a millisecond stamped by both holders", testkit.True(func() bool {
		return len(bothStamped(t, s.dir1, s.dir2)) > 0
	}))
	cont(t, f.warden, "the warden")
	testkit.Until(t, 30*time.Second, "the warden killing the command, nodeid run still stopped", testkit.True(func() bool {
		if procState(f.h1.pid()) != 'T' {
			t.Fatalf("nodeid run is no longer stopped")
		}
		return len(stampersAlive(t, s.dir1)) == 0
	}))
	cont(t, f.h1.pid(), "nodeid run")
	if code := f.h1.wait(t, 60*time.Second); code != cli.ExitLeaseLost {
		t.Errorf("the first nodeid run: exit code %d, want %d (the lease ended)", code, cli.ExitLeaseLost)
	}
	if !strings.Contains(f.h1.stderr.String(), "deadline has come") {
		t.Errorf("the first nodeid run does not say that the deadline killed its command: %s", f.h1.stderr.String())
	}
	if err := h2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h2.wait(t, 60*time.Second)
	s1, _ := readStamps(t, s.dir1)
	both := bothStamped(t, s.dir1, s.dir2)
	t.Logf("frozen for %s; %d stamps past the ceiling %s, %d milliseconds stamped by both holders", frozen.Round(time.Millisecond),
		len(stampsAfter(s1, f.ceiling)), cli.ExactMs(f.ceiling), len(both))
}
