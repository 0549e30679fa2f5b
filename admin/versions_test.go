package admin

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// previousSQL reads a statement of the version whose lease table had
// "generation" (testdata/previous/README).
func previousSQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "previous", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// scriptStatements splits a script into its statements as psql does: at
// each semicolon that ends a line outside a dollar-quoted body.
func scriptStatements(script string) []string {
	var out []string
	var cur strings.Builder
	quote := ""
	for _, line := range strings.SplitAfter(script, "\n") {
		cur.WriteString(line)
		for _, tag := range []string{"$nodeid$", "$q$"} {
			if n := strings.Count(line, tag); n%2 == 1 {
				switch quote {
				case "":
					quote = tag
				case tag:
					quote = ""
				}
			}
		}
		if quote == "" && strings.HasSuffix(strings.TrimSpace(line), ";") {
			if st := strings.TrimSpace(cur.String()); st != "" {
				out = append(out, st)
			}
			cur.Reset()
		}
	}
	if st := strings.TrimSpace(cur.String()); st != "" {
		out = append(out, st)
	}
	return out
}

// The previous version's DDL, applied after this version's (an old process
// that applies its DDL at start during a rolling deploy, an old nodeid
// init), must fail and change nothing that matters: it would add back the
// lease table's "generation", whose renaming makes that version's
// statements fail, and raise the maximum TTL at once. Then, after a
// failover that lost Z's claim, an old process's renewal reaching the new
// primary first ran that version's generation check, which started a
// generation without a quarantine, and the next claim took node 0 inside
// Z's range (5.8 s both could stamp, in a review). Applied in one
// statement the script fails as a whole; applied statement by statement,
// as psql does, its DO block fails as a whole, and the statements after
// it find no "generation" in the lease table.
func TestPreviousVersionDDLFailsOnTheTable(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second // the previous DDL's maximum
	pair, dbName := rangePair(t, 1, ttl)
	ctx := ctxOf(t)
	ddl := previousSQL(t, "schema.sql")
	if err := pair.Primary.Exec(ctx, dbName, ddl); err == nil {
		t.Fatal("the previous version's DDL, in one statement, ran on this version's table")
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	before, err := p.ReadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stmts := scriptStatements(ddl)
	failedDO := false
	for _, st := range stmts {
		_, err := p.DB().ExecContext(ctx, st)
		if strings.HasPrefix(st, "DO ") {
			if err == nil {
				t.Fatal("the previous version's DO block ran on this version's table")
			}
			failedDO = true
			t.Logf("its DO block: %v", err)
		}
	}
	if !failedDO || len(stmts) < 5 {
		t.Fatalf("the script split into %d statements, DO block among them: %v", len(stmts), failedDO)
	}
	var generation bool
	if err := p.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'generation' AND NOT attisdropped)`).Scan(&generation); err != nil || generation {
		t.Fatalf("the lease table has \"generation\" again after the previous DDL: %v, %v", generation, err)
	}
	if after, err := p.ReadConfig(ctx); err != nil || after.MaxTTL != before.MaxTTL || after.PendingMaxTTL != before.PendingMaxTTL || after.Generation != before.Generation {
		t.Fatalf("the configuration changed under the previous DDL: %+v, then %+v, %v", before, after, err)
	}

	// The rest of the review's trace: the old renewal must fail after a
	// failover, and the claim that follows must be quarantined.
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut()                                         // from here on the standby receives nothing
	z := claimNodeWithin(t, p, 0, "z", ttl, honest(ttl), 0) // lost in the failover
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", pair.Standby.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UnixMilli()
	if _, err := db.ExecContext(ctx, previousSQL(t, "renew.sql"), 1, "old", 1, ttl.Milliseconds(), now+ttl.Milliseconds(), now+ttl.Milliseconds()); err == nil {
		t.Fatal("the previous version's renewal ran on the new primary")
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	res, err := s.Claim(context.WithoutCancel(ctx), 0, 0, "c", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case res.OK && res.PrevHorizon < z.Horizon:
		t.Errorf("C claimed node 0 on the new primary %s after Z's lost claim, stamping after %d, inside Z's range (%d, %d]",
			res.Now.Sub(z.Now).Round(time.Millisecond), res.PrevHorizon, z.PrevHorizon, z.Horizon)
	case !res.OK && res.Refusal.Until < z.Horizon:
		t.Errorf("C refused, but not quarantined past Z's horizon %d: %+v", z.Horizon, res.Refusal)
	}
}
