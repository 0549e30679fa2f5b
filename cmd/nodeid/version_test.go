package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// gitOut runs git in the checkout of the test and returns its output,
// trimmed; without git or a checkout the test is skipped, since there is
// nothing to stamp.
func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: a build cannot be stamped with its commit")
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Skipf("git %s: %v: not a git checkout", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// buildNodeid builds the command with the extra go build flags and returns
// the binary.
func buildNodeid(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodeid")
	build := append(append([]string{"build", "-o", bin}, flags...), ".")
	if out, err := exec.Command(clitest.GoTool(), build...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(build, " "), err, out)
	}
	return bin
}

// runVersion returns what bin's version command prints with args.
func runVersion(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"version"}, args...)...).Output()
	if err != nil {
		t.Fatalf("nodeid version %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// TestVersionStampedByGo: a build in a git checkout, with Go's VCS
// stamping, names the commit of HEAD, says whether the tree is modified
// as git does, and has a module version, never "devel".
func TestVersionStampedByGo(t *testing.T) {
	t.Parallel()
	top := gitOut(t, "rev-parse", "--show-toplevel")
	if fi, err := os.Stat(filepath.Join(top, ".git")); err != nil || !fi.IsDir() {
		// go build looks for a .git directory: in a worktree made by git
		// worktree add, .git is a file, and builds are not stamped.
		t.Skipf("%s is a git worktree (its .git is not a directory), whose builds go build does not stamp; run this test in a clone", top)
	}
	head := gitOut(t, "rev-parse", "HEAD")
	// What go build runs to tell a modified tree (untracked files count).
	modified := gitOut(t, "status", "--porcelain") != ""
	out := runVersion(t, buildNodeid(t, "-buildvcs=true"))
	t.Logf("nodeid version: %s", out)
	if !strings.HasPrefix(out, "nodeid v") || !strings.Contains(out, "(commit "+head) {
		t.Errorf("nodeid version = %q; want a module version and commit %s", out, head)
	}
	if strings.Contains(out, ", modified") != modified {
		t.Errorf("nodeid version = %q; git status says modified=%v", out, modified)
	}
	if !strings.HasSuffix(out, " "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("nodeid version = %q; want it to end with the Go version and platform", out)
	}
}

// TestVersionSetByRelease: the -ldflags -X values of a release are what
// version prints, in its line and in its JSON.
func TestVersionSetByRelease(t *testing.T) {
	t.Parallel()
	const (
		version = "v9.8.7"
		commit  = "0123456789abcdef0123456789abcdef01234567"
		date    = "2026-03-02T08:30:00Z"
	)
	ldflags := "-ldflags=-X main.version=" + version + " -X main.commit=" + commit + " -X main.date=" + date
	// Without VCS stamping: the release's values alone.
	bin := buildNodeid(t, "-buildvcs=false", ldflags)
	want := "nodeid " + version + " (commit " + commit + ", built " + date + ") " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if out := runVersion(t, bin); out != want {
		t.Errorf("nodeid version = %q, want %q", out, want)
	}
	out := runVersion(t, bin, "-o", "json")
	var doc struct {
		Version, Commit, Source string
		BuildDate               string `json:"build_date"`
		Modified                *bool
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("nodeid version -o json = %q: %v", out, err)
	}
	if doc.Version != version || doc.Commit != commit || doc.BuildDate != date || doc.Source != "ldflags" || doc.Modified != nil {
		t.Errorf("nodeid version -o json = %s", out)
	}
}
