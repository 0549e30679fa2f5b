package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// harnessPackages are what the shipped binary must not link: the test
// harness and what only it needs, and every internal package of the
// library (the command uses the library through its public packages only).
var harnessPackages = []string{"testing", "github.com/nodeid/nodeid/internal", "github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"}

// TestBinaryLinksNoHarness: the command, built for Linux, macOS or Windows,
// depends on no test harness (internal/testkit, testing, clitest) and on no
// package under the library's internal/.
func TestBinaryLinksNoHarness(t *testing.T) {
	goTool := clitest.GoTool()
	for _, target := range [][2]string{{runtime.GOOS, runtime.GOARCH}, {"darwin", "arm64"}, {"darwin", "amd64"}, {"windows", "amd64"}} {
		c := exec.Command(goTool, "list", "-deps", ".")
		c.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("go list -deps for %s/%s: %v", target[0], target[1], err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("go list -deps for %s/%s listed %d packages: %q", target[0], target[1], len(deps), out)
		}
		for _, d := range deps {
			for _, h := range harnessPackages {
				if d == h || strings.HasPrefix(d, h+"/") || strings.Contains(d, "/internal/testkit") {
					t.Errorf("%s/%s: the command depends on %s", target[0], target[1], d)
				}
			}
		}
	}
}
