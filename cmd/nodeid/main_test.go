package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// envBeCLI makes the test binary behave as the nodeid command, so that the
// demo's workers can be processes of their own under test.
const envBeCLI = "NODEID_TEST_BE_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envBeCLI) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}

// fixedNow is the local clock of test runs: it only labels watch frames.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testZone is the "local" zone of decode and who under test.
var testZone = time.FixedZone("CET", 3600)

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// testApp returns an app with the given stdin and environment (nothing
// else of the process's environment is visible to it), a fixed local zone
// and a fixed clock for labels.
func testApp(stdin string, env map[string]string) (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(stdin), &out, &errb)
	a.getenv = func(k string) string { return env[k] }
	a.loc = testZone
	a.now = func() time.Time { return fixedNow }
	a.self = testSelf
	return a, &out, &errb
}

// cli runs the command in-process with an empty stdin and environment.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliWith(t, "", nil, args...)
}

// cliWith runs the command in-process with stdin and environment.
func cliWith(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	a, out, errb := testApp(stdin, env)
	code := a.main(args)
	r := result{code: code, stdout: out.String(), stderr: errb.String()}
	t.Logf("nodeid %s -> %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// mustCLI runs the command and fails the test unless it exits with 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, args...)
	if r.code != 0 {
		t.Fatalf("nodeid %s: exit code %d, stderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// wantExit fails the test unless r exited with code and its stderr is one
// line containing every one of wants.
func wantExit(t *testing.T, r result, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if code != 0 && strings.Count(strings.TrimSuffix(r.stderr, "\n"), "\n") != 0 {
		t.Errorf("stderr is not one line: %q", r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not contain %q", r.stderr, w)
		}
	}
}

var (
	rfc3339ms = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`)
	unixMs    = regexp.MustCompile(`\b1\d{12}\b`)
)

// normalize replaces exact times and unix milliseconds within a month of
// the real clock, which tests cannot fix, by placeholders of their own
// width. Times far from now (fixed by the tests) stay.
func normalize(s string) string {
	near := func(t time.Time) bool { return time.Since(t).Abs() < 30*24*time.Hour }
	s = rfc3339ms.ReplaceAllStringFunc(s, func(m string) string {
		if t, err := time.Parse("2006-01-02T15:04:05.000Z07:00", m); err == nil && near(t) {
			return "<now-ish time" + strings.Repeat(".", len(m)-15) + ">"
		}
		return m
	})
	return unixMs.ReplaceAllStringFunc(s, func(m string) string {
		if ms, err := strconv.ParseInt(m, 10, 64); err == nil && near(time.UnixMilli(ms)) {
			return "<now-ish ms>"
		}
		return m
	})
}

// golden compares got with testdata/name.golden, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// testSelf runs this test binary as the nodeid command (see TestMain).
func testSelf(ctx context.Context, args ...string) (*exec.Cmd, error) {
	c, err := selfCommand(ctx, args...)
	if err != nil {
		return nil, err
	}
	c.Env = append(os.Environ(), envBeCLI+"=1")
	return c, nil
}

func strconvItoa(i int) string { return strconv.Itoa(i) }
