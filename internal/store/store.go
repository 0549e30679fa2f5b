// Package store runs nodeid's statements on the lease and history tables:
// claim, renewal, release, eviction, and the reads of the command line. The
// schema, identifier validation and error classification that users call
// are in package postgres.
//
// Every operation is one autocommit statement that also returns the server's
// now(), with no session state (no advisory locks held across statements, no
// LISTEN/NOTIFY, no SET, no temporary tables), so it behaves the same on a
// direct connection and through PgBouncer in transaction pooling mode. The
// package knows nothing of a lease's life cycle: it is SQL in, rows out.
//
// The caller opens the *sql.DB, normally with github.com/jackc/pgx/v5/stdlib;
// on its connections the lease statements (claim, renewal, release) run
// through pgx itself, and through database/sql with any other driver.
// Through a pooler in transaction mode, the DSN must select an exec mode that
// does not name prepared statements (default_query_exec_mode=exec).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/postgres"
)

// Config names the table and the node range a Store works on.
type Config struct {
	// Table is the lease table, optionally schema-qualified; its history
	// table is postgres.HistoryTable(Table).
	Table string
	// MinNode and MaxNode bound the node IDs, inclusive.
	MinNode, MaxNode int64
}

// DefaultConfig returns the default table and node range.
func DefaultConfig() Config {
	return Config{Table: postgres.DefaultTable, MinNode: postgres.DefaultMinNode, MaxNode: postgres.DefaultMaxNode}
}

// Validate checks the table name and the node range.
func (c Config) Validate() error {
	if err := postgres.ValidateTable(c.Table); err != nil {
		return err
	}
	return postgres.ValidateRange(c.MinNode, c.MaxNode)
}

// HistoryTable returns the name of the history table.
func (c Config) HistoryTable() string { return postgres.HistoryTable(c.Table) }

// expand substitutes the validated table names into a statement template:
// {t} the lease table, {h} the history table.
func expand(tmpl string, c Config) string {
	return strings.NewReplacer("{t}", c.Table, "{h}", c.HistoryTable()).Replace(tmpl)
}

// Store runs the statements on one lease table.
type Store struct {
	db  *sql.DB
	cfg Config

	claimSQL, renewSQL, releaseSQL, evictSQL string
	prefillSQL, listSQL, historySQL, whoSQL  string
	pruneSQL                                 string
}

// New returns a Store for the validated table and range of cfg. It does
// not touch the database.
func New(db *sql.DB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("nodeid: the *sql.DB is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{db: db, cfg: cfg}
	s.claimSQL = expand(claimTemplate, cfg)
	s.renewSQL = expand(renewTemplate, cfg)
	s.releaseSQL = expand(releaseTemplate, cfg)
	s.evictSQL = expand(evictTemplate, cfg)
	s.prefillSQL = expand(prefillTemplate, cfg)
	s.listSQL = expand(listTemplate, cfg)
	s.historySQL = expand(historyTemplate, cfg)
	s.whoSQL = expand(whoTemplate, cfg)
	s.pruneSQL = expand(pruneTemplate, cfg)
	return s, nil
}

// DB returns the database handle of the Store.
func (s *Store) DB() *sql.DB { return s.db }

// Config returns the table and range of the Store.
func (s *Store) Config() Config { return s.cfg }

// Key identifies one claim of a node ID.
type Key struct {
	NodeID int64
	Owner  string
	Epoch  int64
}

// Claim is the result of a successful claim.
type Claim struct {
	Key
	Expires     time.Time // database time
	Now         time.Time // the server's now() of the statement
	PrevHorizon int64     // unix ms: the previous holder's horizon
	Horizon     int64     // unix ms: the horizon now recorded for this claim
}

// Outcome is the result of a renewal or release. When OK is false the
// statement changed nothing, and Owner, Epoch and Exists describe the row as
// the statement found it, so that the caller can tell why.
type Outcome struct {
	OK      bool
	Expires time.Time // the new expiry, when OK and renewing
	Horizon int64     // the horizon recorded, when OK
	Now     time.Time // the server's now()
	Exists  bool      // the node ID's row exists
	Owner   string
	Epoch   int64
}

// The claim takes the lowest claimable node ID of the range: the lowest free
// row (never claimed or released) and the lowest lapsed row are each found
// through their own partial index, locked with SKIP LOCKED so concurrent
// claimers never wait on each other nor get the same row, and the lower of
// the two is claimed. The same statement ends the lapsed holder's history
// row and starts the new one. The expiry counts from now(), the start of the
// transaction, as the holder's deadline assumes; acquired_at is read after
// the row lock (clock_timestamp()), so that it never precedes the end of
// the release that freed the row.
//
// $1, $2: range; $3: owner; $4: TTL in ms; $5: the horizon to record.
const claimTemplate = `WITH free AS (
    SELECT node_id, epoch, expires_at, horizon_ms FROM {t}
    WHERE expires_at = '-infinity' AND node_id BETWEEN $1::integer AND $2::integer
    ORDER BY node_id LIMIT 1
    FOR UPDATE SKIP LOCKED
), lapsed AS (
    SELECT node_id, epoch, expires_at, horizon_ms FROM {t}
    WHERE expires_at > '-infinity' AND expires_at < now() AND node_id BETWEEN $1::integer AND $2::integer
    ORDER BY node_id LIMIT 1
    FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT * FROM free UNION ALL SELECT * FROM lapsed
    ORDER BY node_id LIMIT 1
), claimed AS (
    UPDATE {t} AS t
    SET owner = $3::text, epoch = t.epoch + 1, acquired_at = clock_timestamp(),
        expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(t.horizon_ms, $5::bigint)
    FROM pick WHERE t.node_id = pick.node_id
    RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms
), ended AS (
    UPDATE {h} AS h
    SET ended_at = pick.expires_at, end_reason = 'expired', horizon_ms = pick.horizon_ms
    FROM pick
    WHERE h.node_id = pick.node_id AND h.epoch = pick.epoch AND h.ended_at IS NULL
), started AS (
    INSERT INTO {h} (node_id, epoch, owner, acquired_at, from_ms)
    SELECT c.node_id, c.epoch, $3::text, c.acquired_at, pick.horizon_ms FROM claimed c, pick
)
SELECT c.node_id, c.epoch, c.expires_at, pick.horizon_ms, c.horizon_ms, now()
FROM claimed c, pick`

// Claim claims the lowest claimable node ID of the range for owner, for ttl,
// recording horizonMs as the horizon unless the row's is later. ok is false
// when every node ID of the range is held.
func (s *Store) Claim(ctx context.Context, owner string, ttl time.Duration, horizonMs int64) (c Claim, ok bool, err error) {
	err = s.queryRow(ctx, s.claimSQL, []any{s.cfg.MinNode, s.cfg.MaxNode, owner, ttl.Milliseconds(), horizonMs},
		&c.NodeID, &c.Epoch, &c.Expires, &c.PrevHorizon, &c.Horizon, &c.Now)
	if errors.Is(err, sql.ErrNoRows) {
		return Claim{}, false, nil
	}
	if err != nil {
		return Claim{}, false, s.wrapErr("claim", err)
	}
	c.Owner = owner
	return c, true, nil
}

// The renewal extends only a live lease of this owner and epoch: a lapsed
// lease is never revived. It raises the horizon, never lowers it. The row is
// returned as found, so that a caller whose renewal changed nothing can tell
// a takeover from an expiry or a release.
//
// $1 node; $2 owner; $3 epoch; $4 TTL in ms; $5 horizon.
const renewTemplate = `WITH renewed AS (
    UPDATE {t}
    SET expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(horizon_ms, $5::bigint)
    WHERE node_id = $1::integer AND owner = $2::text AND epoch = $3::bigint AND expires_at >= now()
    RETURNING expires_at, horizon_ms
)
SELECT (SELECT expires_at FROM renewed), (SELECT horizon_ms FROM renewed), t.owner, t.epoch, now()
FROM {t} AS t WHERE t.node_id = $1::integer`

// Renew extends the lease k by ttl from the server's now() and raises its
// horizon to horizonMs.
func (s *Store) Renew(ctx context.Context, k Key, ttl time.Duration, horizonMs int64) (Outcome, error) {
	var (
		o       Outcome
		expires sql.NullTime
		horizon sql.NullInt64
	)
	err := s.queryRow(ctx, s.renewSQL, []any{k.NodeID, k.Owner, k.Epoch, ttl.Milliseconds(), horizonMs},
		&expires, &horizon, &o.Owner, &o.Epoch, &o.Now)
	if errors.Is(err, sql.ErrNoRows) {
		return o, nil
	}
	if err != nil {
		return o, s.wrapErr("renew", err)
	}
	o.Exists = true
	o.OK, o.Expires, o.Horizon = expires.Valid, expires.Time, horizon.Int64
	return o, nil
}

// The release frees a live lease of this owner and epoch for immediate
// claim. The row and its epoch stay. The horizon becomes $4 when given (the
// exact latest millisecond stamped), else stays the promise recorded at the
// last renewal.
//
// $1 node; $2 owner; $3 epoch; $4 horizon or NULL.
const releaseTemplate = `WITH released AS (
    UPDATE {t}
    SET owner = '', expires_at = '-infinity', horizon_ms = COALESCE($4::bigint, horizon_ms)
    WHERE node_id = $1::integer AND owner = $2::text AND epoch = $3::bigint AND expires_at >= now()
    RETURNING node_id, epoch, horizon_ms
), ended AS (
    UPDATE {h} AS h
    SET ended_at = now(), end_reason = 'released', horizon_ms = r.horizon_ms
    FROM released r
    WHERE h.node_id = r.node_id AND h.epoch = r.epoch
)
SELECT (SELECT horizon_ms FROM released), t.owner, t.epoch, now()
FROM {t} AS t WHERE t.node_id = $1::integer`

// Release frees the lease k. With exact set, horizonMs becomes the recorded
// horizon; otherwise the horizon recorded at the last renewal stays.
func (s *Store) Release(ctx context.Context, k Key, horizonMs int64, exact bool) (Outcome, error) {
	var (
		o       Outcome
		horizon sql.NullInt64
		arg     any
	)
	if exact {
		arg = horizonMs
	}
	err := s.queryRow(ctx, s.releaseSQL, []any{k.NodeID, k.Owner, k.Epoch, arg},
		&horizon, &o.Owner, &o.Epoch, &o.Now)
	if errors.Is(err, sql.ErrNoRows) {
		return o, nil
	}
	if err != nil {
		return o, s.wrapErr("release", err)
	}
	o.Exists = true
	o.OK, o.Horizon = horizon.Valid, horizon.Int64
	return o, nil
}

// The eviction frees the node ID of a stuck holder, but only for the epoch
// given, so that it can never hit a newer holder. The horizon stays: the
// evicted holder may have stamped up to it.
//
// $1 node; $2 epoch.
const evictTemplate = `WITH old AS (
    SELECT node_id, epoch, expires_at FROM {t}
    WHERE node_id = $1::integer AND epoch = $2::bigint AND owner <> ''
    FOR UPDATE
), evicted AS (
    UPDATE {t} AS t SET owner = '', expires_at = '-infinity'
    FROM old WHERE t.node_id = old.node_id
    RETURNING t.node_id, t.epoch, t.horizon_ms
), ended AS (
    UPDATE {h} AS h
    SET ended_at = LEAST(now(), old.expires_at),
        end_reason = CASE WHEN old.expires_at < now() THEN 'expired' ELSE 'evicted' END,
        horizon_ms = e.horizon_ms
    FROM evicted e, old
    WHERE h.node_id = e.node_id AND h.epoch = e.epoch AND h.ended_at IS NULL
)
SELECT count(*), COALESCE(max(horizon_ms), 0) FROM evicted`

// Evict frees node ID node if its current epoch is epoch and it is not
// already free. It reports whether it changed the row, and the horizon the
// row kept: the next holder stamps after it.
func (s *Store) Evict(ctx context.Context, node, epoch int64) (ok bool, horizonMs int64, err error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.evictSQL, node, epoch).Scan(&n, &horizonMs); err != nil {
		return false, 0, s.wrapErr("evict", err)
	}
	return n == 1, horizonMs, nil
}

// prefillTemplate inserts the missing rows of the node range; $1 and $2 are
// the bounds.
const prefillTemplate = `INSERT INTO {t} (node_id)
SELECT g FROM generate_series($1::integer, $2::integer) AS g
ON CONFLICT (node_id) DO NOTHING`

// existsSQL reports whether both tables exist, without needing any privilege
// on them.
const existsSQL = `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`

// Ensure makes the tables usable: with create set, it creates any missing
// table and index (serialised between concurrent callers by a
// transaction-scoped advisory lock, so many processes may start at once);
// then it inserts the missing rows of the node range. With create unset it
// runs no DDL, so a role without CREATE privilege can use it on tables a
// migration provisioned.
func (s *Store) Ensure(ctx context.Context, create bool) error {
	if create {
		var exists bool
		if err := s.db.QueryRowContext(ctx, existsSQL, s.cfg.Table, s.cfg.HistoryTable()).Scan(&exists); err != nil {
			return s.wrapErr("look up", err)
		}
		if !exists {
			if err := s.createTables(ctx); err != nil {
				return s.wrapErr("create", err)
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, s.prefillSQL, s.cfg.MinNode, s.cfg.MaxNode); err != nil {
		return s.wrapErr("prefill", err)
	}
	return nil
}

func (s *Store) createTables(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, "nodeid:"+s.cfg.Table); err != nil {
		return err
	}
	ddl, err := postgres.SchemaSQL(postgres.WithTable(s.cfg.Table), postgres.WithNodeRange(s.cfg.MinNode, s.cfg.MaxNode))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return err
	}
	return tx.Commit()
}

// CheckSchema verifies, read-only, that both tables exist with the expected
// columns and that the role may SELECT, INSERT and UPDATE them. It never
// creates, alters or repairs anything. A missing table, column or privilege
// gives an error for which Fatal is true, naming the table and privilege.
func (s *Store) CheckSchema(ctx context.Context) error {
	for _, q := range []struct{ table, columns string }{
		{s.cfg.Table, "node_id, owner, epoch, acquired_at, expires_at, horizon_ms"},
		{s.cfg.HistoryTable(), "node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms"},
	} {
		var sel, ins, upd bool
		err := s.db.QueryRowContext(ctx, `SELECT has_table_privilege($1::text, 'SELECT'),
			has_table_privilege($1::text, 'INSERT'), has_table_privilege($1::text, 'UPDATE')`, q.table).
			Scan(&sel, &ins, &upd)
		if err != nil {
			return s.wrapErr("check schema", err)
		}
		for _, p := range []struct {
			name string
			ok   bool
		}{{"SELECT", sel}, {"INSERT", ins}, {"UPDATE", upd}} {
			if !p.ok {
				return s.wrapErr("check schema", &privilegeError{table: q.table, privilege: p.name})
			}
		}
		rows, err := s.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s LIMIT 0", q.columns, q.table))
		if err != nil {
			return s.wrapErr("check schema", err)
		}
		rows.Close()
	}
	return nil
}
