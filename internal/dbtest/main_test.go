// Package dbtest holds the database suites that test the library from
// outside, as a program would use it, against real PostgreSQL servers:
// claims under contention, durability across crashes, failovers and
// restores, upgrades, and lib/pq as the driver. It is a module of its own
// so that a library user's module never requires what only these suites
// use (lib/pq).
package dbtest

import (
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestMain runs four tests at a time (they wait on servers, not the CPU),
// stops the shared test server after the tests and fails the run
// if any goroutine outlives them.
func TestMain(m *testing.M) { pgtest.MainWaiting(m) }
