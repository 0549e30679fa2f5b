package table

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jackc/pgx/v5"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// evilOwner holds escape sequences that would clear and recolour a
// terminal, and a right-to-left override.
const evilOwner = "web-2\x1b[2J\x1b[31mred\u202e"

// seedList creates the tables for node IDs 0-3 with init and sets their
// rows, at offsets from the server's now() that leave half a unit of slack
// to the relative times printed: node 0 held, 1 expired, 2 released, 3
// never claimed.
func seedList(t *testing.T) (*sql.DB, string) {
	t.Helper()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "4")
	ms := func(offset string) string {
		return "(extract(epoch from now()) * 1000)::bigint + (extract(epoch from interval '" + offset + "') * 1000)::bigint"
	}
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'web-1', epoch = 3, acquired_at = now() - interval '3h30m',
		expires_at = now() + interval '12m30s', horizon_ms = `+ms("12m30s")+` WHERE node_id = 0`)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = $1, epoch = 5, acquired_at = now() - interval '2h30m',
		expires_at = now() - interval '42m30s', horizon_ms = `+ms("-42 minutes -30 seconds")+` WHERE node_id = 1`, evilOwner)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = '', epoch = 2, acquired_at = now() - interval '50h',
		expires_at = '-infinity', horizon_ms = `+ms("-49 hours -30 minutes")+` WHERE node_id = 2`)
	return db, dsn
}

func TestListGolden(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"list", nil},
		{"list_all", []string{"--all"}},
		{"list_expired", []string{"--state", "expired"}},
		{"list_wide", []string{"-o", "wide", "--all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := harness.Must(t, append([]string{"list", "--dsn", dsn}, tc.args...)...)
			if strings.Contains(out, "\x1b") || strings.Contains(out, "\u202e") {
				t.Errorf("the owner's escape sequence reached the output: %q", out)
			}
			clitest.Golden(t, tc.name, clitest.Normalize(out))
		})
	}
}

// TestListJSON: -o json has every row's exact values, as the database holds
// them.
func TestListJSON(t *testing.T) {
	t.Parallel()
	db, dsn := seedList(t)
	var doc struct {
		Table   string    `json:"table"`
		Now     time.Time `json:"now"`
		NowMs   int64     `json:"now_ms"`
		Summary summary   `json:"summary"`
		Nodes   []struct {
			NodeID       int64      `json:"node_id"`
			State        string     `json:"state"`
			Owner        string     `json:"owner"`
			Epoch        int64      `json:"epoch"`
			AcquiredAt   *time.Time `json:"acquired_at"`
			AcquiredAtMs *int64     `json:"acquired_at_ms"`
			ExpiresAt    *time.Time `json:"expires_at"`
			ExpiresAtMs  *int64     `json:"expires_at_ms"`
			HorizonMs    int64      `json:"horizon_ms"`
		} `json:"nodes"`
	}
	out := harness.Must(t, "list", "--dsn", dsn, "--all", "-o", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := (summary{Held: 1, Free: 2, Expired: 1, Total: 4}); doc.Summary != want || doc.Table != "snowflake_nodes" {
		t.Errorf("summary %+v of %q, want %+v of snowflake_nodes", doc.Summary, doc.Table, want)
	}
	if doc.Now.UnixMilli() != doc.NowMs || time.Since(doc.Now).Abs() > time.Hour {
		t.Errorf("now %v / %d", doc.Now, doc.NowMs)
	}
	if len(doc.Nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(doc.Nodes))
	}
	wantStates := []string{"held", "expired", "free", "free"}
	for i, n := range doc.Nodes {
		var (
			owner             string
			epoch, horizon    int64
			acquired, expires sql.NullTime
		)
		err := db.QueryRowContext(clitest.Ctx(t), `SELECT owner, epoch, acquired_at, CASE WHEN isfinite(expires_at) THEN expires_at END, horizon_ms
			FROM snowflake_nodes WHERE node_id = $1`, n.NodeID).Scan(&owner, &epoch, &acquired, &expires, &horizon)
		if err != nil {
			t.Fatal(err)
		}
		if n.NodeID != int64(i) || n.State != wantStates[i] || n.Owner != owner || n.Epoch != epoch || n.HorizonMs != horizon {
			t.Errorf("node %d: %+v; the row holds owner %q, epoch %d, horizon %d, state %s", i, n, owner, epoch, horizon, wantStates[i])
		}
		checkTime := func(name string, got *time.Time, gotMs *int64, want sql.NullTime) {
			switch {
			case !want.Valid && (got != nil || gotMs != nil):
				t.Errorf("node %d: %s = %v, want null", i, name, got)
			case want.Valid && (got == nil || gotMs == nil):
				t.Errorf("node %d: %s is null, want %v", i, name, want.Time)
			case want.Valid && (!got.Equal(want.Time) || *gotMs != want.Time.UnixMilli() || got.Location() != time.UTC):
				t.Errorf("node %d: %s = %v (%d), want %v in UTC", i, name, got, *gotMs, want.Time)
			}
		}
		checkTime("acquired_at", n.AcquiredAt, n.AcquiredAtMs, acquired)
		checkTime("expires_at", n.ExpiresAt, n.ExpiresAtMs, expires)
	}
}

func TestListBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "list", "--state", "busy"), cli.ExitUsage, `--state "busy"`)
	clitest.WantExit(t, harness.Run(t, "list", "-o", "csv"), cli.ExitUsage, `-o "csv"`, "table, wide, json, yaml")
	clitest.WantExit(t, harness.Run(t, "list", "extra"), cli.ExitUsage, "no arguments")
	clitest.WantExit(t, harness.Run(t, "list", "--table", "Bad-Name"), cli.ExitUsage, "--table")
	clitest.WantExit(t, harness.Run(t, "list", "--table", "select"), cli.ExitUsage, "reserved")
}

// TestListTableMissing: a database without the table gets a one-line error
// that says how to create it.
func TestListTableMissing(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	clitest.WantExit(t, harness.Run(t, "list", "--dsn", dsn, "--table", "ids"), cli.ExitFailure,
		"table ids does not exist", `"nodeid init --dsn `+cli.ShellQuote(dsn)+` --table ids"`, `"nodeid schema --table ids"`)
	clitest.WantExit(t, harness.Run(t, "show", "3", "--dsn", dsn), cli.ExitFailure, "table snowflake_nodes does not exist", "nodeid init")
}

// TestDatabaseURL: without --dsn the command reads DATABASE_URL.
func TestDatabaseURL(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	r := harness.RunWith(t, "", map[string]string{cli.EnvDatabaseURL: dsn}, "list")
	if r.Code != 0 || !strings.Contains(r.Stdout, "web-1") {
		t.Fatalf("list with DATABASE_URL: %+v", r)
	}
}

// TestLibpqEnvironment: without --dsn and DATABASE_URL the command reads
// PGHOST, PGPORT, PGUSER and PGDATABASE, as libpq does.
func TestLibpqEnvironment(t *testing.T) {
	_, dsn := seedList(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGHOST", cfg.Host)
	t.Setenv("PGPORT", strconv.Itoa(int(cfg.Port)))
	t.Setenv("PGUSER", cfg.User)
	t.Setenv("PGDATABASE", cfg.Database)
	t.Setenv("PGSSLMODE", "disable")
	out := harness.Must(t, "list")
	if !strings.Contains(out, "web-1") {
		t.Fatalf("list from the libpq environment: %s", out)
	}
}

// withoutNow reads a list document, JSON or YAML, and drops its time of
// reading, which differs between two runs.
func withoutNow(t *testing.T, doc string, isYAML bool) string {
	t.Helper()
	var v map[string]any
	var err error
	if isYAML {
		err = yaml.Unmarshal([]byte(doc), &v)
	} else {
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		err = dec.Decode(&v)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	delete(v, "now")
	delete(v, "now_ms")
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestListYAML: -o yaml holds what -o json holds, and prints no control
// character of an owner raw.
func TestListYAML(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	y := harness.Must(t, "list", "--dsn", dsn, "--all", "-o", "yaml")
	j := harness.Must(t, "list", "--dsn", dsn, "--all", "-o", "json")
	clitest.NoControls(t, y)
	if a, b := withoutNow(t, y, true), withoutNow(t, j, false); a != b {
		t.Errorf("-o yaml holds\n%s\n-o json holds\n%s", a, b)
	}
	if !strings.Contains(y, "\n  - node_id: 1\n    state: expired\n    owner: \"web-2\\e[2J\\e[31mred\\u202e\"\n") { // YAML's escape of ESC
		t.Errorf("list -o yaml:\n%s", y)
	}
}

// TestListNoHeaders: --no-headers prints the rows of the table and nothing
// else.
func TestListNoHeaders(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	for _, o := range []string{"table", "wide"} {
		full := strings.Split(strings.TrimSuffix(harness.Must(t, "list", "--dsn", dsn, "--all", "-o", o), "\n"), "\n")
		rows := harness.Must(t, "list", "--dsn", dsn, "--all", "-o", o, "--no-headers")
		// The columns' widths may differ without the header: compare cells.
		got := strings.Split(strings.TrimSuffix(rows, "\n"), "\n")
		want := full[1 : len(full)-1]
		if len(got) != len(want) || len(got) != 4 {
			t.Fatalf("-o %s --no-headers: %d lines, want the %d rows:\n%s", o, len(got), len(want), rows)
		}
		for i := range got {
			if g, w := strings.Fields(got[i]), strings.Fields(want[i]); strings.Join(g, " ") != strings.Join(w, " ") {
				t.Errorf("-o %s --no-headers: row %d is %q, want %q", o, i, got[i], want[i])
			}
		}
	}
	if out := harness.Must(t, "list", "--dsn", dsn, "--state", "held", "--no-headers"); out != "0  held  web-1  3  3h ago  in 12m  in 12m\n" {
		t.Errorf("list --state held --no-headers: %q", out)
	}
	if out := harness.Must(t, "list", "--dsn", dsn, "--state", "held", "--no-headers", "-o", "json"); !strings.Contains(out, `"held": 1`) {
		t.Errorf("--no-headers changed -o json: %s", out)
	}
}

// TestListEmpty: a list with no rows to show says why, instead of a bare
// header; with --no-headers it prints nothing.
func TestListEmpty(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "4")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no node IDs in use: the 4 of table snowflake_nodes were never claimed (--all lists them)\n"},
		{[]string{"--state", "held"}, "no node ID is held; held 0 / free 4 / expired 0 / total 4\n"},
		{[]string{"--state", "free"}, "no node ID in use is free; 4 were never claimed (--all lists them); held 0 / free 4 / expired 0 / total 4\n"},
		{[]string{"--state", "expired", "--all"}, "no node ID is expired; held 0 / free 4 / expired 0 / total 4\n"},
		{[]string{"--no-headers"}, ""},
	} {
		if out := harness.Must(t, append([]string{"list", "--dsn", dsn}, tc.args...)...); out != tc.want {
			t.Errorf("list %v: %q, want %q", tc.args, out, tc.want)
		}
	}
	clitest.ExecSQL(t, db, "DELETE FROM snowflake_nodes")
	if out, want := harness.Must(t, "list", "--dsn", dsn), "table snowflake_nodes has no rows: \"nodeid init --dsn "+cli.ShellQuote(dsn)+" --table snowflake_nodes\" adds the node range\n"; out != want {
		t.Errorf("list of an empty table: %q, want %q", out, want)
	}
}

// TestQuarantineShown: after a failover, the node IDs last written before it
// show as quarantined, in list, show and their JSON, until they are
// claimable again. (The new generation a lease statement began is set by
// hand here; the failover tests of the root package make it for real.)
func TestQuarantineShown(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--nodes", "3", "--max-ttl", "30s")
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes SET owner = 'web-1', epoch = 1, acquired_at = now(), expires_at = now() + interval '1h' WHERE node_id = 2`)
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes_config SET generation = 2, generation_at = now(), quarantine_until_ms = (extract(epoch FROM now()) * 1000)::bigint + 33000`)
	out := harness.Must(t, "list", "--dsn", dsn, "--all")
	for _, want := range []string{"0     quarantined", "1     quarantined", "2     held", "held 1 / free 0 / expired 0 / quarantined 2 / total 3; replication async"} {
		if !strings.Contains(out, want) {
			t.Errorf("list does not show %q:\n%s", want, out)
		}
	}
	if out := harness.Must(t, "show", "0", "--dsn", dsn); !strings.Contains(out, "quarantine  until") || !strings.Contains(out, "generation  1 (the table records async replication)") {
		t.Errorf("show of a quarantined node ID:\n%s", out)
	}
	var doc struct {
		Nodes []struct {
			State              string `json:"state"`
			QuarantinedUntilMs *int64 `json:"quarantined_until_ms"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(harness.Must(t, "list", "--dsn", dsn, "--all", "--state", "quarantined", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Nodes) != 2 || doc.Nodes[0].QuarantinedUntilMs == nil {
		t.Errorf("list --state quarantined -o json: %+v", doc)
	}
	// Once the quarantine is over, they are free again.
	clitest.ExecSQL(t, db, `UPDATE snowflake_nodes_config SET quarantine_until_ms = (extract(epoch FROM now()) * 1000)::bigint - 1`)
	if out := harness.Must(t, "list", "--dsn", dsn, "--all"); !strings.Contains(out, "held 1 / free 2 / expired 0 / total 3") {
		t.Errorf("after the quarantine:\n%s", out)
	}
}

// TestNotANodeidTable: a table that exists but is not nodeid's (an
// application's, a catalog's) is named as such, and no init that would
// fail on it is advised.
func TestNotANodeidTable(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	clitest.ExecSQL(t, db, `CREATE TABLE orders (id bigint PRIMARY KEY, total numeric)`)
	for _, args := range [][]string{
		{"list", "--table", "orders"},
		{"show", "1", "--table", "orders"},
		{"list", "--table", "pg_catalog.pg_class"},
	} {
		r := harness.Run(t, append(args, "--dsn", dsn)...)
		clitest.WantExit(t, r, cli.ExitFailure, "table "+args[len(args)-1]+" in database", "is not a nodeid table", "name nodeid's table with --table")
		if strings.Contains(r.Stderr, "nodeid init --dsn") {
			t.Errorf("nodeid %s advises an init that fails on that table: %s", strings.Join(args, " "), r.Stderr)
		}
	}
	// A table that does not exist still gets init's advice.
	clitest.WantExit(t, harness.Run(t, "list", "--table", "nosuch", "--dsn", dsn), cli.ExitFailure, "table nosuch does not exist", "nodeid init --dsn")
}
