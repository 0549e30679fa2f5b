package admin

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
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
	w := watcher(t, ctx, pair, dbName)
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

// A standby that has replayed more of the old primary's WAL than the
// standby promoted in its place has a history of its own: it can never
// follow the new primary, and it is not gone either. Pointed at the new
// primary (as an HA manager or an operator does with every member), it
// asks again and again for the old timeline from the start of the
// segment it is in, receives the new primary's copy of that timeline up
// to the fork, and reports, on every connection, its own replay position
// on the old timeline: a position in another history, which may be past
// any mark the new primary reads. A creation on the new primary was
// confirmed as soon as the mark was behind that position, while the
// standby lacked it; promoted later (it is the most advanced standby by
// its position), it has no table, and a table created again there handed
// out the lost claim's node ID and epoch for the same milliseconds. A
// standby's position now counts only once its connection has been sent
// the mark's position (sent_lsn), which a connection that streams an old
// timeline never is; a slot that was past the mark's position when the
// mark was read (its standby reported a flush the server never wrote)
// never counts.
func TestAStandbyOfAnotherHistoryDoesNotConfirmACreation(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t) // the primary and the standby promoted in its place
	ahead := pair.AddStandbyWithoutSlot(t)
	a := storeOn(t, pair.Primary.DSN(dbName), 0)
	// A new WAL segment, which both standbys reach: what follows stays
	// within it, where the old timeline's copy on the promoted standby
	// can be streamed from its start.
	newSegment(t, ctx, a, pair, ahead)
	// The standby to promote receives nothing more; the other receives
	// some 4 MB of the primary's WAL more.
	pair.Repl.Cut()
	if _, err := a.DB().ExecContext(ctx, `CREATE TABLE after_fork AS SELECT g, repeat('x', 500) AS pad FROM generate_series(1, 8000) AS g`); err != nil {
		t.Fatal(err)
	}
	if err := ahead.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	// The standby that is ahead is pointed at the new primary.
	host, port, err := net.SplitHostPort(pair.Standby.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, ahead.Standby.DSN("postgres"), 0)
	if _, err := s.DB().ExecContext(ctx, fmt.Sprintf(`ALTER SYSTEM SET primary_conninfo = 'host=%s port=%s user=postgres sslmode=disable'`, host, port)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	b := storeOn(t, pair.Standby.DSN(dbName), 0)
	waitQuery(t, ctx, b, "the standby that is ahead to report to the new primary",
		`SELECT EXISTS (SELECT FROM pg_stat_replication WHERE replay_lsn IS NOT NULL)`)
	mark := createPastAReport(t, ctx, b, ttl, "the standby that is ahead")
	var replay, sent sql.NullString
	if err := b.DB().QueryRowContext(ctx, `SELECT replay_lsn::text, sent_lsn::text FROM pg_stat_replication`).Scan(&replay, &sent); err != nil {
		t.Logf("the standby's report: %v", err)
	}
	var own string
	if err := s.DB().QueryRowContext(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	t.Logf("the new primary's mark %s (pending %v); the standby that is ahead has replayed %s of the old timeline, and reports replay %s, having been sent %s",
		mark.LSN, mark.Pending, own, replay.String, sent.String)
	// The new primary fails, and the standby that is ahead is promoted.
	pendingThenLost(t, ctx, b, "the standby of another history", pair.Standby, ahead, dbName, ttl)
}

// watcher returns a Store on the primary of pair, in dbName, as a role
// that may claim but is neither a superuser nor a member of
// pg_read_all_stats: it sees the standbys streaming from slots by their
// slots alone.
func watcher(t *testing.T, ctx context.Context, pair *pgtest.Pair, dbName string) *Store {
	t.Helper()
	const role = "watcher"
	grants, err := GrantSQL(DefaultTable, role, false)
	if err != nil {
		t.Fatal(err)
	}
	// The standbys are read by a function that runs as its owner: made the
	// watcher's, it sees pg_stat_replication as a role without
	// pg_read_all_stats does.
	if err := pair.Primary.Exec(ctx, dbName, `CREATE ROLE `+role+` LOGIN PASSWORD 'secret';`+grants+`
		GRANT EXECUTE ON FUNCTION snowflake_nodes_server() TO `+role+`;
		ALTER FUNCTION snowflake_nodes_standbys(text, text, text) OWNER TO `+role); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pair.Primary.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "secret")
	return storeOn(t, u.String(), 0)
}

// createPastAReport creates the table on st's server, pending, and waits
// until a standby (who) reports having replayed a position past the
// creation's mark, which it returns.
func createPastAReport(t *testing.T, ctx context.Context, st *Store, ttl time.Duration, who string) CreationMark {
	t.Helper()
	if created, err := st.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	mark, err := st.PendingCreation(ctx)
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	waitQuery(t, ctx, st, who+" to report a position past the mark",
		`SELECT EXISTS (SELECT FROM pg_stat_replication WHERE replay_lsn >= $1::pg_lsn)`, mark.LSN)
	return mark
}

// newSegment starts a new WAL segment on st's server, writes in it, and
// waits until the standbys of pairs have replayed it.
func newSegment(t *testing.T, ctx context.Context, st *Store, pairs ...*pgtest.Pair) {
	t.Helper()
	if _, err := st.DB().ExecContext(ctx, `SELECT pg_switch_wal()`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(ctx, `CREATE TABLE before_fork (n int)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if err := p.WaitReplayed(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// pendingThenLost checks that st's pending creation is not confirmed while
// a standby (who) lacks it, claims node 0 in the table all the same, stops
// primary, st's server, at once, and fails over to to's standby: the table
// created again there must not hand out the lost claim's range
// (recreateAfterFailover).
func pendingThenLost(t *testing.T, ctx context.Context, st *Store, who string, primary *pgtest.Server, to *pgtest.Pair, dbName string, ttl time.Duration) {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	switch err := st.SettleCreation(short, nil); {
	case err == nil:
		t.Errorf("the creation was confirmed while %s lacks it", who)
	case !errors.As(err, &behind):
		t.Errorf("SettleCreation with %s: %v; want it behind", who, err)
	default:
		t.Logf("the creation stays pending: %v", err)
	}
	lost, err := st.Claim(ctx, 0, 0, "lost", ttl, time.Now().UnixMilli()+ttl.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a claim in the table: %+v", lost)
	if err := primary.Stop(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	recreateAfterFailover(t, ctx, to, dbName, lost, ttl)
}

// reportFlush sends, on conn (a replication connection that holdSlot
// opened), a standby's status update that says it has written, flushed
// and replayed the WAL up to lsn, whatever it was sent: the walsender
// moves the slot's restart_lsn there. A standby of another history
// reports its own positions so (TestAStandbyOfAnotherHistoryDoesNotConfirmACreation).
func reportFlush(t *testing.T, conn *pgconn.PgConn, lsn string) {
	t.Helper()
	hi, lo, _ := strings.Cut(lsn, "/")
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	pos := h<<32 | l
	msg := []byte{'r'}
	for range 3 { // written, flushed, replayed
		msg = binary.BigEndian.AppendUint64(msg, pos)
	}
	msg = binary.BigEndian.AppendUint64(msg, uint64(time.Since(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()))
	msg = append(msg, 0)
	conn.Frontend().Send(&pgproto3.CopyData{Data: msg})
	if err := conn.Frontend().Flush(); err != nil {
		t.Fatal(err)
	}
}

// A physical slot's restart_lsn is what its standby last reported having
// flushed, whatever the server sent it: a standby of another history (one
// that replayed more of an old primary's WAL than the standby promoted in
// its place) reports its own position on the old timeline, which may be
// past what the new primary has written. For a role that judges a standby
// streaming from a slot by the slot alone (one without
// pg_read_all_stats), such a slot counted as having any mark behind that
// position, and the creation was confirmed while its holder had nothing
// of it. Here the holder is a replication connection that reports a
// position 16 MB past the server's WAL. A slot that was past the position
// of the mark when the mark was read now never counts: no standby of this
// server's history can have flushed what the server had not written.
func TestASlotPastTheServersWALDoesNotConfirm(t *testing.T) {
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t, "autovacuum=off")
	admin := storeOn(t, pair.Primary.DSN(dbName), 0)
	if created, err := admin.Create(ctx, ttl); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	w := watcher(t, ctx, pair, dbName)
	var at, past string
	if err := admin.DB().QueryRowContext(ctx, `SELECT lsn::text, (pg_current_wal_insert_lsn() + 16 * 1024 * 1024)::text
		FROM pg_create_physical_replication_slot('elsewhere', true)`).Scan(&at, &past); err != nil {
		t.Fatal(err)
	}
	holder := holdSlot(t, ctx, pair.Primary.DSN(dbName), "elsewhere", at)
	reportFlush(t, holder, past)
	waitQuery(t, ctx, admin, "the slot to stand where its holder says", `SELECT restart_lsn = $1::pg_lsn AND active FROM pg_replication_slots WHERE slot_name = 'elsewhere'`, past)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	mark, err := w.PendingCreation(ctx)
	if err != nil || !mark.Pending {
		t.Fatalf("PendingCreation: %+v, %v", mark, err)
	}
	t.Logf("the mark %s; its slots %v; slot elsewhere reports having flushed %s", mark.LSN, mark.Slots, past)
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var behind *StandbysBehindError
	err = w.SettleCreation(short, nil)
	switch {
	case err == nil:
		t.Errorf("the creation was confirmed on the word of slot elsewhere, at %s, past the server's WAL", past)
	case !errors.As(err, &behind) || !strings.Contains(Labels(behind.Behind), "slot elsewhere"):
		t.Errorf("SettleCreation with a slot past the server's WAL: %v; want slot elsewhere behind", err)
	default:
		t.Logf("the creation stays pending: %v", err)
	}
}

// A standby ahead of its primary on the same timeline number: two
// standbys promoted one after the other without a WAL archive between
// them both take the next timeline number, and a standby that followed
// the first, pointed at the second, is sent the second's WAL on "its"
// timeline, past any mark, while it reports its own replay position, of
// the first's history, which it can never leave. Nothing the primary
// shows tells it from a standby of its own history: the creation is
// confirmed while it lacks it, and a failover to it loses the table.
// This is the assumption guarantees.md states; closing it needs the
// confirmation to ask each standby what it has replayed, on which
// history (docs/protocol.md). The test shows the hole, and fails: it runs
// only with NODEID_OPEN_HOLES=1 until then, and counts for nothing.
func TestAStandbyOfATwinTimelineDoesNotConfirmACreation(t *testing.T) {
	if os.Getenv("NODEID_OPEN_HOLES") != "1" {
		t.Skip("an open hole, stated as an assumption in guarantees.md (a standby ahead of its primary on the same timeline number misreports its position, and nothing the primary shows tells it; docs/protocol.md): NODEID_OPEN_HOLES=1 runs it, and it fails")
	}
	t.Parallel()
	const ttl = 6 * time.Second
	ctx := ctxOf(t)
	pair, dbName := pgtest.NewPairDB(t) // A, and B, promoted first
	twin := pair.AddStandby(t, "twin")  // C, promoted second
	a := storeOn(t, pair.Primary.DSN(dbName), 0)
	newSegment(t, ctx, a, pair, twin)
	twin.Repl.Cut() // C never hears of B's promotion
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	follower := pair.AddStandbyOfStandby(t, "follower") // S, a standby of B
	b := storeOn(t, pair.Standby.DSN(dbName), 0)
	if _, err := b.DB().ExecContext(ctx, `CREATE TABLE on_b AS SELECT g, repeat('x', 500) AS pad FROM generate_series(1, 8000) AS g`); err != nil {
		t.Fatal(err)
	}
	if err := follower.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pair.Standby.Stop(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := twin.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	c := storeOn(t, twin.Standby.DSN(dbName), 0)
	// C's WAL reaches the segment where S's replay stands (S asks for
	// the WAL from that segment's start), not S's position in it.
	var replayedS string
	if err := storeOn(t, follower.Standby.DSN("postgres"), 0).DB().QueryRowContext(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&replayedS); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DB().ExecContext(ctx, `CREATE TABLE on_c (n int)`); err != nil {
		t.Fatal(err)
	}
	for {
		var reached bool
		if err := c.DB().QueryRowContext(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn - (($1::pg_lsn - '0/0'::pg_lsn) % (16 * 1024 * 1024))`,
			replayedS).Scan(&reached); err != nil {
			t.Fatal(err)
		}
		if reached {
			break
		}
		if _, err := c.DB().ExecContext(ctx, `INSERT INTO on_c VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DB().ExecContext(ctx, `SELECT pg_switch_wal()`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DB().ExecContext(ctx, `INSERT INTO on_c VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	// S is pointed at C, without a slot (C has none for it).
	host, port, err := net.SplitHostPort(twin.Standby.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s := storeOn(t, follower.Standby.DSN("postgres"), 0)
	for _, q := range []string{
		fmt.Sprintf(`ALTER SYSTEM SET primary_conninfo = 'host=%s port=%s user=postgres sslmode=disable'`, host, port),
		`ALTER SYSTEM SET primary_slot_name = ''`, `SELECT pg_reload_conf()`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	waitQuery(t, ctx, c, "S to report to C", `SELECT EXISTS (SELECT FROM pg_stat_replication WHERE replay_lsn IS NOT NULL)`)
	var tlB, tlC string
	if err := c.DB().QueryRowContext(ctx, `SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`).Scan(&tlC); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRowContext(ctx, `SELECT received_tli::text FROM pg_stat_wal_receiver`).Scan(&tlB); err != nil {
		t.Logf("S's receiver: %v", err)
	}
	mark := createPastAReport(t, ctx, c, ttl, "S")
	var own string
	if err := s.DB().QueryRowContext(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	t.Logf("C on timeline %s, mark %s; S (receiving timeline %s) has replayed %s of B's history", tlC, mark.LSN, tlB, own)
	pendingThenLost(t, ctx, c, "S, of B's history,", twin.Standby, follower, dbName, ttl)
}
