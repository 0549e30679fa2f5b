package admin

import (
	"context"
	"database/sql"
	"time"
)

// State is the state of a node ID's row at the server's now().
type State string

// The states of a row.
const (
	Free        State = "free"        // never claimed, or released, and claimable
	Held        State = "held"        // leased and unexpired
	Expired     State = "expired"     // leased, lapsed, not yet claimed again, and claimable
	Evicted     State = "evicted"     // its lease evicted by an operator, and not yet expired
	Cooling     State = "cooling"     // not held, but its previous holder's horizon has not passed
	Quarantined State = "quarantined" // not held, last claimed before a failover or a restore, or of a creation not confirmed, not claimable yet
)

// Row is one row of the lease table.
type Row struct {
	NodeID     int64
	Owner      string
	Epoch      int64
	AcquiredAt time.Time // zero if never claimed
	ExpiresAt  time.Time // zero if free
	HorizonMs  int64
	// Generation is the table's generation at the row's last claim;
	// QuarantinedUntil, when not zero, is when a row last claimed in an
	// earlier generation becomes claimable; RestorePending is set when it
	// waits for the operator to declare a restore, with no end yet.
	Generation       int64
	QuarantinedUntil time.Time
	RestorePending   bool
	// CreationPending is set while the table's creation is not confirmed
	// (no row is claimable until every standby has replayed it).
	CreationPending bool
	// ClaimableAfter is the instant after which a row not held becomes
	// claimable: its horizon, an evicted lease's expiry, a quarantine.
	ClaimableAfter time.Time
}

// State returns the row's state at the server time now.
func (r Row) State(now time.Time) State {
	unexpired := !r.ExpiresAt.IsZero() && !r.ExpiresAt.Before(now)
	switch {
	case unexpired && r.Owner != "":
		return Held
	case unexpired:
		return Evicted
	case r.RestorePending || r.CreationPending || r.QuarantinedUntil.After(now):
		return Quarantined
	case !r.ClaimableAfter.Before(now):
		return Cooling
	case r.ExpiresAt.IsZero():
		return Free
	}
	return Expired
}

// The list marks the rows last claimed in an earlier generation as the
// claim does: quarantined until the generation's quarantine ends, or with
// no end while a restore waits to be declared. With asynchronous
// replication it reads the server's identity too, unless the server is a
// standby, and a server that is not the one recorded begins a new
// generation now, as the next claim will record (from its own time, so the
// quarantine shown may end sooner than the one that claim starts), never
// sooner than the quarantine running, as the claim's.
const listText = `WITH c AS (
    SELECT c.*, (extract(epoch FROM now()) * 1000)::bigint AS now_ms, {listChanged} AS changed, {listMoved} AS moved FROM {c} AS c
), g AS (
    SELECT c.generation + c.changed::integer AS gen, COALESCE(c.creation_pending, false) AS creating,
        CASE WHEN NOT c.changed THEN c.quarantine_until_ms WHEN NOT c.moved THEN GREATEST(c.quarantine_until_ms, c.now_ms + ` + quarantine + `) END AS quarantine_until_ms
    FROM c
)
SELECT t.node_id, t.owner, t.epoch, t.acquired_at,
    CASE WHEN isfinite(t.expires_at) THEN t.expires_at END, t.horizon_ms, t.claim_generation,
    CASE WHEN t.claim_generation < g.gen THEN to_timestamp(g.quarantine_until_ms / 1000.0) END,
    t.claim_generation < g.gen AND g.quarantine_until_ms IS NULL,
    to_timestamp(GREATEST(t.horizon_ms, CASE WHEN isfinite(t.expires_at) THEN (extract(epoch FROM t.expires_at) * 1000)::bigint END,
        CASE WHEN t.claim_generation < g.gen THEN g.quarantine_until_ms END) / 1000.0),
    COALESCE(g.creating, false), now()
FROM {t} AS t LEFT JOIN g ON true
WHERE t.node_id BETWEEN $1::integer AND $2::integer ORDER BY t.node_id`

// List returns every row of the range, ordered by node ID, and the server's
// now() of the same statement.
func (s *Store) List(ctx context.Context) ([]Row, time.Time, error) {
	watched, err := s.isWatched(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	q := s.listTrustedSQL
	if watched {
		q = s.listWatchedSQL
	}
	rows, err := s.db.QueryContext(ctx, q, s.cfg.MinNode, s.cfg.MaxNode)
	if err != nil {
		return nil, time.Time{}, s.wrapErr("list", err)
	}
	defer rows.Close()
	var (
		out []Row
		now time.Time
	)
	for rows.Next() {
		var (
			r                                         Row
			acquired, expires, quarantined, claimable sql.NullTime
			pending                                   sql.NullBool
		)
		if err := rows.Scan(&r.NodeID, &r.Owner, &r.Epoch, &acquired, &expires, &r.HorizonMs, &r.Generation, &quarantined,
			&pending, &claimable, &r.CreationPending, &now); err != nil {
			return nil, time.Time{}, s.wrapErr("list", err)
		}
		r.AcquiredAt, r.ExpiresAt, r.QuarantinedUntil = acquired.Time, expires.Time, quarantined.Time
		r.RestorePending, r.ClaimableAfter = pending.Bool, claimable.Time
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, s.wrapErr("list", err)
	}
	if now.IsZero() { // an empty range still needs the server's time
		if err := s.db.QueryRowContext(ctx, `SELECT now()`).Scan(&now); err != nil {
			return nil, time.Time{}, s.wrapErr("list", err)
		}
	}
	return out, now, nil
}

// HistoryRow is one claim of a node ID, from the history table. A claim may
// have stamped IDs only in the milliseconds (FromMs, HorizonMs].
type HistoryRow struct {
	NodeID     int64
	Epoch      int64
	Owner      string
	AcquiredAt time.Time
	FromMs     int64     // the previous holder's horizon
	EndedAt    time.Time // zero while the claim lasts
	EndReason  EndReason // "" while it lasts
	HorizonMs  int64     // the claim's horizon: final when ended, else the current one
	Generation int64     // the table's generation the claim was made in
}

// The open claim's horizon is the lease row's current one.
const historyColumns = `h.node_id, h.epoch, h.owner, h.acquired_at, h.from_ms, h.ended_at,
    COALESCE(h.end_reason, ''), COALESCE(h.horizon_ms, t.horizon_ms), h.generation`

const historyText = `SELECT ` + historyColumns + `
FROM {h} AS h JOIN {t} AS t USING (node_id)
WHERE h.node_id = $1::integer ORDER BY h.epoch DESC LIMIT $2::integer`

// History returns the latest limit claims of node ID node, newest first.
func (s *Store) History(ctx context.Context, node int64, limit int) ([]HistoryRow, error) {
	return s.claims(ctx, "history", s.historySQL, node, limit)
}

// The millisecond of acquired_at is floored: a holder's clock reads that
// millisecond during the part of it after the claim.
const whoText = `SELECT ` + historyColumns + `
FROM {h} AS h JOIN {t} AS t USING (node_id)
WHERE h.node_id = $1::integer AND h.from_ms < $2::bigint
  AND $2::bigint >= floor(extract(epoch FROM h.acquired_at) * 1000)::bigint - $3::bigint
  AND COALESCE(h.horizon_ms, t.horizon_ms) >= $2::bigint
ORDER BY h.epoch`

// Who returns the claims of node ID node that may have stamped an ID in unix
// millisecond ms. A claim may have stamped the milliseconds after the
// previous holder's horizon (FromMs) and no earlier than its own
// acquisition less maxSkew, the clock skew allowed between a holder and the
// database, up to its own horizon. Horizons partition each node ID's time
// line, so for an ID minted by a fenced generator whose clock was within
// maxSkew of the database's there is exactly one; none means no claim
// recorded in the history covers it.
func (s *Store) Who(ctx context.Context, node, ms int64, maxSkew time.Duration) ([]HistoryRow, error) {
	return s.claims(ctx, "who", s.whoSQL, node, ms, maxSkew.Milliseconds())
}

func (s *Store) claims(ctx context.Context, op, query string, args ...any) ([]HistoryRow, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.wrapErr(op, err)
	}
	defer rows.Close()
	var out []HistoryRow
	for rows.Next() {
		var (
			c     HistoryRow
			ended sql.NullTime
		)
		if err := rows.Scan(&c.NodeID, &c.Epoch, &c.Owner, &c.AcquiredAt, &c.FromMs, &ended, &c.EndReason, &c.HorizonMs, &c.Generation); err != nil {
			return nil, s.wrapErr(op, err)
		}
		c.EndedAt = ended.Time
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapErr(op, err)
	}
	return out, nil
}

// CountPrunable counts the history rows of claims that ended more than
// olderThan ago: the rows PruneHistory would delete now.
func (s *Store) CountPrunable(ctx context.Context, olderThan time.Duration) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, s.pruneSQL, olderThan.Milliseconds(), true).Scan(&n); err != nil {
		return 0, s.wrapErr("count the history to prune", err)
	}
	return n, nil
}

// PruneHistory deletes the history of claims that ended more than olderThan
// ago, and returns how many rows it deleted. Claims still open are kept.
func (s *Store) PruneHistory(ctx context.Context, olderThan time.Duration) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, s.pruneSQL, olderThan.Milliseconds(), false).Scan(&n); err != nil {
		return 0, s.wrapErr("prune history", err)
	}
	return n, nil
}
