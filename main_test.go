package nodeid

import (
	"fmt"
	"os"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// envHelperDSN, set in a process that TestConcurrentTableCreation started,
// makes the test binary that test's helper process instead.
const envHelperDSN = "NODEID_HELPER_DSN"

// TestMain stops the shared test server after the tests and fails the run if
// any goroutine outlives them; in a helper process it runs the helper.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(envHelperDSN); dsn != "" {
		if err := createTableHelper(dsn); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	pgtest.Main(m, "Example", "ExampleRegistry_CheckSchema", "ExampleFence", "ExampleLease_Verify")
}
