//go:build linux

package run

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// waitFile waits until path exists and returns its content.
func waitFile(t *testing.T, path string, b *clitest.Background) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return string(data)
		}
		select {
		case <-b.Done():
			t.Fatalf("the command ended before %s appeared: code %d, stderr %s", path, b.Code(), b.Stderr())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not appear", path)
	return ""
}

// TestRunEnvAndExitCode: the command sees the lease in its environment,
// its exit code becomes nodeid's, and the node ID is released with the
// exit time as its exact horizon.
func TestRunEnvAndExitCode(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	child := clitest.Script(t, `echo "node=$NODEID_NODE epoch=$NODEID_EPOCH owner=$NODEID_OWNER grace=$NODEID_DEADLINE_GRACE horizon=$NODEID_HORIZON_MS"
exit 42
`)
	before := time.Now().UnixMilli()
	r := harness.Run(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--owner", "runner-1", "--", child)
	after := time.Now().UnixMilli()
	if r.Code != 42 {
		t.Fatalf("exit code %d, want the command's 42; stderr %s", r.Code, r.Stderr)
	}
	if r.Stdout != "node=0 epoch=1 owner=runner-1 grace=500 horizon=0\n" {
		t.Errorf("the command's environment: %q", r.Stdout)
	}
	row := clitest.ReadLease(t, db, 0)
	if !row.Free || row.Owner != "" || row.Epoch != 1 || row.Reason != "released" {
		t.Errorf("after the command exited: %+v; want node 0 released at epoch 1", row)
	}
	if row.Horizon < before || row.Horizon > after || row.HistoryHorizon != row.Horizon {
		t.Errorf("horizon %d (history %d), want the exit time, within [%d, %d]", row.Horizon, row.HistoryHorizon, before, after)
	}

	// The next run gets the next epoch, the horizon, and its own grace.
	r = harness.Run(t, "run", "--dsn", dsn, "--ttl", "6s", "--grace", "1s", "--owner", "runner-2", "--", child)
	if want := "node=0 epoch=2 owner=runner-2 grace=1000 horizon=" + strconv.FormatInt(row.Horizon, 10) + "\n"; r.Code != 42 || r.Stdout != want {
		t.Errorf("second run: %+v; want stdout %q", r, want)
	}
}

// TestRunSignalExitCode: a command killed by signal N makes nodeid exit
// with 128+N; a command that succeeds, with 0.
func TestRunSignalExitCode(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	if r := harness.Run(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", "sh", "-c", "kill -KILL $$"); r.Code != 128+9 {
		t.Errorf("exit code %d, want 137", r.Code)
	}
	if r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "true"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("run true: %+v", r)
	}
	if row := clitest.ReadLease(t, db, 0); !row.Free || row.Epoch != 2 {
		t.Errorf("after two runs: %+v", row)
	}
}

// TestRunLeaseLost: evicting the lease makes nodeid send SIGTERM to the
// command, and exit with ExitLeaseLost whatever the command's own exit
// code, 0 included: a service manager that restarts on failure must see
// the stop as one.
func TestRunLeaseLost(t *testing.T) {
	for _, code := range []int{7, 0} {
		t.Run(fmt.Sprintf("command exits %d", code), func(t *testing.T) {
			db, dsn := pgtest.NewDB(t)
			dir := t.TempDir()
			// The child's stderr, where a shell may report its killed
			// sleep, is not nodeid's, whose lines are checked below.
			child := clitest.Script(t, `exec 2>/dev/null
trap 'echo "got TERM"; exit `+strconv.Itoa(code)+`' TERM
echo "$NODEID_NODE $NODEID_EPOCH" > `+dir+`/started
while :; do sleep 0.05; done
`)
			b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", child)
			fields := strings.Fields(waitFile(t, filepath.Join(dir, "started"), b))
			if len(fields) != 2 {
				t.Fatalf("started: %q", fields)
			}
			harness.Must(t, "evict", fields[0], "--epoch", fields[1], "--yes", "--dsn", dsn)
			r := b.Wait(t, 30*time.Second)
			if !strings.Contains(r.Stdout, "got TERM") {
				t.Errorf("the command did not get SIGTERM: %+v", r)
			}
			if r.Code != cli.ExitLeaseLost {
				t.Errorf("exit code %d, want %d (the lease ended); stderr %s", r.Code, cli.ExitLeaseLost, r.Stderr)
			}
			for _, want := range []string{
				"lease evicted by an operator: sending SIGTERM to " + child,
				child + " was stopped because the lease of node ID 0 ended (it exited with code " + strconv.Itoa(code) + ")",
			} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr does not say %q: %s", want, r.Stderr)
				}
			}
			checkLineFormat(t, r.Stderr)
			if row := clitest.ReadLease(t, db, 0); row.Owner != "" || row.Reason != "evicted" || row.Epoch != 1 {
				t.Errorf("after the eviction: %+v", row)
			}
		})
	}
}

// TestRunCommandExitedBeforeTheLeaseEnded: a command that finished its
// work and exited 0 by itself keeps its code when the lease ends (an
// eviction) after that but before run has learnt that every process of
// the command is gone (here its warden is held stopped, to widen a window
// that is otherwise the warden's reaping and last /proc scan): run does
// not signal it, and exits 0, as docs/run.md gives 5 only when run stopped
// the command. Before, run sent SIGTERM to a command that no longer
// existed and exited 5, "stopped because the lease ended (it exited with
// code 0)": a finished batch job read as a failure, run again by a service
// manager that restarts on failure.
func TestRunCommandExitedBeforeTheLeaseEnded(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	child := clitest.Script(t, `exec 2>/dev/null
echo $PPID > `+dir+`/warden.tmp && mv `+dir+`/warden.tmp `+dir+`/warden
echo $$ > `+dir+`/pid.tmp && mv `+dir+`/pid.tmp `+dir+`/pid
echo "$NODEID_NODE $NODEID_EPOCH" > `+dir+`/started
while [ ! -e `+dir+`/go ]; do sleep 0.01; done
exit 0
`)
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "6s", "--", child)
	fields := strings.Fields(waitFile(t, filepath.Join(dir, "started"), b))
	if len(fields) != 2 {
		t.Fatalf("started: %q", fields)
	}
	warden, err := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(dir, "warden"), b)))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(dir, "pid"), b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(warden, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(warden, syscall.SIGCONT)
		}
	}()
	// The command is done: it exits 0, a zombie that the stopped warden
	// cannot reap.
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "the command exited", func() error {
		p, err := readProc(pid)
		if err != nil {
			return testkit.Stop(fmt.Errorf("the command is gone, reaped by a stopped warden? %w", err))
		}
		if p.alive() {
			return fmt.Errorf("process %d is in state %c", pid, p.state)
		}
		return nil
	})
	// Then the lease ends; run learns it at its next renewal (TTL/3), and
	// asks the stopped warden to stop the command.
	harness.Must(t, "evict", fields[0], "--epoch", fields[1], "--yes", "--dsn", dsn)
	testkit.Until(t, 30*time.Second, "run asked to stop the command", func() error {
		if strings.Contains(b.Stderr(), "sending SIGTERM") {
			return nil
		}
		select {
		case <-b.Done():
			return testkit.Stop(fmt.Errorf("run exited %d: %s", b.Code(), b.Stderr()))
		default:
			return fmt.Errorf("stderr: %s", b.Stderr())
		}
	})
	_ = syscall.Kill(warden, syscall.SIGCONT)
	stopped = false
	r := b.Wait(t, 30*time.Second)
	if r.Code != 0 {
		t.Errorf("the command exited 0 by itself before the lease ended: run exited %d, want 0; stderr:\n%s", r.Code, r.Stderr)
	}
	if want := child + " had exited by itself (code 0) before the lease's end reached it: it was not signalled"; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
	}
	checkLineFormat(t, r.Stderr)
}

// TestRunDeadline: when renewals fail, the command gets SIGTERM a grace
// before the lease's local deadline, and SIGKILL at the deadline if it
// ignores SIGTERM.
func TestRunDeadline(t *testing.T) {
	srv := pgtest.Shared(t)
	db, dsn := pgtest.NewDB(t)
	p, err := pgtest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	// The child's stderr, which a shell may use to report a killed
	// child, is not nodeid's, whose lines are checked below.
	child := clitest.Script(t, `exec 2>/dev/null
trap '' TERM
echo started > `+dir+`/started
while :; do sleep 0.05; done
`)
	b := harness.Start(t, "run", "--dsn", pgtest.WithAddr(dsn, p.Addr()), "--create", "--ttl", "3s", "--", child)
	waitFile(t, filepath.Join(dir, "started"), b)
	p.Cut()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.Stderr(), "SIGKILL") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.Restore()
	r := b.Wait(t, 30*time.Second)
	if r.Code != cli.ExitLeaseLost {
		t.Errorf("exit code %d, want %d (the lease ended)", r.Code, cli.ExitLeaseLost)
	}
	for _, want := range []string{"was not renewed", "sending SIGTERM to " + child, "sending SIGKILL to " + child, "renewals failing", "it exited with code 137"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr does not say %q: %s", want, r.Stderr)
		}
	}
	checkLineFormat(t, r.Stderr)
	// Released, or, if the release reached the database after the expiry,
	// lapsed: either way no longer held, and by no one else.
	var held bool
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT expires_at >= now() FROM snowflake_nodes WHERE node_id = 0`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if row := clitest.ReadLease(t, db, 0); row.Epoch != 1 || held {
		t.Errorf("after the kill: %+v, held %v", row, held)
	}
}

// TestRunForwardsSignals: SIGINT sent to nodeid run reaches the command.
func TestRunForwardsSignals(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	child := clitest.Script(t, `trap 'echo "got INT"; exit 9' INT
echo started > `+dir+`/started
while :; do sleep 0.05; done
`)
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", child)
	waitFile(t, filepath.Join(dir, "started"), b)
	// The run command has registered for SIGINT before starting the child.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if r := b.Wait(t, 30*time.Second); r.Code != 9 || !strings.Contains(r.Stdout, "got INT") {
		t.Errorf("SIGINT not forwarded: %+v", r)
	}
}

// TestRunNoNodeID: with every node ID of the range held, run exits with 3
// and does not start the command.
func TestRunNoNodeID(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--range", "0-0")
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'other', epoch = 1, expires_at = now() + interval '1h' WHERE node_id = 0`)
	marker := filepath.Join(t.TempDir(), "ran")
	r := harness.Run(t, "run", "--dsn", dsn, "--range", "0-0", "--", "touch", marker)
	clitest.WantExit(t, r, cli.ExitNoNodeID, "no node ID available")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a lease")
	}
}

func TestRunBadInput(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	clitest.WantExit(t, harness.Run(t, "run"), cli.ExitUsage, "a command to run")
	clitest.WantExit(t, harness.Run(t, "run", "--ttl", "1s", "--", "true"), cli.ExitUsage, "--ttl 1s: it must be 3s to 24h0m0s")
	clitest.WantExit(t, harness.Run(t, "run", "--ttl", "3s", "--grace", "2s", "--", "true"), cli.ExitUsage, "--grace 2s", "half the TTL")
	clitest.WantExit(t, harness.Run(t, "run", "--grace", "0s", "--", "true"), cli.ExitUsage, "--grace")
	clitest.WantExit(t, harness.Run(t, "run", "--ttl", "forever", "--", "true"), cli.ExitUsage, "--ttl")
	clitest.WantExit(t, harness.Run(t, "run", "--range", "3-1", "--", "true"), cli.ExitUsage, "--range")
	clitest.WantExit(t, harness.Run(t, "run", "--range", "0-4095", "--", "true"), cli.ExitUsage, "node range 0-4095", "above 1023", "--node-bits 10")
	clitest.WantExit(t, harness.Run(t, "run", "--node-bits", "21", "--dsn", dsn, "--", "true"), cli.ExitUsage, "node bits 21 is outside 1 to 20")
	clitest.WantExit(t, harness.Run(t, "run", "--layout", "js53", "--range", "0-1024", "--", "true"), cli.ExitUsage, "node range 0-1024", "--node-bits 10")
	// A table of more than 65,536 rows is created only when confirmed.
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--table", "big", "--create", "--range", "0-99999", "--node-bits", "17", "--", "true"), cli.ExitUsage,
		"--range 0-99999 with --create: a missing table would be created with 100,000 rows, and more than 65,536 are created only when confirmed: add --yes")
	var big bool
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT to_regclass('big') IS NOT NULL`).Scan(&big); err != nil || big {
		t.Errorf("run --create without --yes made the table (%v)", err)
	}
	clitest.WantExit(t, harness.Run(t, "run", "--layout", "sonyflake", "--dsn", dsn, "--", "true"), cli.ExitUsage, `--layout "sonyflake": the layouts are bwmarrin and js53`)
	clitest.WantExit(t, harness.Run(t, "run", "--owner", "bad\nowner", "--dsn", dsn, "--", "true"), cli.ExitUsage, "control character")
	r := harness.Run(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", "/no/such/command")
	clitest.WantExit(t, r, cli.ExitFailure, "cannot start /no/such/command")
	if row := clitest.ReadLease(t, db, 0); !row.Free || row.Reason != "released" {
		t.Errorf("the lease of a command that could not start: %+v", row)
	}
}

// checkLineFormat fails the test unless every line of stderr, the
// library's log lines included, is a "nodeid: " line.
func checkLineFormat(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(line, "nodeid: ") || strings.Contains(line, "level=") {
			t.Errorf("a line of stderr is not in the format of the others: %q", line)
		}
	}
}

// holdNode0 makes node 0 of a one-node table held by another owner for an
// hour.
func holdNode0(t *testing.T, db *sql.DB, dsn string) {
	t.Helper()
	harness.Must(t, "init", "--dsn", dsn, "--range", "0-0")
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'other', epoch = 1, expires_at = now() + interval '1h' WHERE node_id = 0`)
}

// TestRunWaitTimeout: run --wait says what it waits for, and
// --wait-timeout (or, for one release, --timeout) gives up with exit code 3
// and the reason, without running the command.
func TestRunWaitTimeout(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	holdNode0(t, db, dsn)
	marker := filepath.Join(t.TempDir(), "ran")
	r := harness.Run(t, "run", "--dsn", dsn, "--range", "0-0", "--wait", "--timeout", "1s", "--", "touch", marker)
	firstRun := r
	if r.Code != cli.ExitNoNodeID {
		t.Errorf("exit code %d, want %d", r.Code, cli.ExitNoNodeID)
	}
	for _, want := range []string{"all of node IDs 0-0 are held; waiting for one to free up (--wait, for at most 1s)", "gave up after --timeout 1s"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr does not say %q: %s", want, r.Stderr)
		}
	}
	checkLineFormat(t, r.Stderr)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a lease")
	}
	// --wait-timeout bounds the wait alone, and the old name with --wait
	// still does, for one release, saying so; the global --timeout is not
	// run's (it keeps its own timing), so it is no error.
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--wait-timeout", "1s", "--", "true"), cli.ExitUsage, "--wait-timeout 1s: it bounds --wait, which is not given")
	r = harness.Run(t, "run", "--dsn", dsn, "--range", "0-0", "--wait", "--wait-timeout", "1s", "--", "touch", marker)
	if r.Code != cli.ExitNoNodeID || !strings.Contains(r.Stderr, "gave up after --wait-timeout 1s") || strings.Contains(r.Stderr, "this release only") {
		t.Errorf("run --wait --wait-timeout 1s: %+v", r)
	}
	if !strings.Contains(firstRun.Stderr, "--timeout with --wait is named --wait-timeout now") {
		t.Errorf("run --wait --timeout does not say its new name: %s", firstRun.Stderr)
	}
	if r := harness.Run(t, "run", "--dsn", dsn, "--timeout", "2s", "--", "true"); r.Code != cli.ExitNoNodeID || strings.Contains(r.Stderr, "--timeout") {
		t.Errorf("run --timeout 2s -- true, its only node ID held: %+v, want exit 3 (no node ID), and no word of --timeout", r)
	}
}

// TestRunWaitTimeoutMidClaim: --wait-timeout passing while a claim hangs (the
// database went silent) still gives up with exit code 3 and the reason.
func TestRunWaitTimeoutMidClaim(t *testing.T) {
	srv := pgtest.Shared(t)
	db, dsn := pgtest.NewDB(t)
	holdNode0(t, db, dsn)
	p, err := pgtest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b := harness.Start(t, "run", "--dsn", pgtest.WithAddr(dsn, p.Addr()), "--range", "0-0", "--wait", "--wait-timeout", "3s", "--", "true")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.Stderr(), "waiting for one to free up"); {
		if time.Now().After(deadline) {
			t.Fatalf("run --wait did not start waiting: %s", b.Stderr())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Blackhole()
	r := b.Wait(t, 60*time.Second)
	p.Restore()
	if r.Code != cli.ExitNoNodeID || !strings.Contains(r.Stderr, "gave up after --wait-timeout 3s") {
		t.Errorf("--wait-timeout during a silent claim: %+v; want exit code 3 and the reason", r)
	}
}

// TestRunWaitInterrupted: while waiting, run --wait says again that it is
// still waiting, and Ctrl-C (SIGINT) ends it with exit code 130.
func TestRunWaitInterrupted(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	holdNode0(t, db, dsn)
	defer func(d time.Duration) { waitReportEvery = d }(waitReportEvery)
	waitReportEvery = 20 * time.Millisecond
	b := harness.Start(t, "run", "--dsn", dsn, "--range", "0-0", "--wait", "--", "true")
	for deadline := time.Now().Add(30 * time.Second); strings.Count(b.Stderr(), "still waiting for a node ID of 0-0") < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("run --wait did not say twice that it still waits: %s", b.Stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := b.Wait(t, 30*time.Second)
	if r.Code != 130 || !strings.Contains(r.Stderr, "interrupted while waiting for a node ID") {
		t.Errorf("after SIGINT: %+v; want exit code 130", r)
	}
	checkLineFormat(t, r.Stderr)
}

// TestRunEnvSecrets: the command does not get the database's password
// through DATABASE_URL or PGPASSWORD unless --keep-db-env is given, and
// does get the lease's variables and file.
func TestRunEnvSecrets(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	t.Setenv(cli.EnvDatabaseURL, "postgres://app:s3cret@db.invalid/app")
	t.Setenv("PGPASSWORD", "s3cret")
	show := `env | grep -E '^(DATABASE_URL|PGPASSWORD|NODEID_)' | sort; cat "$NODEID_LEASE_FILE"`
	r := harness.Run(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", "sh", "-c", show)
	if r.Code != 0 || strings.Contains(r.Stdout, "s3cret") || strings.Contains(r.Stdout, "DATABASE_URL") || strings.Contains(r.Stdout, "PGPASSWORD") {
		t.Errorf("the command's environment has the database's secrets: %+v", r)
	}
	env := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "NODEID_") {
			env[k] = v
		}
	}
	for _, k := range []string{EnvNode, EnvEpoch, EnvOwner, EnvGrace, EnvHorizonMs, EnvCeilingMs, EnvDeadlineMs, EnvLeaseFile} {
		if env[k] == "" {
			t.Errorf("the command's environment lacks %s: %s", k, r.Stdout)
		}
	}
	file := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "NODEID_") {
			file[k] = v
		}
	}
	ceiling, _ := strconv.ParseInt(env[EnvCeilingMs], 10, 64)
	deadline, _ := strconv.ParseInt(env[EnvDeadlineMs], 10, 64)
	// The file follows the renewals, the environment is the lease at the
	// command's start: a renewal between the two (a second into a 3 s
	// lease, on a loaded machine) moves the file's on, never back.
	fileCeiling, _ := strconv.ParseInt(file["horizon_ceiling_ms"], 10, 64)
	fileDeadline, _ := strconv.ParseInt(file["deadline_ms"], 10, 64)
	if file["node"] != "0" || file["epoch"] != "1" || file["held"] != "true" || fileCeiling < ceiling || fileDeadline < deadline ||
		file["deadline_boottime_ns"] == "" || deadline >= ceiling || fileDeadline >= fileCeiling || ceiling <= time.Now().UnixMilli()-10_000 {
		t.Errorf("lease file %v and environment %v disagree or are implausible", file, env)
	}

	r = harness.Run(t, "run", "--dsn", dsn, "--keep-db-env", "--ttl", "3s", "--", "sh", "-c", show)
	if r.Code != 0 || !strings.Contains(r.Stdout, "DATABASE_URL=postgres://app:s3cret@db.invalid/app") || !strings.Contains(r.Stdout, "PGPASSWORD=s3cret") {
		t.Errorf("--keep-db-env did not pass the database's variables on: %+v", r)
	}
}

// TestRunLeaseFileRenewed: the lease file follows the renewals, and says
// when the lease is gone.
func TestRunLeaseFileRenewed(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	child := clitest.Script(t, `cp "$NODEID_LEASE_FILE" `+dir+`/first
echo "$NODEID_LEASE_FILE" > `+dir+`/path
while :; do sleep 0.05; done
`)
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", child)
	path := strings.TrimSpace(waitFile(t, filepath.Join(dir, "path"), b))
	first := readLeaseFile(t, filepath.Join(dir, "first"))
	var renewed leaseFile
	for deadline := time.Now().Add(30 * time.Second); ; {
		if renewed = readLeaseFile(t, path); renewed["horizon_ceiling_ms"] != first["horizon_ceiling_ms"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease file was not rewritten at a renewal: %v", renewed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if renewed.int(t, "horizon_ceiling_ms") <= first.int(t, "horizon_ceiling_ms") || renewed.int(t, "deadline_boottime_ns") <= first.int(t, "deadline_boottime_ns") || renewed["held"] != "true" {
		t.Errorf("after a renewal: %v; at the start: %v", renewed, first)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	b.Wait(t, 30*time.Second)
	if _, err := os.Stat(filepath.Dir(path)); err == nil {
		t.Errorf("the lease file's directory %s is left behind", filepath.Dir(path))
	}
}

// leaseFile is the content of a lease file.
type leaseFile map[string]string

func readLeaseFile(t *testing.T, path string) leaseFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := leaseFile{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("lease file line %q is not key=value", line)
		}
		f[k] = v
	}
	for _, k := range []string{"node", "epoch", "held", "deadline_ms", "deadline_boottime_ns", "horizon_ceiling_ms"} {
		if _, ok := f[k]; !ok {
			t.Fatalf("lease file %q lacks %s", b, k)
		}
	}
	return f
}

func (f leaseFile) int(t *testing.T, k string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(f[k], 10, 64)
	if err != nil {
		t.Fatalf("lease file: %s=%q: %v", k, f[k], err)
	}
	return v
}

// TestRunCreate: without --create a missing table is an error that says
// so; with it, the table is created.
func TestRunCreate(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "true"), cli.ExitFailure, "table snowflake_nodes does not exist", "--create")
	if r := harness.Run(t, "run", "--dsn", dsn, "--create", "--ttl", "3s", "--", "true"); r.Code != 0 {
		t.Errorf("run --create: %+v", r)
	}
}

// TestRunHelp: each default is shown once; the help states the
// environment and the password advice, and no test hook.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	out := harness.Must(t, "run", "--help")
	for _, want := range []string{"(default TTL/6)", EnvLeaseFile, EnvCeilingMs, EnvDeadlineMs, "visible to every user", "PGPASSFILE", "--keep-db-env", "--create", "--wait-timeout", "--metrics-addr", "/healthz", "needs Linux"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help does not say %q", want)
		}
	}
	if strings.Contains(out, EnvTestClockFile) || strings.Contains(out, "hook") {
		t.Errorf("run --help speaks of the tests' clock hook:\n%s", out)
	}
	if strings.Contains(out, "(default 0s)") {
		t.Errorf("run --help shows a default of 0s:\n%s", out)
	}
}

// TestRunTableRange: without --range or --nodes, run leases from the
// range the table records and leaves it as it is; a range outside it is
// an error naming both.
func TestRunTableRange(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--range", "8-11")
	r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "sh", "-c", `echo "node=$NODEID_NODE"`)
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(r.Stdout), "node="), 10, 64)
	if err != nil || n < 8 || n > 11 {
		t.Errorf("run leased %q (%v), want a node ID of the table's 8-11", r.Stdout, err)
	}
	var rows int
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*) FROM snowflake_nodes`).Scan(&rows); err != nil || rows != 4 {
		t.Errorf("the table has %d rows (%v), want the 4 of its range", rows, err)
	}
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--range", "0-63", "--", "true"), cli.ExitUsage,
		"node range 0-63 is not within the range 8-11")
}

// TestRunNodeBits: a table whose range needs 12 node bits is leased from
// with --node-bits 12, and refused without it, before any claim.
func TestRunNodeBits(t *testing.T) {
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--range", "0-4095", "--node-bits", "12")
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "true"), cli.ExitUsage, "0-4095 does not fit 10 node bits")
	var claims int
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*) FROM snowflake_nodes_history`).Scan(&claims); err != nil || claims != 0 {
		t.Errorf("%d claims (%v) after a refused run, want none", claims, err)
	}
	if r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--node-bits", "12", "--range", "4000-4095", "--", "sh", "-c", `test "$NODEID_NODE" = 4000`); r.Code != 0 {
		t.Errorf("run --node-bits 12 --range 4000-4095: %+v", r)
	}
	// --node-bits replaces the preset's.
	if r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--layout", "js53", "--node-bits", "12", "--range", "4000-4095", "--", "true"); r.Code != 0 {
		t.Errorf("run --layout js53 --node-bits 12 --range 4000-4095: %+v", r)
	}
}

// TestPlainBinaryHasNoClockHook: the tests' clock hook (EnvTestClockFile)
// is not in the command as built: the binary does not contain the
// variable's name, and ignores it where the test binary reads it.
func TestPlainBinaryHasNoClockHook(t *testing.T) {
	t.Parallel()
	bin := clitest.BuildBinary(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(EnvTestClockFile)) {
		t.Errorf("the binary contains %s", EnvTestClockFile)
	}
	bad := filepath.Join(t.TempDir(), "clock")
	if err := os.WriteFile(bad, []byte("not a number\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: the command fails after reading its
	// clock, on connecting.
	dsn := "postgres://nodeid@127.0.0.1:1/x?sslmode=disable&connect_timeout=5"
	// The test binary has the hook, and rejects the file...
	clitest.WantExit(t, harness.RunWith(t, "", map[string]string{EnvTestClockFile: bad}, "run", "--dsn", dsn, "--", "true"), cli.ExitFailure, EnvTestClockFile)
	// ...which the binary never reads.
	c := exec.Command(bin, "run", "--dsn", dsn, "--", "true")
	c.Env = append(os.Environ(), EnvTestClockFile+"="+bad)
	out, err := c.CombinedOutput()
	if err == nil || bytes.Contains(out, []byte(EnvTestClockFile)) || bytes.Contains(out, []byte("test hook")) {
		t.Errorf("nodeid run with %s set: %v\n%s", EnvTestClockFile, err, out)
	}
	if !bytes.Contains(out, []byte("127.0.0.1")) {
		t.Errorf("nodeid run did not get as far as connecting:\n%s", out)
	}
}
