package snowflake

import (
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestMain stops the shared test server after the tests and fails the run if
// any goroutine outlives them.
func TestMain(m *testing.M) { pgtest.Main(m) }
