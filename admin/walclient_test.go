package admin

import (
	"context"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/pgserver"
)

// startReceiveWAL streams the WAL of the server at addr to a directory of
// the test with pg_receivewal, from a physical slot made for it,
// synchronously (it reports each flush at once), as a backup tool does
// (Barman's streaming backups), until the test ends.
func startReceiveWAL(t *testing.T, addr, slot string) {
	t.Helper()
	bin, err := pgserver.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	dsn := "host=" + host + " port=" + port + " user=postgres"
	dir := t.TempDir()
	recv := filepath.Join(bin, "pg_receivewal")
	if out, err := exec.Command(recv, "-d", dsn, "--slot", slot, "--create-slot").CombinedOutput(); err != nil {
		t.Fatalf("pg_receivewal --create-slot: %v: %s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, recv, "-d", dsn, "--slot", slot, "--synchronous", "--no-loop", "-D", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
}

// waitReceiving waits until db's server streams to a WAL client that has
// written WAL and replayed none: the scenario's positive control.
func waitReceiving(t *testing.T, db *sql.DB) {
	t.Helper()
	testkit.Until(t, 30*time.Second, "pg_receivewal streams, writing and never replaying", testkit.True(func() bool {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM pg_stat_replication WHERE write_lsn IS NOT NULL AND replay_lsn IS NULL`).Scan(&n)
		return err == nil && n == 1
	}))
}

// E2: a WAL sender that streams to no server that may be promoted
// (pg_receivewal on a slot, as a backup tool streams) never blocks a
// creation or a raise, alone or beside a real standby, which is still
// waited for.
//
// An earlier version counted every WAL sender and every physical slot as a
// standby: the backup's sender reported no replayed position, ever, so a
// creation stayed pending and every Acquire waited.
func TestAWALClientBlocksNoConfirmation(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	pair := pgtest.NewPair(t)
	ctx := ctxOf(t)
	startReceiveWAL(t, pair.Primary.Addr(), "backup")
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	waitReceiving(t, p.DB())

	// Beside a real standby: the creation waits for it, and for it only.
	if err := pair.Primary.Exec(ctx, dbName, mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl})); err != nil {
		t.Fatal(err)
	}
	var waited []Standby
	settle, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.SettleCreation(settle, func(_ string, sbs []Standby) { waited = sbs }); err != nil {
		t.Fatalf("the creation beside pg_receivewal and a standby: %v (waited for %+v)", err, waited)
	}
	for _, sb := range waited {
		if sb.Name == "slot backup" || sb.Name == "pg_receivewal" {
			t.Errorf("the creation waited for the WAL client %+v", sb)
		}
	}
	if res, err := p.Claim(ctx, 0, 0, "a", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !res.OK {
		t.Fatalf("a claim once the creation is confirmed: %+v, %v", res, err)
	}

	// Alone: the standby is promoted away, and the old primary streams to
	// the WAL client only. A table created there is confirmed at once.
	pair.Repl.Cut()
	testkit.Until(t, 30*time.Second, "the standby is gone", testkit.True(func() bool {
		var n int
		err := p.DB().QueryRow(`SELECT count(*) FROM pg_stat_replication WHERE NOT (write_lsn IS NOT NULL AND replay_lsn IS NULL)`).Scan(&n)
		return err == nil && n == 0
	}))
	if _, err := p.DB().ExecContext(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name <> 'backup'`); err != nil {
		t.Fatal(err)
	}
	alone, err := New(p.DB(), Config{Table: "alone", MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alone.Create(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	if res, err := alone.Claim(ctx, 0, 0, "b", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !res.OK {
		t.Fatalf("the first claim of a table created beside pg_receivewal alone: %+v, %v; want node 0 at once", res, err)
	}
}
