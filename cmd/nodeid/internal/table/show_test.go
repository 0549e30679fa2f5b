package table

import (
	"database/sql"
	"encoding/json"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// Fixed instants of the seeded history, far from the real clock.
const (
	t0Ms = 1577836700000 // 2019-12-31T23:58:20Z
	t1Ms = 1577836800000 // 2020-01-01T00:00:00Z
	t2Ms = 1577836860000 // one minute later
)

// seedHistory records three claims of node ID 1: epoch 3 by alpha
// (released), epoch 4 by a hostile owner (expired), epoch 5 by gamma (the
// current claim, whose horizon is the lease row's).
func seedHistory(t *testing.T, db *sql.DB) {
	t.Helper()
	clitest.ExecSQL(t, db, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(1, 3, 'alpha', now() - interval '5h30m', $4, now() - interval '4h30m', 'released', $1, 1),
		(1, 4, $3, now() - interval '4h30m', $1, now() - interval '3h30m', 'expired', $2, 1),
		(1, 5, 'gamma', now() - interval '2h30m', $2, NULL, NULL, NULL, 1)`, t1Ms, t2Ms, "evil\x1b]0;title\x07", t0Ms)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'gamma', epoch = 5 WHERE node_id = 1`)
}

func TestShowGolden(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	seedHistory(t, db)
	out := harness.Must(t, "show", "1", "--dsn", dsn)
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("an escape sequence reached the output: %q", out)
	}
	clitest.Golden(t, "show", clitest.Normalize(out))
	clitest.Golden(t, "show_limit", clitest.Normalize(harness.Must(t, "show", "1", "--limit", "1", "--dsn", dsn)))
	clitest.Golden(t, "show_never", clitest.Normalize(harness.Must(t, "show", "3", "--dsn", dsn)))
	clitest.Golden(t, "show_wide", clitest.Normalize(harness.Must(t, "show", "1", "-o", "wide", "--dsn", dsn)))
}

// TestShowYAML: -o yaml holds what -o json holds.
func TestShowYAML(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	seedHistory(t, db)
	y := harness.Must(t, "show", "1", "-o", "yaml", "--dsn", dsn)
	clitest.NoControls(t, y)
	if a, b := withoutNow(t, y, true), withoutNow(t, harness.Must(t, "show", "1", "-o", "json", "--dsn", dsn), false); a != b {
		t.Errorf("-o yaml holds\n%s\n-o json holds\n%s", a, b)
	}
}

func TestShowJSON(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	seedHistory(t, db)
	var doc struct {
		Node struct {
			NodeID int64  `json:"node_id"`
			Owner  string `json:"owner"`
			Epoch  int64  `json:"epoch"`
		} `json:"node"`
		History []struct {
			Epoch     int64   `json:"epoch"`
			Owner     string  `json:"owner"`
			EndReason string  `json:"end_reason"`
			EndedAtMs *int64  `json:"ended_at_ms"`
			FromMs    int64   `json:"from_ms"`
			HorizonMs int64   `json:"horizon_ms"`
			EndedAt   *string `json:"ended_at"`
		} `json:"history"`
	}
	out := harness.Must(t, "show", "1", "-o", "json", "--dsn", dsn)
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Node.NodeID != 1 || doc.Node.Owner != "gamma" || doc.Node.Epoch != 5 || len(doc.History) != 3 {
		t.Fatalf("show -o json: %+v", doc)
	}
	h := doc.History
	var rowHorizon int64
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT horizon_ms FROM snowflake_nodes WHERE node_id = 1`).Scan(&rowHorizon); err != nil {
		t.Fatal(err)
	}
	switch {
	case h[0].Epoch != 5 || h[0].EndedAt != nil || h[0].EndedAtMs != nil || h[0].FromMs != t2Ms || h[0].HorizonMs != rowHorizon:
		t.Errorf("current claim: %+v", h[0])
	case h[1].Epoch != 4 || h[1].Owner != "evil\x1b]0;title\x07" || h[1].EndReason != "expired" || h[1].EndedAtMs == nil || h[1].HorizonMs != t2Ms:
		t.Errorf("expired claim: %+v", h[1])
	case h[2].Epoch != 3 || h[2].Owner != "alpha" || h[2].EndReason != "released" || h[2].FromMs != t0Ms:
		t.Errorf("released claim: %+v", h[2])
	}
}

func TestShowBadInput(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	clitest.WantExit(t, harness.Run(t, "show"), cli.ExitUsage, "one node ID")
	clitest.WantExit(t, harness.Run(t, "show", "1", "2"), cli.ExitUsage, "one node ID")
	clitest.WantExit(t, harness.Run(t, "show", "abc"), cli.ExitUsage, `node ID "abc"`)
	clitest.WantExit(t, harness.Run(t, "show", "-3"), cli.ExitUsage)
	clitest.WantExit(t, harness.Run(t, "show", "1048576"), cli.ExitUsage, "out of range")
	clitest.WantExit(t, harness.Run(t, "show", "1", "--limit", "0"), cli.ExitUsage, "--limit")
	clitest.WantExit(t, harness.Run(t, "show", "1", "-o", "csv"), cli.ExitUsage, `-o "csv"`, "table, wide, json, yaml")
	clitest.WantExit(t, harness.Run(t, "show", "900", "--dsn", dsn), cli.ExitFailure, "node ID 900 is not in table snowflake_nodes, whose range is 0-3",
		"--table snowflake_nodes --range 900-900\" widens the range to 0-900, adding 897 rows")
}

// hintedCommand matches the command line a message advises, in double
// quotes.
var hintedCommand = regexp.MustCompile(`"(nodeid [^"]*)"`)

// shellWords splits line into words as sh does, quotes and all.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `for w in `+line+`; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatalf("sh cannot read %s: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestShowHintKeepsTable: show of a node ID the table lacks advises the
// init that adds it to the same table on the same database (with the
// --table and --dsn given, the DSN without its password, quoted for a
// shell); followed, that command widens that table and creates no other.
func TestShowHintKeepsTable(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The same database as a key=value string, which needs quoting, with
	// a password that must not be shown (the test server trusts local
	// connections, so the command works without it too).
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") +
		" password=" + clitest.Secret + " sslmode=disable"
	clitest.ExecSQL(t, db, "CREATE SCHEMA ids")
	harness.Must(t, "init", "--dsn", dsn, "--table", "ids.other", "--nodes", "4")

	r := harness.Run(t, "show", "900", "--table", "ids.other", "--dsn", kv)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 900 is not in table ids.other, whose range is 0-3",
		"widens the range to 0-900, adding 897 rows")
	m := hintedCommand.FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no command advised: %s", r.Stderr)
	}
	if strings.Contains(r.Stderr, clitest.Secret) {
		t.Errorf("the password was printed: %s", r.Stderr)
	}
	words := shellWords(t, m[1])
	wantDSN := strings.Replace(kv, " password="+clitest.Secret, "", 1)
	if want := []string{"nodeid", "init", "--dsn", wantDSN, "--table", "ids.other", "--range", "900-900"}; strings.Join(words, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the advised command reads as %q, want %q", words, want)
	}
	harness.Must(t, words[1:]...)
	var n int
	var other bool
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT count(*), to_regclass('public.snowflake_nodes') IS NOT NULL FROM ids.other`).Scan(&n, &other); err != nil {
		t.Fatal(err)
	}
	if n != 901 || other {
		t.Errorf("after the advised command: ids.other has %d rows (want 901), the default table exists: %v", n, other)
	}
	harness.Must(t, "show", "900", "--table", "ids.other", "--dsn", dsn)
}

// TestShowHintBeyondLayout: for a node ID beyond the default layout's 10
// node bits, show advises an init with the node bits that hold it, which
// init accepts (node IDs beyond every table's node bits are refused as
// arguments).
func TestShowHintBeyondLayout(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "4")
	r := harness.Run(t, "show", "5000", "--dsn", dsn)
	clitest.WantExit(t, r, cli.ExitFailure, "node ID 5000 is not in table snowflake_nodes, whose range is 0-3")
	m := hintedCommand.FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no command advised: %s", r.Stderr)
	}
	words := shellWords(t, m[1])
	if want := []string{"--range", "5000-5000", "--node-bits", "13"}; strings.Join(words[len(words)-4:], " ") != strings.Join(want, " ") {
		t.Errorf("the advised command reads as %q, want it to end with %q", words, want)
	}
	harness.Must(t, words[1:]...)
	harness.Must(t, "show", "5000", "--dsn", dsn)
}

// TestShowNothingStamped: a first claim released before it minted records
// no horizon; show prints "-" for it, not the epoch of 1970.
func TestShowNothingStamped(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "2")
	clitest.ExecSQL(t, db, `INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(0, 1, 'idle', now() - interval '2 hours', 0, now() - interval '1 hour', 'released', 0, 1)`)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = '', epoch = 1, acquired_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' WHERE node_id = 0`)
	out := harness.Must(t, "show", "0", "--dsn", dsn)
	if strings.Contains(out, "1970-01-01") {
		t.Errorf("show prints the epoch of 1970 for a claim that stamped nothing:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^1 +idle +2h ago +1h ago +released +- +-$`).MatchString(out) {
		t.Errorf("show does not print the claim that stamped nothing with \"-\" for both bounds:\n%s", out)
	}
}
