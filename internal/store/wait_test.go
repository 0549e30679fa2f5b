package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The wait for the standbys reads their positions in a statement of its
// own, on whatever server the pool's connection reaches. A pooler that
// balances reads sends it to a standby, which streams to nobody and holds
// no slot: every standby "has" the mark at once. Pgpool-II's load
// balancing sends an autocommit SELECT to a standby unless it locks rows
// or calls a function that writes: by default a volatile one, which
// kept the mark (set_config, pg_current_xact_id) and the confirmation on
// the primary, but not the positions' statement, which called none; with
// a write_function_list, only the functions it names. The creation was
// confirmed on the primary while the second standby lacked it, a claim
// was made in it, and a failover to that standby let a table created
// again there hand out the same node ID and epoch for the same
// milliseconds. The positions' statement now names the server it ran on,
// and counts only on the mark's server (calling volatile functions to
// read it, it stays on the primary under Pgpool-II's default rule).
func TestStandbysReadOnAStandbyDoNotConfirmACreation(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t) // the first standby takes the pooler's reads
	second := pair.AddStandby(t, "lagging")
	if err := second.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	second.Repl.Blackhole() // the second standby will lack the creation
	admin := storeOn(t, pair.Primary.DSN(dbName), 0)
	if created, err := admin.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	if err := pair.WaitReplayed(ctx); err != nil { // the first standby has it, and serves the reads
		t.Fatal(err)
	}
	for _, pooler := range []struct {
		name   string
		writes []string // what a SELECT may name to be sent to the primary
	}{
		{"volatile functions write", []string{"set_config", "pg_current_", "pg_is_in_recovery", "pg_walfile_name", "txid_current", "nextval"}},
		{"write_function_list = 'nextval,setval,set_config'", []string{"nextval", "setval", "set_config"}},
	} {
		p, err := newStore(routedDB(t, pair.Primary.DSN(dbName), pair.Standby.DSN(dbName), pooler.writes), DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = p.SettleCreation(short, nil)
		cancel()
		if err != nil {
			t.Logf("through a pooler where %s: the creation stays pending: %v", pooler.name, err)
			continue
		}
		if tc, err := admin.ReadConfig(ctx); err == nil && !tc.CreationPending {
			t.Errorf("through a pooler where %s: the creation was confirmed while the second standby lacks it", pooler.name)
			break
		}
	}
	lost, err := admin.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a claim in the table: %+v", lost)
	recreateAfterFailover(t, ctx, second, dbName, lost, ttl)
}

// A slot's restart_lsn says how far its standby has flushed only once
// the standby has replied through it; until then it is where the slot
// reserved its WAL (a checkpoint's redo pointer, or where an operator
// advanced it), which may be the very position of the mark on an idle
// primary: the next record's position, where nothing has been written
// yet. A standby that takes up its slot and is paused before its first
// reply reaches the primary (a frozen VM, a network that stops passing
// its replies) holds the slot at that position, and a role that judges a
// standby streaming from a slot by the slot alone (one without
// pg_read_all_stats) took it for caught up. Here the holder is a
// replication connection that never replies: the confirmation went
// through while it had received nothing. A slot now counts only once it
// is past the mark's position by at least a byte, which only a reply can
// carry it to.
func TestASlotAtTheMarkWithoutAReplyDoesNotConfirm(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t, "autovacuum=off")
	admin := storeOn(t, pair.Primary.DSN(dbName), 0)
	if created, err := admin.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	const role = "watcher"
	if err := pair.Primary.Exec(ctx, dbName, `CREATE ROLE `+role+` LOGIN PASSWORD 'secret';
		GRANT SELECT, UPDATE ON snowflake_nodes, snowflake_nodes_config TO `+role+`;
		GRANT SELECT, INSERT, UPDATE ON snowflake_nodes_history TO `+role); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pair.Primary.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "secret")
	w := storeOn(t, u.String(), 0)
	if _, err := w.ReadConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DB().ExecContext(ctx, `SELECT pg_create_physical_replication_slot('paused', true)`); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		// The slot is advanced to the end of the WAL, and taken up by a
		// holder that never replies: nothing is written between then and
		// the mark, on an idle primary.
		waitQuery(t, ctx, admin, "the WAL to be flushed", `SELECT pg_current_wal_flush_lsn() = pg_current_wal_insert_lsn()`)
		var at string
		if err := admin.DB().QueryRowContext(ctx,
			`SELECT end_lsn::text FROM pg_replication_slot_advance('paused', pg_current_wal_insert_lsn())`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		holder := holdSlot(t, ctx, pair.Primary.DSN(dbName), "paused", at)
		waitQuery(t, ctx, admin, "the slot to be held", `SELECT active FROM pg_replication_slots WHERE slot_name = 'paused'`)
		var idle bool
		if err := admin.DB().QueryRowContext(ctx, `SELECT pg_current_wal_insert_lsn() = $1::pg_lsn`, at).Scan(&idle); err != nil {
			t.Fatal(err)
		}
		mark, err := w.PendingCreation(ctx)
		if err != nil || !mark.Pending {
			t.Fatalf("PendingCreation: %+v, %v", mark, err)
		}
		var restart string
		if err := admin.DB().QueryRowContext(ctx, `SELECT restart_lsn::text FROM pg_replication_slots WHERE slot_name = 'paused'`).Scan(&restart); err != nil {
			t.Fatal(err)
		}
		t.Logf("attempt %d: the slot reserves WAL from %s, held by a holder that has not replied; the mark reads %s (nothing written in between: %v); the slots %v",
			attempt, restart, mark.LSN, idle, mark.Slots)
		if !idle && attempt < 5 {
			holder.Close(ctx)
			waitQuery(t, ctx, admin, "the slot to be released", `SELECT NOT active FROM pg_replication_slots WHERE slot_name = 'paused'`)
			continue
		}
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var behind *StandbysBehindError
		err = w.WaitStandbys(short, mark.Mark, nil)
		switch {
		case err == nil:
			t.Errorf("WaitStandbys counted slot paused as having the creation, at %s, though its holder has received nothing", restart)
		case !errors.As(err, &behind) || !strings.Contains(Labels(behind.Behind), "slot paused"):
			t.Errorf("WaitStandbys with a slot whose holder has not replied: %v; want slot paused behind", err)
		default:
			t.Logf("the creation stays pending: %v", err)
		}
		if _, sbs, err := w.Standbys(ctx, mark.Mark); err == nil {
			t.Logf("standbys as the role sees them: %+v", sbs)
		}
		return
	}
}

// holdSlot takes up physical replication slot slot on the server at dsn,
// streaming from position at, as a standby's walreceiver does, and never
// replies: the slot's restart_lsn stays where it was. It is let go when
// the test ends.
func holdSlot(t *testing.T, ctx context.Context, dsn, slot, at string) *pgconn.PgConn {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "true"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	conn.Frontend().Send(&pgproto3.Query{String: fmt.Sprintf("START_REPLICATION SLOT %s PHYSICAL %s", slot, at)})
	if err := conn.Frontend().Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch msg := msg.(type) {
		case *pgproto3.CopyBothResponse:
			return conn
		case *pgproto3.ErrorResponse:
			t.Fatalf("START_REPLICATION: %s", msg.Message)
		}
	}
}

// routedDB opens a pool whose every connection holds a connection to the
// primary and one to the standby, and that sends an autocommit SELECT
// that locks no row and names none of writes to the standby, and every
// other statement to the primary, as Pgpool-II's load balancing does.
func routedDB(t *testing.T, primary, standby string, writes []string) *sql.DB {
	t.Helper()
	drv := stdlib.GetDefaultDriver().(driver.DriverContext)
	p, err := drv.OpenConnector(primary)
	if err != nil {
		t.Fatal(err)
	}
	s, err := drv.OpenConnector(standby)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(routedConnector{primary: p, standby: s, writes: writes})
	t.Cleanup(func() { db.Close() })
	return db
}

type routedConnector struct {
	primary, standby driver.Connector
	writes           []string
}

func (c routedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	p, err := c.primary.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.standby.Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &routedConn{primary: p, standby: s, writes: c.writes}, nil
}

func (c routedConnector) Driver() driver.Driver { return c.primary.Driver() }

type routedConn struct {
	primary, standby driver.Conn
	writes           []string
	inTx             bool
}

// route returns the connection a load balancer sends q to.
func (c *routedConn) route(q string) driver.Conn {
	if c.inTx {
		return c.primary
	}
	body := strings.TrimSpace(q)
	for strings.HasPrefix(body, "--") {
		_, body, _ = strings.Cut(body, "\n")
		body = strings.TrimSpace(body)
	}
	lower := strings.ToLower(body)
	if !strings.HasPrefix(lower, "select") {
		return c.primary
	}
	for _, w := range append([]string{"for update", "for share", "for key share", "for no key update"}, c.writes...) {
		if strings.Contains(lower, w) {
			return c.primary
		}
	}
	return c.standby
}

func (c *routedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.route(q).(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *routedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.route(q).(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *routedConn) Prepare(q string) (driver.Stmt, error) { return c.route(q).Prepare(q) }

func (c *routedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.route(q).(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *routedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *routedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.primary.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return routedTx{Tx: tx, c: c}, nil
}

func (c *routedConn) CheckNamedValue(v *driver.NamedValue) error {
	return c.primary.(driver.NamedValueChecker).CheckNamedValue(v)
}

func (c *routedConn) Close() error {
	return errors.Join(c.primary.Close(), c.standby.Close())
}

type routedTx struct {
	driver.Tx
	c *routedConn
}

func (t routedTx) Commit() error   { t.c.inTx = false; return t.Tx.Commit() }
func (t routedTx) Rollback() error { t.c.inTx = false; return t.Tx.Rollback() }

// A mark waits for a byte past the position it read, across the halves
// of a WAL position.
func TestPastLSN(t *testing.T) {
	for in, want := range map[string]string{"0/34CF4F8": "0/34CF4F9", "0/FFFFFFFF": "1/0", "1A/0": "1A/1"} {
		if got, err := pastLSN(in); err != nil || got != want {
			t.Errorf("pastLSN(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if got, err := pastLSN("x"); err == nil {
		t.Errorf("pastLSN(x) = %s; want an error", got)
	}
}

// A table's creation is pending when the server has standbys or slots as
// the DDL runs, but it is created when its transaction commits: a
// migration that creates the table in a transaction that also runs for a
// while (a backfill, other DDL) commits it to every standby streaming
// then. A standby attached meanwhile (cloned while the transaction was
// open: the clone lacks the creation, and receives it as it streams) was
// not waited for: the creation was not pending, the first claim came at
// once, and a failover to that standby, before it received the commit,
// let a table created again there hand out the same node ID and epoch for
// the same milliseconds.
func TestAStandbyAttachedDuringALongCreationIsWaitedFor(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	admin := storeOn(t, pair.Primary.DSN(dbName), 0)
	// The pair's standby is taken away and its slot dropped: the primary
	// has no standby and no slot when the migration begins (the pair's
	// standby is never promoted).
	pair.Repl.Cut()
	waitQuery(t, ctx, admin, "the standby to disconnect", `SELECT NOT EXISTS (SELECT FROM pg_stat_replication WHERE state = 'streaming')`)
	waitQuery(t, ctx, admin, "the slot to be released", `SELECT NOT active FROM pg_replication_slots WHERE slot_name = 'pgserver_standby'`)
	if _, err := admin.DB().ExecContext(ctx, `SELECT pg_drop_replication_slot('pgserver_standby')`); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, ctx, admin, "no standby and no slot", `SELECT NOT EXISTS (SELECT FROM pg_stat_replication) AND NOT EXISTS (SELECT FROM pg_replication_slots)`)

	// The migration's transaction: the DDL, then more work.
	tx, err := admin.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, mustSchemaSQL(t, Schema{Table: DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl})); err != nil {
		t.Fatal(err)
	}
	// Meanwhile a standby is attached, with a slot of its own, and
	// streams: it is seen by the primary when the creation commits.
	late := pair.AddStandby(t, "late")
	if err := late.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, ctx, admin, "the late standby to stream", `SELECT EXISTS (SELECT FROM pg_stat_replication WHERE state = 'streaming')`)
	late.Repl.Blackhole() // it lags behind the commit
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tc, err := admin.ReadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the creation committed with a standby streaming: pending %v", tc.CreationPending)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := admin.SettleCreation(short, nil); err == nil {
		t.Errorf("the creation is confirmed (pending %v at its commit) while the standby streaming then lacks it", tc.CreationPending)
	}
	lost, err := admin.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a claim in the table: %+v", lost)
	recreateAfterFailover(t, ctx, late, dbName, lost, ttl)
}

// A standby that has connected and not replied yet has no position in
// pg_stat_replication, even for a role that may see the positions: it is
// behind, and waited for, not one this role may not see (which ended the
// wait with a HiddenStandbyError, and failed init).
func TestAStandbyYetToReplyIsWaitedFor(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t)
	admin := storeOn(t, pair.Primary.DSN(dbName), 0) // a superuser
	if created, err := admin.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	var at string
	if err := admin.DB().QueryRowContext(ctx, `SELECT lsn::text FROM pg_create_physical_replication_slot('silent', true)`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	holdSlot(t, ctx, pair.Primary.DSN(dbName), "silent", at)
	waitQuery(t, ctx, admin, "the silent standby to stream", `SELECT EXISTS (SELECT FROM pg_stat_replication AS r
		JOIN pg_replication_slots AS s ON s.active_pid = r.pid WHERE s.slot_name = 'silent' AND r.replay_lsn IS NULL)`)
	mark, err := admin.PendingCreation(ctx)
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	if err := admin.WaitStandbys(short, mark.Mark, nil); !errors.As(err, &behind) {
		t.Fatalf("WaitStandbys with a standby yet to reply: %v; want it waited for, behind", err)
	}
	t.Logf("waited for: %v", behind)
}
