package admin

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/pgserver"
)

// waitQuery polls query on st's database until it answers true, or fails
// the test when ctx ends.
func waitQuery(t *testing.T, ctx context.Context, st *Store, what, query string, args ...any) {
	t.Helper()
	for {
		var ok bool
		err := st.DB().QueryRowContext(ctx, query, args...).Scan(&ok)
		if err == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error %v)", what, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond): // a poll of the condition
		}
	}
}

// A physical slot's restart_lsn says how far a standby has flushed only
// once a standby has replied through it: a slot created with WAL reserved
// (pg_create_physical_replication_slot(name, true), as Patroni and an
// operator giving a standby a slot do) starts at the last checkpoint's
// redo pointer, which may be past a creation its standby lacks. Made
// while the confirmation waits, such a slot counted as caught up, the
// creation was confirmed, and a failover to the standby it was made for,
// which lacked the creation, let a table created again there hand out
// the lost claim's node ID and epoch for the same milliseconds (6 s at a
// 6 s TTL). Now only the slots that existed when the mark was read count.
func TestASlotMadeAfterTheMarkDoesNotConfirm(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	second := pair.AddStandbyWithoutSlot(t) // streams without a slot, then is cut off
	if err := second.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	second.Repl.Cut()
	waitQuery(t, ctx, p, "the second standby to disconnect", `SELECT count(*) = 1 FROM pg_stat_replication`)
	pair.Repl.Blackhole() // the first standby lags, so that the confirmation waits
	if created, err := p.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	mark, err := p.PendingCreation(ctx) // what the confirmation reads first
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	// Meanwhile a checkpoint, and the second standby is given a slot on
	// the primary: it reserves WAL from the checkpoint's redo pointer,
	// past the mark.
	if _, err := p.DB().ExecContext(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	var slotLSN string
	if err := p.DB().QueryRowContext(ctx,
		`SELECT lsn::text FROM pg_create_physical_replication_slot('second_standby', true)`).Scan(&slotLSN); err != nil {
		t.Fatal(err)
	}
	t.Logf("mark %s; the second standby's new slot reserves WAL from %s", mark.LSN, slotLSN)
	pair.Repl.Restore()
	waitQuery(t, ctx, p, "the first standby's slot to pass the mark",
		`SELECT restart_lsn >= $1::pg_lsn FROM pg_replication_slots WHERE slot_name = 'pgserver_standby'`, mark.LSN)
	_, sbs, err := p.Standbys(ctx, mark.Mark)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs {
		if sb.Name == "slot second_standby" && (sb.Caught || !sb.New) {
			t.Errorf("the slot made after the mark: %+v; want it new and not caught up", sb)
		}
	}
	if err := p.WaitStandbys(ctx, mark.Mark, nil); !errors.Is(err, ErrSlotsChanged) {
		t.Errorf("WaitStandbys for the mark read before the slot was made: %v; want ErrSlotsChanged", err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	if err := p.SettleCreation(short, nil); !errors.As(err, &behind) {
		t.Fatalf("SettleCreation with a slot made after the mark: %v; want the creation pending, the slot behind", err)
	}
	t.Logf("the creation stays pending: %v", behind)
	if res, err := p.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || res.OK {
		t.Fatalf("a claim in a creation the second standby lacks: %+v, %v; want a refusal", res, err)
	}
}

// A creation's mark must follow the creation's commit record even when
// that record is not written yet. A mark read as pg_current_wal_lsn(), the
// position the server has written its WAL to, precedes the commit of a
// transaction that committed asynchronously: a DDL applied by a migration tool statement by
// statement (psql -f without -1: the DDL's set_config of
// synchronous_commit is local to its own first statement) on a database
// whose synchronous_commit is off commits the creation without writing it,
// and the confirmation then waits for a position before it. The standby is
// seen to have the mark, the creation is confirmed and claimed in, and a
// failover to the standby, which never received it, loses both. (The
// walwriter is stopped here to hold the write position still, as its
// wal_writer_delay and the load of the machine may.)
func TestAnAsynchronousCreationIsConfirmedBeforeItIsWritten(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	bin, err := pgserver.FindBinaries()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	pair := pgtest.NewPair(t, "autovacuum=off", "bgwriter_lru_maxpages=0")
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := storeOn(t, pair.Primary.DSN("postgres"), 0)
	if _, err := admin.DB().ExecContext(ctx, `ALTER DATABASE `+dbName+` SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	var walwriter int
	if err := admin.DB().QueryRowContext(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'`).Scan(&walwriter); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(walwriter, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(walwriter, syscall.SIGCONT) }
	defer cont()
	// Every WAL inserted so far is flushed (a durable commit), and the
	// standby reports it replayed; then its replication is held.
	if _, err := admin.DB().ExecContext(ctx, `SELECT set_config('synchronous_commit', 'on', false), txid_current()`); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, ctx, admin, "the standby to report the primary's WAL replayed",
		`SELECT bool_and(replay_lsn >= pg_current_wal_lsn()) FROM pg_stat_replication`)
	waitQuery(t, ctx, admin, "the slot to follow", `SELECT bool_and(restart_lsn >= pg_current_wal_lsn()) FROM pg_replication_slots`)
	pair.Repl.Blackhole()

	// The migration: the DDL applied by psql, one statement at a time.
	ddl := mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl})
	file := filepath.Join(t.TempDir(), "0001_nodeid.sql")
	if err := os.WriteFile(file, []byte(ddl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", pair.Primary.DSN(dbName), "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("psql -f: %v: %s", err, out)
	}
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	var written, inserted string
	if err := p.DB().QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text, pg_current_wal_insert_lsn()::text`).Scan(&written, &inserted); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the migration: WAL written to %s, inserted to %s", written, inserted)
	// The first Acquire finds the creation pending and confirms it.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	err = p.SettleCreation(short, nil)
	if errors.As(err, &behind) {
		t.Logf("the creation stays pending while the standby lacks it: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cont()
	lost, err := p.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the creation is confirmed; the claim in it: %+v", lost)
	recreateAfterFailover(t, ctx, pair, dbName, lost, ttl)
}

// A slot of the mark that is dropped and made again under the same name
// while the confirmation waits starts at a checkpoint's redo pointer, past
// the mark, though its standby lacks the creation: a slot's name alone
// does not say it is the one the mark saw. A slot counts only while the
// connection that held it at the mark still holds it (an active slot
// cannot be dropped); one taken up by another connection since is read
// again with a new mark.
func TestASlotMadeAgainDuringTheWaitDoesNotConfirm(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	// The standby's WAL is kept after its slot is dropped, so that it can
	// stream again from where it was cut off.
	pair, dbName := pgtest.NewPairDB(t, "wal_keep_size=256MB")
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	const slot = "pgserver_standby"
	pair.Repl.Blackhole() // the standby lags, so that the confirmation waits
	if created, err := p.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	mark, err := p.PendingCreation(ctx)
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	// The standby is cut off, its slot dropped and made again after a
	// checkpoint: it reserves WAL from the checkpoint's redo pointer.
	pair.Repl.Cut()
	waitQuery(t, ctx, p, "the standby's slot to be released",
		`SELECT NOT active FROM pg_replication_slots WHERE slot_name = $1`, slot)
	var slotLSN string
	if _, err := p.DB().ExecContext(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().ExecContext(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	if err := p.DB().QueryRowContext(ctx, `SELECT lsn::text FROM pg_create_physical_replication_slot($1, true)`, slot).Scan(&slotLSN); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, ctx, p, "the new slot to be past the mark",
		`SELECT restart_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1`, slot, mark.LSN)
	t.Logf("mark %s; the slot made again reserves WAL from %s", mark.LSN, slotLSN)
	// The confirmation that read the mark before the slot was made again
	// waits on: had it counted the slot, it would confirm the creation.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	if err := p.WaitStandbys(short, mark.Mark, nil); !errors.As(err, &behind) {
		t.Fatalf("WaitStandbys with the mark's slot made again: %v; want the slot behind", err)
	}
	t.Logf("the creation stays pending: %v", behind)
	if res, err := p.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || res.OK {
		t.Fatalf("a claim in a creation the standby lacks: %+v, %v; want a refusal", res, err)
	}
	// The standby streams again, through the slot, from a new connection:
	// the mark is read again, and the creation confirmed once the standby
	// has it.
	pair.Repl.Restore()
	waitQuery(t, ctx, p, "the standby to take its slot again",
		`SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot)
	if err := p.WaitStandbys(ctx, mark.Mark, nil); !errors.Is(err, ErrSlotsChanged) {
		t.Errorf("WaitStandbys for the mark read before the slot was taken up again: %v; want ErrSlotsChanged", err)
	}
	if err := p.SettleCreation(ctx, nil); err != nil {
		t.Fatalf("SettleCreation once the standby streams again: %v", err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Claim(ctx, 0, 0, "kept", ttl, time.Now().UnixMilli()+ttl.Milliseconds()); err != nil || !res.OK {
		t.Fatalf("a claim in the confirmed creation: %+v, %v", res, err)
	}
}

// On a standby, CheckReplication tells a server in recovery, which the
// table's T_server cannot ask for its WAL position, from a server whose
// WAL functions are refused: the first is retryable (a failover's new
// primary answers soon), the second is a WALError that no retry cures.
func TestCheckReplicationOnAStandbyIsRetryable(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	p := storeOn(t, pair.Primary.DSN(dbName), 0)
	if err := p.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckReplication(ctx); err != nil {
		t.Fatalf("CheckReplication on the primary: %v", err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, pair.Standby.DSN(dbName), 0)
	err := s.CheckReplication(ctx)
	t.Logf("CheckReplication on the standby: %v", err)
	var walErr *WALError
	if err == nil || !Retryable(err) || errors.As(err, &walErr) || !strings.Contains(err.Error(), "recovery") {
		t.Fatalf("CheckReplication on the standby = %v (retryable %v); want a retryable error that names the recovery, not a WALError", err, Retryable(err))
	}
}
