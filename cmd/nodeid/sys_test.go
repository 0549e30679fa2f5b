package main

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
)

// TestRunNeedsWarden: where the warden cannot run, "nodeid run" refuses
// at once, before it connects; where it can, run goes on to connect.
func TestRunNeedsWarden(t *testing.T) {
	// Nothing listens on port 1.
	r := cli(t, "run", "--dsn", "postgres://nodeid@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", "--", "true")
	if err := warden.Supported(); err != nil {
		wantExit(t, r, exitFailure, "nodeid run needs Linux")
		return
	}
	wantExit(t, r, exitFailure, "127.0.0.1")
	if strings.Contains(r.stderr, "needs Linux") {
		t.Errorf("run refused where the warden runs: %s", r.stderr)
	}
}

// TestDemoSupported: the demo runs where POSIX processes do, and refuses
// at once elsewhere.
func TestDemoSupported(t *testing.T) {
	err := demoSupported()
	if unixLike {
		if err != nil {
			t.Errorf("demoSupported() = %v on a POSIX system", err)
		}
		return
	}
	wantExit(t, cli(t, "demo", "--dsn", "postgres://nodeid@127.0.0.1:1/x"), exitFailure, "needs POSIX processes")
}
