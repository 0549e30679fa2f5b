//go:build linux

package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/snowflake"
)

// npmDir is testdata/npm: the package.json and package-lock.json that pin
// the third-party generators, and the programs that run them.
const npmDir = "testdata/npm"

// npmPrograms returns a directory holding the programs of npmDir beside a
// node_modules installed by "npm ci" from its lock file. The installation
// is kept in the user's cache directory, under the lock file's hash, so
// that later runs reuse it; node_modules is never written into the tree.
func npmPrograms(t *testing.T) string {
	t.Helper()
	npm := clitest.RequireRuntime(t, "npm")
	lock, err := os.ReadFile(filepath.Join(npmDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(npmDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, manifest...), lock...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "nodeid-test-npm")
	installed := filepath.Join(root, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(installed, "node_modules")); err != nil {
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(root, "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		c.Dir = tmp
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
		}
		// Another test process may have installed it meanwhile: theirs stays.
		if err := os.Rename(tmp, installed); err != nil && !errors.Is(err, os.ErrExist) && !strings.Contains(err.Error(), "not empty") {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(installed, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"package.json", "mint.mjs", "sapphire.mjs", "flake.mjs"} {
		b, err := os.ReadFile(filepath.Join(npmDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestExportNPMGuards: run by themselves, without the guards their
// programs add, the two npm generators do what docs/export.md says the
// application must guard against: @sapphire/snowflake's counter wraps
// after 4096 IDs in one millisecond (duplicates), and flake-idgen's next()
// throws.
func TestExportNPMGuards(t *testing.T) {
	t.Parallel()
	node := clitest.RequireRuntime(t, "node")
	dir := npmPrograms(t)
	out, err := exec.Command(node, filepath.Join(dir, "sapphire.mjs"), "--unguarded").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "4096" {
		t.Errorf("@sapphire/snowflake, 5000 IDs in one millisecond: %v, %s distinct, want 4096 (its counter wraps)", err, out)
	}
	out, err = exec.Command(node, filepath.Join(dir, "flake.mjs"), "--unguarded").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Sequence exceeded its maximum value") {
		t.Errorf("flake-idgen, 5000 IDs in one millisecond: %v, %q, want the overflow it throws", err, out)
	}
}

// TestExportNPM runs two real generators from the npm registry,
// @sapphire/snowflake and flake-idgen (versions pinned by
// testdata/npm/package-lock.json), each under "nodeid run --export" with
// the export mapping of docs/export.md (the node ID's low half to the
// lower 5-bit field), taking turns on the one node ID of a table: the
// first holder's nodeid run is killed with SIGKILL, the second's stopped
// with SIGSTOP past its TTL, and each next holder waits (--wait) for the
// node ID. Every ID of every holder must be distinct, decode to node ID 40
// in bwmarrin's layout (nodeid decode's default), and be stamped after
// every ID of the holders before. NODEID_TEST_LONG=1 adds holders (a
// SIGTERM hand-over and a second SIGKILL) and bursts of 5000 IDs, past
// the 4096 a millisecond the guards hold them to.
func TestExportNPM(t *testing.T) {
	t.Parallel()
	node := clitest.RequireRuntime(t, "node")
	dir := npmPrograms(t)
	const nodeID = 40 // datacenter/worker (upper/lower field) 1 and 8
	exports := []string{
		"--export", "SNOWFLAKE_WORKER_ID={node/32%32}", "--export", "SNOWFLAKE_PROCESS_ID={node%32}",
		"--export", "FLAKE_DATACENTER={node/32%32}", "--export", "FLAKE_WORKER={node%32}",
	}
	long := os.Getenv(EnvTestLong) == "1"
	burst := "3"
	if long {
		burst = "5000"
	}
	// How each holder's turn ends: its nodeid run killed, stopped past the
	// TTL, sent SIGTERM (a clean hand-over), or its program told to stop.
	type turn struct {
		lib, end string
	}
	turns := []turn{{"sapphire", "kill"}, {"flake", "stop"}, {"sapphire", "last"}}
	if long {
		turns = []turn{{"sapphire", "kill"}, {"flake", "stop"}, {"sapphire", "term"}, {"flake", "kill"}, {"sapphire", "stop"}, {"flake", "last"}}
	}
	s := newFenceSetup(t)
	var holders []*genHolder
	for i, tu := range turns {
		args := []string{"--dsn", s.dsn, "--create", "--range", "40-40", "--ttl", fenceTTL}
		if i > 0 {
			args = append(args, "--wait")
		}
		args = append(append(append(args, exports...), "--", node), filepath.Join(dir, tu.lib+".mjs"))
		h := &genHolder{lang: tu.lib, dir: t.TempDir()}
		h.run = startHolder(t, s.clock, append(args, h.dir, burst)...)
		waitMinting(t, h)
		holders = append(holders, h)
		switch tu.end {
		case "kill":
			if err := h.run.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		case "stop":
			if err := syscall.Kill(h.run.pid(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		case "term":
			if err := h.run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		case "last":
			if err := os.WriteFile(filepath.Join(h.dir, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, h := range holders {
		_ = syscall.Kill(h.run.pid(), syscall.SIGCONT)
		h.run.wait(t, 60*time.Second)
	}
	dups, early := checkIDs(t, nodeID, holders)
	if dups != 0 || early != 0 {
		t.Errorf("%d IDs minted twice; %d holders stamped at or before the previous one's last stamp", dups, early)
	}
	// The exported node ID is what nodeid decode reads, with its defaults.
	l := idlayout.IDLayout{Layout: snowflake.DefaultLayout, Order: idlayout.SnowflakeOrder}
	total := 0
	for _, h := range holders {
		for _, id := range readGenIDs(t, h.dir) {
			if p := l.Decode(id); p.Node != nodeID {
				t.Fatalf("%s: ID %d decodes to node %d, want %d", h.lang, id, p.Node, nodeID)
			}
			total++
		}
	}
	t.Logf("%d IDs from %d holders, all distinct and of node ID %d", total, len(holders), nodeID)
}
