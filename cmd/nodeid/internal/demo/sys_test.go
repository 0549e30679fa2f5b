package demo

import (
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestDemoSupported: the demo runs where POSIX processes do, and refuses
// at once elsewhere.
func TestDemoSupported(t *testing.T) {
	t.Parallel()
	err := demoSupported()
	if unixLike {
		if err != nil {
			t.Errorf("demoSupported() = %v on a POSIX system", err)
		}
		return
	}
	clitest.WantExit(t, harness.Run(t, "demo", "--dsn", "postgres://nodeid@127.0.0.1:1/x"), cli.ExitFailure, "needs POSIX processes")
}
