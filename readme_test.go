package nodeid_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The README's quick start is the program examples/quickstart, word for
// word, and that program runs against a real PostgreSQL: it leases node ID
// 0, mints three IDs, releases the node ID and exits with 0.
func TestREADMEQuickStart(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile(filepath.Join("examples", "quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d Go blocks; the test knows one, the quick start", len(blocks))
	}
	if blocks[0][1] != string(program) {
		t.Fatal("the README's quick start differs from examples/quickstart/main.go: copy the program into the README")
	}

	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command(goTool, "build", "-o", bin, "./examples/quickstart").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/quickstart: %v\n%s", err, out)
	}
	_, dsn := pgtest.NewDB(t)
	run := func() ([]byte, error) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn)
		return cmd.CombinedOutput()
	}
	out, err := run()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[0] != "node 0, epoch 1" {
		t.Fatalf("the quick start printed:\n%s\nwant node 0, epoch 1 and three IDs", out)
	}
	// It released the node ID: a second run gets node 0 again, at epoch 2.
	if out, err := run(); err != nil || !strings.HasPrefix(string(out), "node 0, epoch 2\n") {
		t.Fatalf("the second run: %v\n%s\nwant node 0, epoch 2: the first run must have released it", err, out)
	}
}
