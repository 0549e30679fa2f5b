//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
)

// demoEnv is the environment of the binary's demo: no DATABASE_URL, so that
// it starts a throwaway server, and a TMPDIR of its own, which must be
// empty afterwards. The server may run as the postgres user: it must be
// able to reach TMPDIR.
func demoEnv(t *testing.T) ([]string, string) {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cli.EnvDatabaseURL+"=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "TMPDIR="+tmp), tmp
}

func checkEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}

var workerPID = regexp.MustCompile(`demo-worker-\d \(pid (\d+)\)`)

// checkWorkersGone fails the test if a worker process named in out is
// still alive.
func checkWorkersGone(t *testing.T, out string) {
	t.Helper()
	ms := workerPID.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		t.Fatalf("no worker process in the output:\n%s", out)
	}
	for _, m := range ms {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); err == nil {
			stat, _ := os.ReadFile("/proc/" + m[1] + "/stat")
			if !strings.Contains(string(stat), ") Z ") {
				t.Errorf("worker process %d is still running", pid)
			}
		}
	}
}

// TestBinary runs the built command: usage errors, then the demo on a
// throwaway PostgreSQL, which must finish within a minute and leave
// nothing behind.
func TestBinary(t *testing.T) {
	pgtest.Shared(t) // skips, or fails under NODEID_TEST_REQUIRE_DB=1, without PostgreSQL
	bin := clitest.BuildBinary(t)

	c := exec.Command(bin, "decode", "bogus!")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitUsage || !strings.HasPrefix(stderr.String(), `nodeid: ID "bogus!"`) {
		t.Errorf("decode bogus!: %v, stderr %q", err, stderr.String())
	}

	env, tmp := demoEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c = exec.CommandContext(ctx, bin, "demo")
	c.Env = env
	var stdout bytes.Buffer
	stderr.Reset()
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("demo: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), stdout.String(), stderr.String())
	}
	t.Logf("demo output:\n%s", stdout.String())
	clitest.CheckDemoOutput(t, stdout.String())
	if !strings.Contains(stdout.String(), "==> Starting a throwaway PostgreSQL") {
		t.Error("the demo did not start a throwaway server")
	}
	checkEmptyDir(t, tmp)
	checkWorkersGone(t, stdout.String())
}

// TestBinaryDemoInterrupted: Ctrl-C (SIGINT) stops the demo, which stops
// its workers and removes its server and files, and exits with 130.
func TestBinaryDemoInterrupted(t *testing.T) {
	pgtest.Shared(t)
	bin := clitest.BuildBinary(t)
	env, tmp := demoEnv(t)
	c := exec.Command(bin, "demo")
	c.Env = env
	var stdout, stderr syncbuf.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for deadline := time.Now().Add(50 * time.Second); len(workerPID.FindAllString(stdout.String(), -1)) < 3; {
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			t.Fatalf("the workers did not start:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) == 0 {
		t.Error("the throwaway server does not keep its files in TMPDIR: the test cannot see them removed")
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("the demo did not stop on SIGINT:\n%s", stdout.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want code 130", err)
	}
	if !strings.Contains(stderr.String(), "demo interrupted") {
		t.Errorf("stderr: %q", stderr.String())
	}
	checkEmptyDir(t, tmp)
	checkWorkersGone(t, stdout.String())
}
