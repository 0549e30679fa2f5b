package pgserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// replicationSettings let a local server stream its WAL to a standby. The
// standby gets them too: a hot standby needs max_wal_senders at least as
// large as its primary's, and retries a broken replication connection
// after wal_retrieve_retry_interval (5 s by default).
var replicationSettings = []string{
	"wal_level=replica",
	"max_wal_senders=10",
	"max_replication_slots=10",
	"wal_retrieve_retry_interval=100ms",
}

// standbySlot is the primary's replication slot that keeps the WAL the
// standby has not received, however long its connection is cut.
const standbySlot = "pgserver_standby"

// Pair is a primary and an asynchronous streaming standby, both local
// servers (see StartLocal). The standby
// streams the primary's WAL through Repl, a Proxy: Cut it and
// the primary's commits stop reaching the standby, so that a test can stop
// the primary (Stop(ctx, Immediate)), Promote the standby and find those
// commits lost, as in a failover with asynchronous replication. Clients
// reach each server directly.
//
// Databases created on the primary reach the standby through replication:
// call WaitReplayed after Primary.CreateDatabase before relying on one on
// the standby.
type Pair struct {
	Primary, Standby *Server
	Repl             *Proxy // the standby's replication connection runs through it

	shared bool // the primary is another Pair's: Close leaves it
}

// StartPair starts a primary from the local PostgreSQL programs (see
// StartLocal), with the given settings ("name=value") on top of the
// package's, and a standby that pg_basebackup -R clones from it through
// Repl. The standby replicates as the postgres superuser, trusted on
// 127.0.0.1, from a replication slot of the primary, so a cut only delays
// what it receives.
func StartPair(ctx context.Context, settings ...string) (*Pair, error) {
	return StartGatedPair(ctx, nil, settings...)
}

// StartGatedPair is StartPair with gate (nil for none) asked before every
// chunk Repl forwards.
func StartGatedPair(ctx context.Context, gate Gate, settings ...string) (*Pair, error) {
	primary, err := StartLocal(ctx, withReplication(settings)...)
	if err != nil {
		return nil, fmt.Errorf("pgserver: start the primary: %w", err)
	}
	p, err := StartStandby(ctx, primary, standbySlot, gate, settings...)
	if err != nil {
		_ = primary.Close()
		return nil, err
	}
	p.shared = false
	return p, nil
}

// StartStandby starts a standby of primary, a server that StartPair
// started with the same settings, cloned and streaming through a proxy of
// its own (Repl, which asks gate, if not nil, before every chunk) from a
// new replication slot named slot (none if slot is ""), and returns it as
// a Pair that shares the primary: closing it leaves the primary running.
func StartStandby(ctx context.Context, primary *Server, slot string, gate Gate, settings ...string) (*Pair, error) {
	p := &Pair{Primary: primary, shared: true}
	var err error
	if p.Repl, err = NewGatedProxy(primary.Addr(), gate); err != nil {
		return nil, err
	}
	// pg_basebackup connects through the proxy, so the primary_conninfo
	// that -R writes names the proxy.
	if p.Standby, err = startStandby(ctx, withReplication(settings), p.Repl.Addr(), slot); err != nil {
		_ = p.Repl.Close()
		return nil, fmt.Errorf("pgserver: start the standby: %w", err)
	}
	return p, nil
}

// withReplication returns settings after the replicationSettings.
func withReplication(settings []string) []string {
	return append(append([]string{}, replicationSettings...), settings...)
}

// WaitReplayed waits until the standby has replayed the primary's WAL up to
// where it was when WaitReplayed was called, or ctx ends. The primary must
// be running.
func (p *Pair) WaitReplayed(ctx context.Context) error {
	primary, err := p.Primary.adminDB()
	if err != nil {
		return err
	}
	var target string
	if err := primary.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&target); err != nil {
		return fmt.Errorf("pgserver: the primary's WAL position: %w", err)
	}
	standby, err := p.Standby.adminDB()
	if err != nil {
		return err
	}
	var replayed sql.NullString
	for {
		var done bool
		err := standby.QueryRowContext(ctx,
			`SELECT pg_last_wal_replay_lsn()::text, coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`,
			target).Scan(&replayed, &done)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgserver: the standby replayed the WAL up to %s, not yet to the primary's %s (last error: %v): %w",
				replayed.String, target, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Promote promotes the standby and waits until it accepts writes.
func (p *Pair) Promote(ctx context.Context) error {
	standby, err := p.Standby.adminDB()
	if err != nil {
		return err
	}
	var promoted bool
	if err := standby.QueryRowContext(ctx, `SELECT pg_promote(true, 60)`).Scan(&promoted); err != nil {
		return fmt.Errorf("pgserver: promote the standby: %w", err)
	}
	if !promoted {
		return errors.New("pgserver: the standby did not finish its promotion within 60 s")
	}
	for {
		// Assigning a transaction ID is a write: a server in recovery refuses it.
		_, err := standby.ExecContext(ctx, `SELECT txid_current()`)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgserver: the promoted standby does not accept writes: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// DSN returns a multi-host DSN (URL form, as libpq and pgx read it) for
// database db that lists the primary, then the standby, with
// target_session_attrs=read-write: a client connects to whichever of the
// two accepts writes, the primary until the standby is promoted and the
// primary stopped.
func (p *Pair) DSN(db string) string {
	return MultiHostDSN(db, p.Primary.Addr(), p.Standby.Addr())
}

// Close stops both servers and the proxy and removes their files.
func (p *Pair) Close() error {
	var errs []error
	if p.Standby != nil {
		errs = append(errs, p.Standby.Close())
	}
	if p.Repl != nil {
		errs = append(errs, p.Repl.Close())
	}
	if !p.shared {
		errs = append(errs, p.Primary.Close())
	}
	return errors.Join(errs...)
}

// MultiHostDSN returns a superuser DSN for database db that lists every
// host:port of addrs and connects to the first that accepts writes.
func MultiHostDSN(db string, addrs ...string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write",
		strings.Join(addrs, ","), db)
}

// timelineQuery reads the timeline of the server's current WAL position
// from the name of its WAL file, which any role may do. A server in
// recovery has no current WAL position: the query fails there.
const timelineQuery = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int`

// Timeline returns the timeline of the server that dsn connects to (1 for
// a new cluster, one more after each promotion), on a connection of its
// own. The server must accept writes.
func Timeline(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var tl int
	if err := conn.QueryRow(ctx, timelineQuery).Scan(&tl); err != nil {
		return 0, fmt.Errorf("pgserver: read the timeline: %w", err)
	}
	return tl, nil
}

// Timeline returns the server's timeline; see the package function
// Timeline.
func (s *Server) Timeline(ctx context.Context) (int, error) {
	return Timeline(ctx, s.DSN(s.adminDatabase()))
}
