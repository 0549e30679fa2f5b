package run

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
)

// TestRunNeedsWarden: where the warden cannot run, "nodeid run" refuses
// at once, before it connects; where it can, run goes on to connect.
func TestRunNeedsWarden(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1.
	r := harness.Run(t, "run", "--dsn", "postgres://nodeid@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", "--", "true")
	if err := warden.Supported(); err != nil {
		clitest.WantExit(t, r, cli.ExitFailure, "nodeid run needs Linux")
		return
	}
	clitest.WantExit(t, r, cli.ExitFailure, "127.0.0.1")
	if strings.Contains(r.Stderr, "needs Linux") {
		t.Errorf("run refused where the warden runs: %s", r.Stderr)
	}
}
