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

	"github.com/nodeid/nodeid/internal/wal"
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

// ConfigTable returns the name of the configuration table.
func (c Config) ConfigTable() string { return postgres.ConfigTable(c.Table) }

// expand substitutes the validated table names into a statement template:
// {t} the lease table, {h} the history table, {c} the configuration table,
// and {tl} the expression of the server's timeline.
func expand(tmpl string, c Config) string {
	return strings.NewReplacer("{t}", c.Table, "{h}", c.HistoryTable(), "{c}", c.ConfigTable(),
		"{tl}", wal.Timeline).Replace(tmpl)
}

// Store runs the statements on one lease table.
type Store struct {
	db  *sql.DB
	cfg Config

	claimSQL, renewSQL, releaseSQL, evictSQL, readConfigSQL string
	listSQL, historySQL, whoSQL, pruneSQL                   string
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
	for _, q := range []struct {
		dst  *string
		tmpl string
	}{
		{&s.claimSQL, claimTemplate}, {&s.renewSQL, renewTemplate}, {&s.releaseSQL, releaseTemplate},
		{&s.evictSQL, evictTemplate}, {&s.readConfigSQL, readConfigTemplate}, {&s.listSQL, listTemplate},
		{&s.historySQL, historyTemplate}, {&s.whoSQL, whoTemplate}, {&s.pruneSQL, pruneTemplate},
	} {
		*q.dst = expand(q.tmpl, cfg)
	}
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

// Claim is the result of a claim.
type Claim struct {
	Key
	Expires     time.Time // database time
	Now         time.Time // the server's now() of the statement
	PrevHorizon int64     // unix ms: the previous holder's horizon, raised by a quarantine
	Horizon     int64     // unix ms: the horizon now recorded for this claim
	Timeline    int64     // the server's timeline
}

// Refusal says why a claim found no node ID: the node IDs of the range that
// are not held but may not be claimed yet.
type Refusal struct {
	Held int64 // node IDs held by unexpired leases
	// Cooling node IDs are free or lapsed, but their previous holder's
	// horizon (or a failover's quarantine) has not passed yet.
	Cooling int64
	// Soonest is the cooling node ID that becomes claimable first, at unix
	// millisecond Until, with its horizon set at SetAt; Quarantined when it
	// waits for a failover's quarantine rather than a horizon.
	Soonest     int64
	Until       int64
	SetAt       time.Time
	Quarantined bool
	// TTLAbove is set when the claim's TTL exceeds the table's maximum
	// MaxTTL; Unconfigured when the table has no recorded configuration.
	TTLAbove     bool
	MaxTTL       time.Duration
	Unconfigured bool
	Now          time.Time
}

// Outcome is the result of a renewal or release. When OK is false the
// statement changed nothing, and Owner, Epoch and Exists describe the row as
// it is once every concurrent change to it has committed, so that the
// caller can tell why; EndReason is the history's end of the claim of the
// key, if it ended.
type Outcome struct {
	OK        bool
	Expires   time.Time // the new expiry, when OK and renewing
	Horizon   int64     // the horizon recorded, when OK
	Now       time.Time // the server's now()
	Exists    bool      // the node ID's row exists
	Owner     string
	Epoch     int64
	EndReason string // "released", "expired", "evicted" or ""
}

// The common head of the lease statements, each of which starts with a
// comment line naming it, for pg_stat_statements and pg_stat_activity. tl is the server's timeline;
// seen records the moment a new timeline is first seen, so that rows last
// written on an earlier one are quarantined from then on. A row lock taken
// by seen serialises only the statements that see a new timeline first.
// q has the table's maximum TTL, the server's now() in unix ms, and fence_ms:
// the horizon that a row of an earlier timeline gets, one maximum TTL and a
// tenth after the timeline was first seen (by this statement, if the
// snapshot does not show it seen yet), by which every lease granted or
// extended before the failover has passed its deadline and its horizon.
const headTemplate = `WITH tl AS (
    SELECT {tl} AS cur LIMIT 1
), seen AS (
    UPDATE {c} SET timeline = tl.cur, timeline_seen_at = now() FROM tl WHERE {c}.timeline < tl.cur
), q AS (
    SELECT tl.cur, c.max_ttl_ms,
        (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        (extract(epoch FROM CASE WHEN c.timeline < tl.cur THEN now() ELSE c.timeline_seen_at END) * 1000)::bigint
            + c.max_ttl_ms + c.max_ttl_ms / 10 AS fence_ms
    FROM {c} AS c, tl LIMIT 1
)`

// claimable is the condition on a row t of the lease table, given q, that
// its previous holders can no longer stamp: its horizon has passed, and if
// it was last written on an earlier timeline, the quarantine too.
const claimable = `(CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms`

// lapsedRow is the claim's read of the lowest claimable lapsed row, which
// it tries before the free rows (lapsed) or after them (again).
const lapsedRow = `    SELECT t.node_id, t.epoch, t.expires_at, t.horizon_ms, t.timeline FROM {t} AS t, q
    WHERE t.expires_at > '-infinity' AND t.expires_at < now()
      AND t.node_id BETWEEN $1::integer AND $2::integer AND ` + claimable + `
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
`

// The claim takes the lowest claimable node ID of the range and locks no
// other row. The free rows (never claimed or released) and the lapsed rows
// are each found through their own partial index; lo reads, without
// locking, which of the two has the lower claimable node ID, and that
// source is tried first: each is read with FOR UPDATE SKIP LOCKED LIMIT 1,
// and the second is read only if the first yields nothing, so concurrent
// claimers never wait on each other, never get the same row, and never
// find nothing while a node ID is claimable. A row whose horizon has not
// passed is not claimable: its next holder would have to wait for its
// clock. The statement ends the lapsed holder's history row and starts the
// new one, and, when it finds nothing, reports why.
//
// The epoch is one more than the row's; on a row last written on an earlier
// timeline it also jumps to the current timeline times 2^32 (keeping its
// low 32 bits counting on), above every epoch the old timeline could have
// granted. The horizon recorded is the registry's ($5) but never more than
// the server's now() plus the TTL, so that every stamp of a lease is bounded
// by the database's clock too: a failover's quarantine relies on it. The
// expiry counts from now(), the start of the transaction, as the holder's
// deadline assumes; acquired_at is read after the row lock
// (clock_timestamp()), so that it never precedes the end of the release that
// freed the row.
//
// $1, $2: range; $3: owner; $4: TTL in ms; $5: the horizon to record.
const claimTemplate = "-- nodeid claim\n" + headTemplate + `, lo AS (
    SELECT (SELECT min(t.node_id) FROM {t} AS t
            WHERE t.expires_at > '-infinity' AND t.expires_at < now()
              AND t.node_id BETWEEN $1::integer AND $2::integer AND ` + claimable + `)
         < COALESCE((SELECT min(t.node_id) FROM {t} AS t
            WHERE t.expires_at = '-infinity' AND t.node_id BETWEEN $1::integer AND $2::integer AND ` + claimable + `),
            $2::integer + 1) AS lapsed_first
    FROM q WHERE $4::bigint <= q.max_ttl_ms
), lapsed AS (
` + lapsedRow + `), free AS (
    SELECT t.node_id, t.epoch, t.expires_at, t.horizon_ms, t.timeline FROM {t} AS t, q
    WHERE t.expires_at = '-infinity' AND t.node_id BETWEEN $1::integer AND $2::integer AND ` + claimable + `
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), again AS (
` + lapsedRow + `), pick AS (
    SELECT p.node_id, p.epoch, p.expires_at, p.timeline,
        CASE WHEN p.timeline < q.cur THEN GREATEST(p.horizon_ms, q.fence_ms) ELSE p.horizon_ms END AS prev_ms
    FROM (
        (SELECT * FROM lapsed WHERE (SELECT lapsed_first FROM lo))
        UNION ALL (SELECT * FROM free WHERE (SELECT true FROM lo))
        UNION ALL (SELECT * FROM again WHERE NOT (SELECT lapsed_first FROM lo))
        LIMIT 1
    ) AS p, q
), claimed AS (
    UPDATE {t} AS t
    SET owner = $3::text, acquired_at = clock_timestamp(),
        epoch = CASE WHEN pick.timeline < q.cur
            THEN GREATEST(t.epoch + 1, (q.cur << 32) | ((t.epoch + 1) & 4294967295)) ELSE t.epoch + 1 END,
        expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(pick.prev_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        timeline = q.cur
    FROM pick, q WHERE t.node_id = pick.node_id
    RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms, t.timeline
), ended AS (
    UPDATE {h} AS h
    SET ended_at = LEAST(pick.expires_at, now()), end_reason = 'expired', horizon_ms = pick.prev_ms
    FROM pick
    WHERE h.node_id = pick.node_id AND h.epoch = pick.epoch AND h.ended_at IS NULL
), started AS (
    INSERT INTO {h} (node_id, epoch, owner, acquired_at, from_ms, timeline)
    SELECT c.node_id, c.epoch, $3::text, c.acquired_at, pick.prev_ms, c.timeline FROM claimed c, pick
)
SELECT c.node_id, c.epoch, c.expires_at, pick.prev_ms, c.horizon_ms, c.timeline, now(),
    NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::boolean, NULL::bigint
FROM claimed c, pick
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, now(),
    (SELECT count(*) FROM {t} WHERE node_id BETWEEN $1::integer AND $2::integer AND expires_at >= now()),
    w.cooling, w.node_id, w.until_ms, w.set_at, w.quarantined, (SELECT max_ttl_ms FROM q)
FROM (
    SELECT count(*) OVER () AS cooling, t.node_id, x.until_ms, t.timeline < q.cur AS quarantined,
        COALESCE((SELECT h.ended_at FROM {h} AS h WHERE h.node_id = t.node_id AND h.epoch = t.epoch),
            CASE WHEN isfinite(t.expires_at) THEN t.expires_at END) AS set_at
    FROM {t} AS t, q,
        LATERAL (SELECT CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END AS until_ms) AS x
    WHERE t.expires_at < now() AND t.node_id BETWEEN $1::integer AND $2::integer
      AND x.until_ms >= q.now_ms
    ORDER BY x.until_ms, t.node_id LIMIT 1
) AS w RIGHT JOIN (SELECT 1) AS one ON true
WHERE NOT EXISTS (SELECT 1 FROM claimed)`

// Claim claims the lowest claimable node ID of lo to hi for owner, for ttl,
// recording horizonMs as the horizon (see claimTemplate). When no node ID
// can be claimed, ok is false and the Refusal says why.
func (s *Store) Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (c Claim, ok bool, why Refusal, err error) {
	var (
		node, epoch, prev, horizon, tli sql.NullInt64
		expires                         sql.NullTime
		held, cooling, soonest, until   sql.NullInt64
		setAt                           sql.NullTime
		quarantined                     sql.NullBool
		maxTTL                          sql.NullInt64
	)
	err = s.queryRow(ctx, s.claimSQL, []any{lo, hi, owner, ttl.Milliseconds(), horizonMs},
		&node, &epoch, &expires, &prev, &horizon, &tli, &c.Now,
		&held, &cooling, &soonest, &until, &setAt, &quarantined, &maxTTL)
	if err != nil {
		return Claim{}, false, Refusal{}, s.wrapErr("claim", err)
	}
	if node.Valid {
		c.Key = Key{NodeID: node.Int64, Owner: owner, Epoch: epoch.Int64}
		c.Expires, c.PrevHorizon, c.Horizon, c.Timeline = expires.Time, prev.Int64, horizon.Int64, tli.Int64
		return c, true, Refusal{}, nil
	}
	why = Refusal{
		Held: held.Int64, Cooling: cooling.Int64, Soonest: soonest.Int64, Until: until.Int64,
		SetAt: setAt.Time, Quarantined: quarantined.Bool, MaxTTL: time.Duration(maxTTL.Int64) * time.Millisecond,
		Unconfigured: !maxTTL.Valid, Now: c.Now,
	}
	why.TTLAbove = maxTTL.Valid && ttl.Milliseconds() > maxTTL.Int64
	return Claim{}, false, why, nil
}

// The renewal extends only a live lease of this owner and epoch: a lapsed
// lease is never revived. It raises the horizon, never lowers it, and never
// above the server's now() plus the TTL; it records the current timeline,
// since the row's state is now written on it. The row is read with a lock
// first, so that the statement sees it as it is once every concurrent claim
// of it has committed: a caller whose renewal changed nothing can tell a
// takeover from an expiry, a release or an eviction.
//
// $1 node; $2 owner; $3 epoch; $4 TTL in ms; $5 horizon.
const renewTemplate = "-- nodeid renew\n" + headTemplate + `, cur AS (
    SELECT node_id, owner, epoch, expires_at FROM {t} WHERE node_id = $1::integer FOR NO KEY UPDATE
), renewed AS (
    UPDATE {t} AS t
    SET expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(t.horizon_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        timeline = q.cur
    FROM cur, q
    WHERE t.node_id = cur.node_id AND cur.owner = $2::text AND cur.epoch = $3::bigint AND cur.expires_at >= now()
    RETURNING t.expires_at, t.horizon_ms
)
SELECT r.expires_at, r.horizon_ms, cur.owner, cur.epoch, now(),
    (SELECT end_reason FROM {h} WHERE node_id = $1::integer AND epoch = $3::bigint)
FROM cur LEFT JOIN renewed AS r ON true`

// Renew extends the lease k by ttl from the server's now() and raises its
// horizon to horizonMs.
func (s *Store) Renew(ctx context.Context, k Key, ttl time.Duration, horizonMs int64) (Outcome, error) {
	var (
		expires sql.NullTime
		horizon sql.NullInt64
	)
	o, err := s.outcome(ctx, "renew", s.renewSQL, []any{k.NodeID, k.Owner, k.Epoch, ttl.Milliseconds(), horizonMs}, &expires, &horizon)
	o.OK, o.Expires, o.Horizon = expires.Valid, expires.Time, horizon.Int64
	return o, err
}

// outcome runs a renewal or a release, whose row starts with the columns
// of dest and ends with the row's owner and epoch, now() and the history's
// end reason of the claim.
func (s *Store) outcome(ctx context.Context, op, q string, args []any, dest ...any) (Outcome, error) {
	var (
		o      Outcome
		reason sql.NullString
	)
	err := s.queryRow(ctx, q, args, append(dest, &o.Owner, &o.Epoch, &o.Now, &reason)...)
	if errors.Is(err, sql.ErrNoRows) {
		return o, nil
	}
	if err != nil {
		return o, s.wrapErr(op, err)
	}
	o.Exists, o.EndReason = true, reason.String
	return o, nil
}

// The release frees a live lease of this owner and epoch for immediate
// claim. The row and its epoch stay. The horizon becomes $4 when given (the
// exact latest millisecond stamped), else stays the promise recorded at the
// last renewal. Like the renewal, it reads the row with a lock first, and
// it returns the history's end reason of the claim, so that a retry can
// tell its own earlier release from an operator's eviction.
//
// $1 node; $2 owner; $3 epoch; $4 horizon or NULL.
const releaseTemplate = "-- nodeid release\n" + headTemplate + `, cur AS (
    SELECT node_id, owner, epoch, expires_at FROM {t} WHERE node_id = $1::integer FOR NO KEY UPDATE
), released AS (
    UPDATE {t} AS t
    SET owner = '', expires_at = '-infinity', horizon_ms = COALESCE($4::bigint, t.horizon_ms), timeline = q.cur
    FROM cur, q
    WHERE t.node_id = cur.node_id AND cur.owner = $2::text AND cur.epoch = $3::bigint AND cur.expires_at >= now()
    RETURNING t.node_id, t.epoch, t.horizon_ms
), ended AS (
    UPDATE {h} AS h
    SET ended_at = now(), end_reason = 'released', horizon_ms = r.horizon_ms
    FROM released r
    WHERE h.node_id = r.node_id AND h.epoch = r.epoch
)
SELECT r.horizon_ms, cur.owner, cur.epoch, now(),
    (SELECT end_reason FROM {h} WHERE node_id = $1::integer AND epoch = $3::bigint)
FROM cur LEFT JOIN released AS r ON true`

// Release frees the lease k. With exact set, horizonMs becomes the recorded
// horizon; otherwise the horizon recorded at the last renewal stays.
func (s *Store) Release(ctx context.Context, k Key, horizonMs int64, exact bool) (Outcome, error) {
	var (
		horizon sql.NullInt64
		arg     any
	)
	if exact {
		arg = horizonMs
	}
	o, err := s.outcome(ctx, "release", s.releaseSQL, []any{k.NodeID, k.Owner, k.Epoch, arg}, &horizon)
	o.OK, o.Horizon = horizon.Valid, horizon.Int64
	if o.OK {
		o.EndReason = "released"
	}
	return o, err
}

// The eviction frees the node ID of a stuck holder, but only for the epoch
// given, so that it can never hit a newer holder. The horizon and the
// timeline stay: the evicted holder may have stamped up to the horizon, and
// a row of an earlier timeline stays quarantined.
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

// TableConfig is what a lease table records of its configuration.
type TableConfig struct {
	MinNode, MaxNode int64
	MaxTTL           time.Duration
	// Timeline is the latest server timeline seen by a lease statement,
	// first seen at TimelineSeenAt.
	Timeline       int64
	TimelineSeenAt time.Time
}

const readConfigTemplate = `SELECT min_node, max_node, max_ttl_ms, timeline, timeline_seen_at FROM {c}`

// ReadConfig reads the table's recorded configuration. A table created
// before configurations were recorded gives postgres.ErrUnconfigured.
func (s *Store) ReadConfig(ctx context.Context) (TableConfig, error) {
	var (
		c  TableConfig
		ms int64
	)
	err := s.db.QueryRowContext(ctx, s.readConfigSQL).Scan(&c.MinNode, &c.MaxNode, &ms, &c.Timeline, &c.TimelineSeenAt)
	missing := postgres.SQLSTATE(err) == "42P01"
	if missing {
		exists, xerr := s.exists(ctx, s.cfg.Table)
		switch {
		case xerr != nil:
			return c, s.wrapErr("read configuration", xerr)
		case !exists:
			return c, s.wrapErr("read configuration", &missingError{table: s.cfg.Table})
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows) || missing:
		return c, s.wrapErr("read configuration", fmt.Errorf("%w (it was made by an earlier version of nodeid): run \"nodeid init --table %s\", or apply the DDL of SchemaSQL, as its owner",
			postgres.ErrUnconfigured, s.cfg.Table))
	case err != nil:
		return c, s.wrapErr("read configuration", err)
	}
	c.MaxTTL = time.Duration(ms) * time.Millisecond
	return c, nil
}

// exists reports whether a relation of that name exists. It needs no
// privilege on it.
func (s *Store) exists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok)
	return ok, err
}

// Create creates the lease, history and configuration tables when the
// lease table is missing, recording the Store's range and maxTTL, fills the
// range and analyses the table. It reports whether it created them. Many
// processes may call it at once: a transaction-scoped advisory lock
// serialises them, and only the first creates.
func (s *Store) Create(ctx context.Context, maxTTL time.Duration) (bool, error) {
	if exists, err := s.exists(ctx, s.cfg.Table); err != nil || exists {
		return false, s.wrapErr("look up", err)
	}
	ddl, err := postgres.SchemaSQL(postgres.WithTable(s.cfg.Table), postgres.WithNodeRange(s.cfg.MinNode, s.cfg.MaxNode),
		postgres.WithMaxTTL(maxTTL))
	if err != nil {
		return false, err
	}
	created := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, "nodeid:"+s.cfg.Table); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.cfg.Table).Scan(&exists); err != nil || exists {
			return err
		}
		created = true
		_, err := tx.ExecContext(ctx, ddl)
		return err
	})
	if postgres.SQLSTATE(err) == "42501" {
		err = fmt.Errorf("table %s does not exist, and this role may not create it: %w", s.cfg.Table, err)
	}
	if err != nil {
		return false, s.wrapErr("create", err)
	}
	return created, nil
}

// Apply runs the DDL of SchemaSQL for the Store's table and range and
// maxTTL in one transaction, serialised with Create: it creates what is
// missing, brings an older table up to date, widens the recorded range and
// raises the maximum TTL, never narrowing or lowering them.
func (s *Store) Apply(ctx context.Context, maxTTL time.Duration) error {
	ddl, err := postgres.SchemaSQL(postgres.WithTable(s.cfg.Table), postgres.WithNodeRange(s.cfg.MinNode, s.cfg.MaxNode),
		postgres.WithMaxTTL(maxTTL))
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, "nodeid:"+s.cfg.Table); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, ddl)
		return err
	})
	return s.wrapErr("apply the schema", err)
}

func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// CheckSchema verifies, read-only, that the tables exist with the expected
// columns and that the role has the privileges the lease statements need:
// SELECT and UPDATE on the lease and configuration tables, SELECT, INSERT
// and UPDATE on the history. It never creates, alters or repairs anything.
// A missing table, column or privilege gives an error for which Fatal is
// true, naming the table and privilege.
func (s *Store) CheckSchema(ctx context.Context) error {
	for _, q := range []struct {
		table, columns string
		privileges     []string
	}{
		{s.cfg.Table, "node_id, owner, epoch, acquired_at, expires_at, horizon_ms, timeline", []string{"SELECT", "UPDATE"}},
		{s.cfg.HistoryTable(), "node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, timeline",
			[]string{"SELECT", "INSERT", "UPDATE"}},
		{s.cfg.ConfigTable(), "min_node, max_node, max_ttl_ms, timeline, timeline_seen_at", []string{"SELECT", "UPDATE"}},
	} {
		exists, err := s.exists(ctx, q.table)
		if err == nil && !exists {
			err = &missingError{table: q.table}
		}
		if err != nil {
			return s.wrapErr("check schema", err)
		}
		for _, p := range q.privileges {
			var ok bool
			if err := s.db.QueryRowContext(ctx, `SELECT has_table_privilege($1::text, $2::text)`, q.table, p).Scan(&ok); err != nil {
				return s.wrapErr("check schema", err)
			}
			if !ok {
				return s.wrapErr("check schema", &privilegeError{table: q.table, privilege: p})
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
