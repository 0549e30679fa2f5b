package table

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// quarantineLeft returns, from list -o json, how long node ID 0 stays
// quarantined and whether it waits for a declaration instead.
func quarantineLeft(t *testing.T, dsn string, args ...string) (time.Duration, bool) {
	t.Helper()
	var doc struct {
		NowMs int64 `json:"now_ms"`
		Nodes []struct {
			State          string `json:"state"`
			UntilMs        *int64 `json:"quarantined_until_ms"`
			RestorePending bool   `json:"restore_pending"`
		} `json:"nodes"`
	}
	out := harness.Must(t, append([]string{"list", "--dsn", dsn, "--all", "-o", "json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) == 0 {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	n := doc.Nodes[0]
	if n.State != "quarantined" {
		return 0, false
	}
	if n.UntilMs == nil {
		return 0, n.RestorePending
	}
	return time.Duration(*n.UntilMs-doc.NowMs) * time.Millisecond, n.RestorePending
}

// F1: a restore is declared with the longest TTL the old history's holders
// may hold, which a copy cannot know: --restored without --max-ttl is bad
// usage (an earlier version quarantined for the copy's maximum), and with
// it every node ID is quarantined for that TTL and a tenth, even when the
// table records a shorter maximum.
func TestInitRestoredDeclaresTheBound(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2", "--max-ttl", "3s")
	clitest.WantExit(t, harness.Run(t, "init", "--dsn", dsn, "--restored"), cli.ExitUsage,
		"--restored needs --max-ttl", "which a copy cannot know")
	if left, _ := quarantineLeft(t, dsn); left != 0 {
		t.Fatalf("a refused --restored quarantined node ID 0 for %s", left)
	}
	out := harness.Must(t, "init", "--dsn", dsn, "--restored", "--max-ttl", "12s")
	if !strings.Contains(out, "every node ID is quarantined until") || !strings.Contains(out, "(the longest lease of the old history, 12s, and a tenth)") {
		t.Errorf("init --restored --max-ttl 12s: %q", out)
	}
	if left, _ := quarantineLeft(t, dsn); left < 12*time.Second || left > 14*time.Second {
		t.Errorf("node ID 0 is quarantined for %s after a restore declared with 12s; want 13.2s", left)
	}
	// A bound below the recorded maximum: the maximum counts.
	out = harness.Must(t, "init", "--dsn", dsn, "--restored", "--max-ttl", "3s")
	if !strings.Contains(out, "(the longest lease of the old history, 12s, and a tenth)") {
		t.Errorf("init --restored --max-ttl 3s on a table whose maximum is 12s: %q", out)
	}
}

// F1: a table whose server is not the one it records (another system
// identifier) hands out no node ID until a restore is declared: run exits
// with code 4 naming the command, list shows why, and init says so.
func TestRestorePending(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2", "--max-ttl", "3s")
	// As after a dump restored into another cluster: the table records
	// another server than the one it is on.
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes_config SET server_id = server_id + 1`)
	r := harness.Run(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "true")
	clitest.WantExit(t, r, cli.ExitRestorePending, "restore not declared", "nodeid init --restored --max-ttl D")
	if left, pending := quarantineLeft(t, dsn); !pending {
		t.Errorf("list -o json after the move: quarantined for %s, restore pending %v; want it pending", left, pending)
	}
	if out := harness.Must(t, "list", "--dsn", dsn, "--all"); !strings.Contains(out, "restore not declared") {
		t.Errorf("list after the move:\n%s", out)
	}
	r = harness.Run(t, "init", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitOK, "hands out no node ID until you declare the restore", "nodeid init --restored --max-ttl D")
	// The quarantine runs 3.3 s from the declaration: what is left when
	// list reads it is that, less the time since the declaration began
	// (on a loaded machine, a good part of a second).
	declared := time.Now()
	harness.Must(t, "init", "--dsn", dsn, "--restored", "--max-ttl", "3s")
	left, pending := quarantineLeft(t, dsn)
	if atLeast := 3300*time.Millisecond - time.Since(declared) - 100*time.Millisecond; pending || left < atLeast || left > 3400*time.Millisecond {
		t.Errorf("after the declaration: quarantined for %s, pending %v; want 3.3s from the declaration, at least %s when read", left, pending, atLeast)
	}
}

// F1: with asynchronous replication a raise of the maximum TTL is pending
// until every standby has replayed it: init waits for them and gives up
// (the raise stays pending, leases may not use it) while one receives
// nothing; a role that cannot see the positions of the standbys that
// stream without a slot is refused unless the operator has checked them
// (--no-standby-wait), and one that streams from a slot is judged by its
// slot; once the standby has caught up, init confirms the raise. An
// earlier version took a raise at once, and a failover to a standby that
// lacked it quarantined for the old maximum only. A table's creation is
// pending in the same way.
func TestInitRaiseWaitsForTheStandbys(t *testing.T) {
	t.Parallel()
	ctx := clitest.Ctx(t)
	pair := pgtest.NewPair(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dsn := pair.Primary.DSN(dbName)
	role := fmt.Sprintf("owner_%d", time.Now().UnixNano())
	if err := pair.Primary.Exec(ctx, dbName, `CREATE ROLE `+role+` LOGIN PASSWORD '`+clitest.Secret+`'; CREATE SCHEMA ids AUTHORIZATION `+role); err != nil {
		t.Fatal(err)
	}
	owner := clitest.WithUser(t, dsn, role, clitest.Secret)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2", "--max-ttl", "3s")
	// A second standby, without a slot.
	slotless := pair.AddStandbyWithoutSlot(t)
	if err := slotless.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	// The creation, on a primary with standbys, is pending until they
	// have it: the owner, who may not see how far the one without a slot
	// has replayed, is refused unless it has checked.
	// (The slot's standby may not have the creation yet when init first
	// reads the standbys: init then says it waits, before the refusal.)
	r := harness.Run(t, "init", "--dsn", owner, "--table", "ids.nodes", "--nodes", "2", "--max-ttl", "3s")
	if waiting, rest, ok := strings.Cut(r.Stderr, "\n"); ok && strings.HasPrefix(waiting, "nodeid: waiting for the standbys and replication slots to replay the creation") {
		r.Stderr = rest
	}
	clitest.WantExit(t, r, cli.ExitFailure, "the creation of table ids.nodes is recorded as pending", "pg_read_all_stats", "--no-standby-wait")
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", owner, "--table", "ids.nodes", "--ttl", "3s", "--", "true"), cli.ExitFailure, "creation not confirmed")
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"list"}, []string{"creation not confirmed"}},
		{[]string{"list", "--all"}, []string{"quarantined", "creation not confirmed"}},
		{[]string{"show", "0"}, []string{"quarantined", "until every standby has replayed the table's creation"}},
	} {
		r := harness.Run(t, append(c.args, "--dsn", owner, "--table", "ids.nodes")...)
		for _, w := range c.wants {
			if r.Code != cli.ExitOK || !strings.Contains(r.Stdout+r.Stderr, w) {
				t.Errorf("nodeid %s on a table whose creation is pending: %+v; want %q", strings.Join(c.args, " "), r, w)
			}
		}
	}
	harness.Must(t, "init", "--dsn", owner, "--table", "ids.nodes", "--nodes", "2", "--max-ttl", "3s", "--no-standby-wait")
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut()

	// The standby, cut off, is seen by its replication slot.
	r = harness.Run(t, "init", "--dsn", dsn, "--max-ttl", "12s", "--standby-wait", "2s")
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "waiting for the standbys and replication slots to replay the raise") ||
		!strings.Contains(r.Stderr, "stays pending") || !strings.Contains(r.Stderr, "have not replayed") {
		t.Errorf("init --max-ttl 12s with a standby cut off: %+v", r)
	}
	harness.Must(t, "run", "--dsn", dsn, "--ttl", "3s", "--", "true") // the recorded maximum serves on
	clitest.WantExit(t, harness.Run(t, "run", "--dsn", dsn, "--ttl", "12s", "--", "true"), cli.ExitUsage, "above the maximum 3s")

	pair.Repl.Restore()
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	// The table's owner, who may not see how far the streaming standby
	// has replayed, is refused, unless it has checked the standbys.
	r = harness.Run(t, "init", "--dsn", owner, "--table", "ids.nodes", "--max-ttl", "12s", "--standby-wait", "2s")
	clitest.WantExit(t, r, cli.ExitFailure, "cannot see how far standby", "pg_read_all_stats", "--no-standby-wait")
	r = harness.Run(t, "init", "--dsn", owner, "--table", "ids.nodes", "--max-ttl", "12s", "--no-standby-wait")
	clitest.WantExit(t, r, cli.ExitOK, "raised from 3s to 12s")

	r = harness.Run(t, "init", "--dsn", dsn, "--max-ttl", "12s")
	clitest.WantExit(t, r, cli.ExitOK, "raised from 3s to 12s")
	if !strings.Contains(r.Stdout, "maximum TTL 12s") {
		t.Errorf("init once the standby caught up: %+v", r)
	}

	// Without the standby that had no slot, the owner's raise is judged
	// by the other's slot.
	if err := slotless.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testkit.Until(t, time.Minute, "the slotless standby's walsender gone", func() error {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_replication`).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("%d standbys streaming (%v)", n, err)
		}
		return nil
	})
	r = harness.Run(t, "init", "--dsn", owner, "--table", "ids.nodes", "--max-ttl", "20s", "--standby-wait", "30s")
	clitest.WantExit(t, r, cli.ExitOK, "raised from 12s to 20s")
}
