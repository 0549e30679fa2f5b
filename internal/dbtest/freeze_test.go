//go:build linux

package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/snowflake"
)

// envFreezeMinter, set in a process that TestFreezeOfALibraryProcess
// started, makes the test binary a minter: it holds node ID 0 of the
// table at the DSN the variable holds and mints with the library's
// generator into the file named by envFreezeOut.
const (
	envFreezeMinter = "NODEID_DBTEST_FREEZE_MINTER"
	envFreezeOut    = "NODEID_DBTEST_FREEZE_OUT"
)

// freezeTTL is the minters' TTL: short, so that the takeover comes soon.
const freezeTTL = 3 * time.Second

func init() {
	if dsn := os.Getenv(envFreezeMinter); dsn != "" {
		if err := freezeMinter(dsn, os.Getenv(envFreezeOut)); err != nil {
			fmt.Fprintln(os.Stderr, "minter:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// freezeMinter acquires node ID 0 (waiting for it) and mints under it,
// one ID at a time, each written to out on a line of its own: "id ID". A
// refusal of the generator is written as "refused
// ERROR"; one that says the lease is lost ends it. It stops, releasing the
// lease, when out.stop exists.
func freezeMinter(dsn, out string) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := nodeid.New(db, nodeid.WithTTL(freezeTTL), nodeid.WithNodeRange(0, 0), nodeid.WithCreateTable(true),
		nodeid.WithOwner(fmt.Sprintf("freeze-%d", os.Getpid())))
	if err != nil {
		return err
	}
	defer reg.Close()
	ctx := context.Background()
	l, err := reg.Acquire(ctx)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "lease %d\n", l.Epoch()); err != nil {
		return err
	}
	g, err := snowflake.New(l)
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(out + ".stop"); err == nil {
			return l.Release(ctx)
		}
		id, err := g.Generate()
		if err != nil {
			if _, werr := fmt.Fprintf(f, "refused %s\n", strings.ReplaceAll(err.Error(), "\n", " ")); werr != nil {
				return werr
			}
			if errors.Is(err, nodeid.ErrLeaseLost) {
				return nil
			}
		} else if _, err := fmt.Fprintf(f, "id %d\n", id); err != nil {
			return err
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// minterFile is what a minter wrote.
type minterFile struct {
	epoch   int64
	ids     []uint64
	refused []string
}

func readMinter(t *testing.T, path string) minterFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var m minterFile
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] { // the last may be incomplete
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "lease":
			m.epoch, _ = strconv.ParseInt(rest, 10, 64)
		case "id":
			v, err := strconv.ParseUint(rest, 10, 64)
			if err != nil {
				t.Fatalf("%s: line %q: %v", path, line, err)
			}
			m.ids = append(m.ids, v)
		case "refused":
			m.refused = append(m.refused, rest)
		}
	}
	return m
}

// minterProc is a minter process.
type minterProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // once done is closed
}

// startMinter starts a minter process writing to out.
func startMinter(t *testing.T, dsn, out string) *minterProc {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), envFreezeMinter+"="+dsn, envFreezeOut+"="+out)
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	m := &minterProc{cmd: c, done: make(chan struct{})}
	go func() {
		m.err = c.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		<-m.done
	})
	return m
}

// running fails the test if the minter has exited.
func (m *minterProc) running(t *testing.T, what string) {
	select {
	case <-m.done:
		t.Fatalf("the %s minter exited: %v", what, m.err)
	default:
	}
}

// wait waits for the minter to exit and returns how it did.
func (m *minterProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-m.done:
		return m.err
	case <-time.After(60 * time.Second):
		t.Fatalf("minter %d did not exit within 60s", m.cmd.Process.Pid)
		return nil
	}
}

// TestFreezeOfALibraryProcess: a process minting with the library's
// generator is stopped (SIGSTOP, as a freezer or a suspended VM stops it)
// until another process has taken its node ID over and minted, and its
// lease's deadline has passed on the monotonic clock; continued, it mints
// nothing more: its generator checks the deadline and the horizon ceiling
// itself on every call, before its lease's loss can reach it.
func TestFreezeOfALibraryProcess(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	outA, outB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := startMinter(t, dsn, outA)
	testkit.Until(t, 60*time.Second, "the first minter minting", testkit.True(func() bool {
		a.running(t, "first")
		return len(readMinter(t, outA).ids) >= 200
	}))
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Every claim and renewal of its lease started before the stop, so its
	// deadline falls less than a TTL after it.
	stopped := time.Now()
	testkit.Until(t, 10*time.Second, "the first minter stopped", testkit.True(func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(a.cmd.Process.Pid) + "/stat")
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	}))
	frozen := readMinter(t, outA)
	b := startMinter(t, dsn, outB)
	testkit.Until(t, 60*time.Second, "the second minter minting past the first's deadline", testkit.True(func() bool {
		b.running(t, "second")
		return len(readMinter(t, outB).ids) >= 20 && time.Since(stopped) > freezeTTL
	}))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	freeze := time.Since(stopped)
	if err := a.wait(t); err != nil {
		t.Errorf("the first minter: %v", err)
	}
	if err := os.WriteFile(outB+".stop", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.wait(t); err != nil {
		t.Errorf("the second minter: %v", err)
	}

	ma, mb := readMinter(t, outA), readMinter(t, outB)
	var s stamps
	s.add(ma.ids)
	s.add(mb.ids)
	dups, shared := s.check()
	t.Logf("stopped for %s (a TTL is %s); the first minter: epoch %d, %d IDs, %d after the stop, refused %q; the second: epoch %d, %d IDs; %d IDs minted twice, %d milliseconds stamped by both",
		freeze.Round(time.Millisecond), freezeTTL, ma.epoch, len(ma.ids), len(ma.ids)-len(frozen.ids), ma.refused, mb.epoch, len(mb.ids), dups, shared)
	if mb.epoch <= ma.epoch || len(mb.ids) < 20 {
		t.Fatalf("no takeover: epochs %d then %d, %d IDs minted by the second", ma.epoch, mb.epoch, len(mb.ids))
	}
	if n := len(ma.ids) - len(frozen.ids); n > 0 {
		t.Errorf("the first minter minted %d IDs after it was continued", n)
	}
	if len(ma.refused) == 0 {
		t.Errorf("the first minter was not refused an ID after it was continued")
	}
	if dups > 0 || shared > 0 {
		t.Errorf("%d IDs minted twice, %d milliseconds stamped by both minters", dups, shared)
	}
}
