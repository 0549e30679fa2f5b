// Package clitest runs the commands of nodeid in tests: in-process, with
// streams, environment and clock of the test's own (Harness), or as
// processes of their own, this test binary re-executed (Self); it compares
// output with golden files and waits for conditions. It is test harness:
// the nodeid binary never links it.
package clitest

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
)

// Update rewrites the golden files in testdata instead of comparing.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// EnvBeCLI makes the test binary behave as the nodeid command, with the
// commands of its Harness, so that commands that start this program again
// (the demo's workers, run's warden) can be processes of their own under
// test.
const EnvBeCLI = "NODEID_TEST_BE_CLI"

// FixedNow is the local clock of test runs: it only labels watch frames.
var FixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Zone is the "local" zone of decode and who under test.
var Zone = time.FixedZone("CET", 3600)

// Result is what one run of the command did.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Harness runs the commands Commands returns under the nodeid command, as
// nodeid does: the commands under test and those they need beside them;
// or, if Top is set, the nodeid command it returns.
type Harness struct {
	Commands func(env *cli.Env) []*cobra.Command
	Top      func(env *cli.Env) *cobra.Command
}

// Main runs the tests of a package with pgtest.Main, unless the test
// binary runs as the nodeid command (EnvBeCLI): call it from TestMain.
func (h Harness) Main(m *testing.M) {
	if os.Getenv(EnvBeCLI) == "1" {
		env := cli.NewEnv(os.Stdin, os.Stdout, os.Stderr)
		env.Self = Self
		os.Exit(h.Exec(env, os.Args[1:]))
	}
	pgtest.Main(m)
}

// Exec runs args with env and returns the exit code.
func (h Harness) Exec(env *cli.Env, args []string) int {
	if h.Top != nil {
		return cli.Execute(env, h.Top(env), args)
	}
	return cli.Execute(env, cli.NewCommand(env, h.Commands(env)...), args)
}

// Env returns an environment with the given stdin and process environment
// (nothing else of the process's environment is visible to it), the fixed
// local zone and clock of tests, and Self; and its stdout and stderr.
func Env(stdin string, vars map[string]string) (*cli.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	env := cli.NewEnv(strings.NewReader(stdin), &out, &errb)
	env.Getenv = func(k string) string { return vars[k] }
	env.Loc = Zone
	env.Now = func() time.Time { return FixedNow }
	env.Self = Self
	return env, &out, &errb
}

// Run runs the command in-process with an empty stdin and environment.
func (h Harness) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return h.RunWith(t, "", nil, args...)
}

// RunWith runs the command in-process with stdin and environment.
func (h Harness) RunWith(t testing.TB, stdin string, vars map[string]string, args ...string) Result {
	t.Helper()
	env, out, errb := Env(stdin, vars)
	code := h.Exec(env, args)
	r := Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
	t.Logf("nodeid %s -> %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	return r
}

// Must runs the command and fails the test unless it exits with 0; it
// returns its stdout.
func (h Harness) Must(t testing.TB, args ...string) string {
	t.Helper()
	r := h.Run(t, args...)
	if r.Code != 0 {
		t.Fatalf("nodeid %s: exit code %d, stderr: %s", strings.Join(args, " "), r.Code, r.Stderr)
	}
	return r.Stdout
}

// WantExit fails the test unless r exited with code and its stderr is one
// line containing every one of wants.
func WantExit(t testing.TB, r Result, code int, wants ...string) {
	t.Helper()
	if r.Code != code {
		t.Errorf("exit code %d, want %d (stderr %q)", r.Code, code, r.Stderr)
	}
	if code != 0 && strings.Count(strings.TrimSuffix(r.Stderr, "\n"), "\n") != 0 {
		t.Errorf("stderr is not one line: %q", r.Stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr %q does not contain %q", r.Stderr, w)
		}
	}
}

var (
	rfc3339ms = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`)
	unixMs    = regexp.MustCompile(`\b1\d{12}\b`)
)

// Normalize replaces exact times and unix milliseconds within a month of
// the real clock, which tests cannot fix, by placeholders of their own
// width. Times far from now (fixed by the tests) stay.
func Normalize(s string) string {
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

// Golden compares got with testdata/name.golden, or rewrites the file with
// -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *Update {
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

// Self runs this test binary as the nodeid command (see Harness.Main).
func Self(ctx context.Context, args ...string) (*exec.Cmd, error) {
	c, err := cli.SelfCommand(ctx, args...)
	if err != nil {
		return nil, err
	}
	c.Env = append(os.Environ(), EnvBeCLI+"=1")
	return c, nil
}

// BuildBinary builds the nodeid command, as shipped, into a temporary
// directory and returns its path.
func BuildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodeid")
	out, err := exec.Command(GoTool(), "build", "-o", bin, "github.com/nodeid/nodeid/cmd/nodeid").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// GoTool returns the go command.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// Ctx returns a context that ends with the test, or after two minutes.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// ExecSQL runs q on db and fails the test if it fails.
func ExecSQL(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(Ctx(t), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Background is a command running in-process in a goroutine, with an empty
// stdin and environment.
type Background struct {
	done           chan struct{}
	code           int
	stdout, stderr syncbuf.Buffer
	interrupt      chan struct{} // closed by Interrupt
	interruptOnce  sync.Once
}

// Start starts the command in-process; Wait returns what it did.
func (h Harness) Start(t testing.TB, args ...string) *Background {
	t.Helper()
	return h.start(args, false)
}

// StartInterruptible is Start for a command that stops when interrupted
// (watch, demo, run's wait): Interrupt then does what Ctrl-C does, without
// a signal to the test's process.
func (h Harness) StartInterruptible(t testing.TB, args ...string) *Background {
	t.Helper()
	return h.start(args, true)
}

func (h Harness) start(args []string, interruptible bool) *Background {
	b := &Background{done: make(chan struct{}), interrupt: make(chan struct{})}
	env := cli.NewEnv(strings.NewReader(""), &b.stdout, &b.stderr)
	env.Getenv = func(string) string { return "" }
	env.Self = Self
	if interruptible {
		env.Interrupted = func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-b.interrupt:
					cancel()
				case <-ctx.Done():
				}
			}()
			return ctx, cancel
		}
	}
	go func() {
		defer close(b.done)
		b.code = h.Exec(env, args)
	}()
	return b
}

// Interrupt interrupts a command started by StartInterruptible, as Ctrl-C
// would.
func (b *Background) Interrupt() { b.interruptOnce.Do(func() { close(b.interrupt) }) }

// Stdout is what the command wrote on stdout so far.
func (b *Background) Stdout() string { return b.stdout.String() }

// Done is closed when the command has ended.
func (b *Background) Done() <-chan struct{} { return b.done }

// Code is the command's exit code, once Done is closed.
func (b *Background) Code() int { return b.code }

// Stderr is what the command wrote on stderr so far.
func (b *Background) Stderr() string { return b.stderr.String() }

// Wait waits up to within for the command to end, and returns what it did.
func (b *Background) Wait(t testing.TB, within time.Duration) Result {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(within):
		t.Fatalf("the command did not end within %s; stderr so far: %s", within, b.stderr.String())
	}
	r := Result{Code: b.code, Stdout: b.stdout.String(), Stderr: b.stderr.String()}
	t.Logf("-> %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	return r
}
