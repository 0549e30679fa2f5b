package table

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

func TestRelease(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	rowOwner := func() (owner string, epoch int64, free bool) {
		t.Helper()
		err := db.QueryRowContext(clitest.Ctx(t), `SELECT owner, epoch, expires_at = '-infinity' FROM snowflake_nodes WHERE node_id = 0`).
			Scan(&owner, &epoch, &free)
		if err != nil {
			t.Fatal(err)
		}
		return
	}

	// Declined, or no answer: nothing changes.
	r := harness.RunWith(t, "n\n", nil, "release", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "Evict held, owner web-1, epoch 3, of node ID 0") ||
		!strings.Contains(r.Stderr, "not released: the answer was not yes") {
		t.Errorf("declined release: %+v", r)
	}
	r = harness.RunWith(t, "", nil, "release", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "pass --yes") {
		t.Errorf("release with no answer: %+v", r)
	}
	if owner, _, free := rowOwner(); owner != "web-1" || free {
		t.Fatalf("a declined release changed the row: owner %q, free %v", owner, free)
	}

	// Another epoch: refused, whatever the answer, with what the current
	// claim is.
	r = harness.RunWith(t, "y\n", nil, "release", "0", "--epoch", "2", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 0 is at epoch 3, not 2: the claim of epoch 2 has ended",
		"the current one (owner web-1, held, expires in 12m) is not evicted", "nothing released")
	r = harness.RunWith(t, "y\n", nil, "release", "0", "--epoch", "7", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 0 has not reached epoch 7: its current claim is epoch 3 (owner web-1, held, expires in 12m); nothing released")
	r = harness.Run(t, "release", "1", "--epoch", "9", "--yes", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, `its current claim is epoch 5 (owner "web-2\x1b[2J\x1b[31mred\u202e", expired 42m ago)`)
	clitest.WantExit(t, harness.Run(t, "release", "3", "--epoch", "1", "--yes", "--dsn", dsn), cli.ExitFailure, "node ID 3 was never claimed")
	clitest.WantExit(t, harness.Run(t, "release", "2", "--epoch", "1", "--yes", "--dsn", dsn), cli.ExitFailure, "is at epoch 2, not 1", "the current one (free)")

	// Confirmed.
	r = harness.RunWith(t, "yes\n", nil, "release", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "released node ID 0 (epoch 3, owner web-1); the next holder stamps after ") {
		t.Fatalf("confirmed release: %+v", r)
	}
	if owner, epoch, free := rowOwner(); owner != "" || epoch != 3 || !free {
		t.Errorf("after release: owner %q, epoch %d, free %v; want free at epoch 3", owner, epoch, free)
	}
	clitest.WantExit(t, harness.Run(t, "release", "0", "--epoch", "3", "--yes", "--dsn", dsn), cli.ExitFailure, "already free")

	// An expired lease can be released too; --yes asks nothing.
	r = harness.Run(t, "release", "1", "--epoch", "5", "--yes", "--dsn", dsn)
	if r.Code != 0 || r.Stderr != "" {
		t.Errorf("release --yes of an expired lease: %+v", r)
	}
	var reason string
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*)::text FROM snowflake_nodes WHERE owner <> ''`).Scan(&reason); err != nil || reason != "0" {
		t.Errorf("rows still owned after the releases: %s, %v", reason, err)
	}
}

func TestReleaseBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "release", "3"), cli.ExitUsage, "--epoch is required")
	clitest.WantExit(t, harness.Run(t, "release", "3", "--epoch", "0"), cli.ExitUsage, "epochs start at 1")
	clitest.WantExit(t, harness.Run(t, "release", "3", "--epoch", "x"), cli.ExitUsage, "--epoch")
	clitest.WantExit(t, harness.Run(t, "release", "2000000", "--epoch", "1"), cli.ExitUsage, "out of range")
	clitest.WantExit(t, harness.Run(t, "release", "--epoch", "1"), cli.ExitUsage, "one node ID")
}
