package table

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

func TestEvict(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	row := func() (owner string, epoch int64, expiresIn time.Duration) {
		t.Helper()
		var ms int64
		err := db.QueryRowContext(clitest.Ctx(t), `SELECT owner, epoch, CASE WHEN isfinite(expires_at) THEN (extract(epoch FROM expires_at - now()) * 1000)::bigint ELSE 0 END
			FROM snowflake_nodes WHERE node_id = 0`).Scan(&owner, &epoch, &ms)
		if err != nil {
			t.Fatal(err)
		}
		return owner, epoch, time.Duration(ms) * time.Millisecond
	}

	// Declined, or no answer: nothing changes.
	r := harness.RunWith(t, "n\n", nil, "evict", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "Evict held, owner web-1, epoch 3, of node ID 0") ||
		!strings.Contains(r.Stderr, "the node ID becomes claimable once the lease has expired and its horizon passed") ||
		!strings.Contains(r.Stderr, "not evicted: the answer was not yes") {
		t.Errorf("declined eviction: %+v", r)
	}
	r = harness.RunWith(t, "", nil, "evict", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "pass --yes") {
		t.Errorf("eviction with no answer: %+v", r)
	}
	if owner, _, _ := row(); owner != "web-1" {
		t.Fatalf("a declined eviction changed the row: owner %q", owner)
	}

	// Another epoch: refused, whatever the answer, with what the current
	// claim is.
	r = harness.RunWith(t, "y\n", nil, "evict", "0", "--epoch", "2", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 0 is at epoch 3, not 2: the claim of epoch 2 has ended",
		"the current one (owner web-1, held, expires in 12m) is not evicted", "nothing evicted")
	r = harness.RunWith(t, "y\n", nil, "evict", "0", "--epoch", "7", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 0 has not reached epoch 7: its current claim is epoch 3 (owner web-1, held, expires in 12m); nothing evicted")
	r = harness.Run(t, "evict", "1", "--epoch", "9", "--yes", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, `its current claim is epoch 5 (owner "web-2\x1b[2J\x1b[31mred\u202e", expired 42m ago)`)
	clitest.WantExit(t, harness.Run(t, "evict", "3", "--epoch", "1", "--yes", "--dsn", dsn), cli.ExitFailure, "node ID 3 was never claimed")
	clitest.WantExit(t, harness.Run(t, "evict", "2", "--epoch", "1", "--yes", "--dsn", dsn), cli.ExitFailure, "is at epoch 2, not 1", "the current one (free)")
	// A node ID beyond the table: its range, as show gives it, and no advice to add it.
	r = harness.Run(t, "evict", "3000", "--epoch", "1", "--yes", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 3000 is not in table snowflake_nodes, whose range is 0-3")
	if strings.Contains(r.Stderr, "nodeid init") {
		t.Errorf("evict advises adding the node ID it was to evict: %s", r.Stderr)
	}

	// Confirmed: the holder loses the row, which keeps its expiry: it is
	// evicted, claimable once the lease has expired.
	r = harness.RunWith(t, "yes\n", nil, "evict", "0", "--epoch", "3", "--dsn", dsn)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "evicted node ID 0 (epoch 3, owner web-1): its holder stops at its next renewal; the node ID is claimable after ") ||
		!strings.Contains(r.Stdout, "(in 12m)") {
		t.Fatalf("confirmed eviction: %+v", r)
	}
	if owner, epoch, left := row(); owner != "" || epoch != 3 || left < 11*time.Minute {
		t.Errorf("after the eviction: owner %q, epoch %d, expiring in %s; want no owner at epoch 3, the lease's expiry kept", owner, epoch, left)
	}
	if out := harness.Must(t, "list", "--dsn", dsn, "--state", "evicted"); !strings.Contains(out, "0     evicted  -") || !strings.Contains(out, "/ evicted 1") {
		t.Errorf("list of the evicted node ID:\n%s", out)
	}
	clitest.WantExit(t, harness.Run(t, "evict", "0", "--epoch", "3", "--yes", "--dsn", dsn), cli.ExitFailure, "is not held (evicted)")

	// An expired lease can be evicted too; --yes asks nothing. The old name
	// of the command still works, and says it is deprecated.
	r = harness.Run(t, "release", "1", "--epoch", "5", "--yes", "--dsn", dsn)
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, `Command "release" is deprecated`) || !strings.Contains(r.Stdout, "evicted node ID 1") {
		t.Errorf("release --yes of an expired lease: %+v", r)
	}
	var owned string
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*)::text FROM snowflake_nodes WHERE owner <> ''`).Scan(&owned); err != nil || owned != "0" {
		t.Errorf("rows still owned after the evictions: %s, %v", owned, err)
	}
}

func TestEvictBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "evict", "3"), cli.ExitUsage, "--epoch is required")
	clitest.WantExit(t, harness.Run(t, "evict", "3", "--epoch", "0"), cli.ExitUsage, "epochs start at 1")
	clitest.WantExit(t, harness.Run(t, "evict", "3", "--epoch", "x"), cli.ExitUsage, "--epoch")
	clitest.WantExit(t, harness.Run(t, "evict", "2000000", "--epoch", "1"), cli.ExitUsage, "out of range")
	clitest.WantExit(t, harness.Run(t, "evict", "--epoch", "1"), cli.ExitUsage, "one node ID")
}
