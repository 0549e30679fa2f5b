package clitest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"go.yaml.in/yaml/v3"
)

// RepoRoot is the repository's root, from the directory of a package of
// cmd/nodeid/internal/ (the working directory of its tests).
const RepoRoot = "../../../.."

// DocsPage is the page of the documentation whose console blocks show what
// the commands print.
const DocsPage = RepoRoot + "/docs/commands.md"

// Secret is the password of the DSNs of tests that check that no password
// is ever printed.
const Secret = "Sup3r-S3cret-pw"

// WithUser returns dsn, a URL, with its user and password replaced.
func WithUser(t testing.TB, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// SilentServer listens on 127.0.0.1, accepts every connection and never
// answers, as a stuck server, or a proxy with no server behind it, does. It
// returns its host:port, and stops when the test ends.
func SilentServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Script writes an executable shell script into a temporary directory and
// returns its path.
func Script(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "child.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// LeaseRow is a node ID's row and the end of its latest claim in the
// history.
type LeaseRow struct {
	Owner           string
	Epoch, Horizon  int64
	Free            bool
	Reason          string
	HistoryHorizon  int64
	HistoryHasEnded bool
}

// ReadLease reads node's row of snowflake_nodes and its latest claim.
func ReadLease(t testing.TB, db *sql.DB, node int64) LeaseRow {
	t.Helper()
	var (
		r       LeaseRow
		reason  sql.NullString
		horizon sql.NullInt64
	)
	err := db.QueryRowContext(Ctx(t), `SELECT t.owner, t.epoch, t.horizon_ms, t.expires_at = '-infinity', h.end_reason, h.horizon_ms
		FROM snowflake_nodes t JOIN snowflake_nodes_history h ON h.node_id = t.node_id AND h.epoch = t.epoch
		WHERE t.node_id = $1`, node).Scan(&r.Owner, &r.Epoch, &r.Horizon, &r.Free, &reason, &horizon)
	if err != nil {
		t.Fatal(err)
	}
	r.Reason, r.HistoryHorizon, r.HistoryHasEnded = reason.String, horizon.Int64, reason.Valid
	return r
}

// RequireRuntime returns the path of a language runtime; without it, the
// test is skipped, or fails when the database is required (CI, where
// .ci/run installs the runtimes).
func RequireRuntime(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatalf("%s is not installed (%s=1: the language tests must run; .ci/run installs it)", name, pgtest.EnvRequire)
		}
		t.Skipf("%s is not installed (set %s=1 to fail instead)", name, pgtest.EnvRequire)
	}
	return p
}

// demoSteps are what the demo's output must show, in order.
var demoSteps = []string{
	"==> nodeid init --table nodeid_demo --range 0-2",
	"held 0 / free 3 / expired 0 / total 3",
	"==> Starting 3 workers",
	"held 3 / free 0 / expired 0 / total 3",
	"==> Killing demo-worker-2 (pid ",
	"held 3 / free 0 / expired 0 / total 3",
	"==> Waiting for node ID ",
	"held 2 / free 0 / expired 1 / total 3",
	"==> Starting demo-worker-4: it takes over node ID ",
	"demo-worker-4 (pid ",
	", epoch 2 (was 1)",
	"held 3 / free 0 / expired 0 / total 3",
	"==> nodeid who ",
	"held by     owner demo-worker-2, epoch 1",
	"held by     owner demo-worker-4, epoch 2",
	"==> Stopping the workers with SIGTERM",
	"held 0 / free 3 / expired 0 / total 3",
	"==> nodeid show ",
	"demo-worker-4  ",
	"released",
	"demo-worker-2  ",
	"expired",
}

// CheckDemoOutput fails the test unless out, the output of "nodeid demo",
// shows every step of the demo in order: the in-process demo's tests and
// the built binary's check the same story.
func CheckDemoOutput(t testing.TB, out string) {
	t.Helper()
	rest := out
	for _, s := range demoSteps {
		i := strings.Index(rest, s)
		if i < 0 {
			t.Fatalf("the demo's output lacks %q after the earlier steps:\n%s", s, out)
		}
		rest = rest[i+len(s):]
	}
}

// SameAsJSON fails the test unless yamlText, read by a YAML parser, holds
// the same value as jsonText, read by a JSON parser.
func SameAsJSON(t testing.TB, yamlText, jsonText string) {
	t.Helper()
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal([]byte(yamlText), &fromYAML); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, yamlText)
	}
	dec := json.NewDecoder(strings.NewReader(jsonText))
	dec.UseNumber() // exact integers, as YAML reads them
	if err := dec.Decode(&fromJSON); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, jsonText)
	}
	// Through JSON again, so that YAML's ints and JSON's float64s compare.
	a, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(fromJSON)
	if !bytes.Equal(a, b) {
		t.Errorf("the YAML holds\n%s\nthe JSON holds\n%s\nYAML:\n%s", a, b, yamlText)
	}
}

// NoControls fails the test if out has a character that is not printable,
// other than a newline.
func NoControls(t testing.TB, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && !strconv.IsPrint(r) {
			t.Errorf("raw %U in the output:\n%s", r, out)
			return
		}
	}
}
