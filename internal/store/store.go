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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid/internal/retry"
)

// Config names the table and the node range a Store works on.
type Config struct {
	// Table is the lease table, optionally schema-qualified; its history
	// table is HistoryTable(Table).
	Table string
	// MinNode and MaxNode bound the node IDs, inclusive.
	MinNode, MaxNode int64
}

// DefaultConfig returns the default table and node range.
func DefaultConfig() Config {
	return Config{Table: DefaultTable, MinNode: DefaultMinNode, MaxNode: DefaultMaxNode}
}

// Validate checks the table name and the node range.
func (c Config) Validate() error {
	if err := ValidateTable(c.Table); err != nil {
		return err
	}
	return ValidateRange(c.MinNode, c.MaxNode)
}

// HistoryTable returns the name of the history table.
func (c Config) HistoryTable() string { return HistoryTable(c.Table) }

// ConfigTable returns the name of the configuration table.
func (c Config) ConfigTable() string { return ConfigTable(c.Table) }

// Replication is how a table's database replicates, as the table records
// it: it decides which statements the Store runs.
type Replication string

// The replication modes (see postgres.Async and postgres.Sync).
const (
	Async Replication = "async" // a failover may lose commits: statements watch the server's identity
	Sync  Replication = "sync"  // a failover never does: no WAL function is used
)

// serverText is the SQL text of the server's identity that a mark names
// (Mark.Server) on a table that records asynchronous replication: its
// system identifier, WAL timeline and start.
const serverText = "{sid}::text || '/' || {tl}::text || '/' || {started}"

// expand substitutes the validated table names into a statement template:
// {t} the lease table, {h} the history table, {c} the configuration table,
// {mode} the mode, {era} EraOrigin, {tl} and {sid} the server's timeline and
// identity; and the parts that differ by mode: {head} the common head of the
// lease statements, {identity} the restore's record of the server, and
// {listChanged} and {listMoved} the list's tests of a server not yet seen
// and of another system than the one recorded, and {server} the text of the
// server's identity (its system identifier, timeline and start; empty for
// sync).
func expand(tmpl string, c Config, mode Replication) string {
	head, identity, listChanged, listMoved, server := syncHead, "", "false", "false", "''"
	if mode == Async {
		head = asyncHead
		identity = ", server_id = {sid}, wal_timeline = {tl}"
		server = serverText
		listChanged = "NOT pg_is_in_recovery() AND (c.server_id, c.wal_timeline) IS DISTINCT FROM\n" +
			"            (CASE WHEN NOT pg_is_in_recovery() THEN {sid} END, CASE WHEN NOT pg_is_in_recovery() THEN {tl} END)"
		listMoved = "(c.fence_ms IS NULL OR c.server_id <> CASE WHEN NOT pg_is_in_recovery() THEN {sid} END)"
	}
	tmpl = strings.NewReplacer("{head}", head, "{identity}", identity, "{listChanged}", listChanged, "{listMoved}", listMoved,
		"{server}", server).Replace(tmpl)
	return strings.NewReplacer("{t}", c.Table, "{h}", c.HistoryTable(), "{c}", c.ConfigTable(),
		"{mode}", string(mode), "{tl}", walTimeline, "{sid}", walServerID, "{era}", fmt.Sprint(EraOrigin),
		"{started}", serverStarted).Replace(tmpl)
}

// statements are the SQL texts of a Store for one replication mode.
type statements struct {
	claim, refusal, renew, release, list, restored, pendingRaise, confirmRaise string
	pendingCreation, confirmCreation                                           string
}

// Store runs the statements on one lease table.
type Store struct {
	db  *sql.DB
	cfg Config

	byMode map[Replication]*statements
	// mode is the mode of the statements the table needs (watchedMode),
	// recorded the mode the table records, once read: a table that records
	// sync on a server that tells its identity runs the async statements.
	mode, recorded atomic.Pointer[Replication]

	evictSQL, readConfigSQL, historySQL, whoSQL, pruneSQL, prunableSQL, endedSQL string
	probeSQL                                                                     string // of asynchronous replication only
	firstSQL                                                                     string // ClaimFirst's
}

// New returns a Store for the validated table and range of cfg. It does
// not touch the database.
func New(db *sql.DB, cfg Config) (*Store, error) { return newStore(db, cfg, nil) }

// newStore returns a Store whose statements read the server's clock
// through clock, when it is not nil: the tests give a server's clock an
// offset, or stop it, there.
func newStore(db *sql.DB, cfg Config, clock *strings.Replacer) (*Store, error) {
	if db == nil {
		return nil, errors.New("nodeid: the *sql.DB is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{db: db, cfg: cfg, byMode: map[Replication]*statements{}}
	expand := func(tmpl string, cfg Config, mode Replication) string {
		q := expand(tmpl, cfg, mode)
		if clock != nil {
			q = clock.Replace(q)
		}
		return q
	}
	for _, m := range []Replication{Async, Sync} {
		s.byMode[m] = &statements{
			claim: expand(claimTemplate, cfg, m), refusal: expand(refusalTemplate, cfg, m), renew: expand(renewTemplate, cfg, m),
			release: expand(releaseTemplate, cfg, m), list: expand(listTemplate, cfg, m),
			restored: expand(restoredTemplate, cfg, m), pendingRaise: expand(pendingRaiseTemplate, cfg, m),
			confirmRaise: expand(confirmRaiseTemplate, cfg, m), pendingCreation: expand(pendingCreationTemplate, cfg, m),
			confirmCreation: expand(confirmCreationTemplate, cfg, m),
		}
	}
	for _, q := range []struct {
		dst  *string
		tmpl string
	}{
		{&s.evictSQL, evictTemplate}, {&s.readConfigSQL, readConfigTemplate},
		{&s.historySQL, historyTemplate}, {&s.whoSQL, whoTemplate}, {&s.pruneSQL, pruneTemplate}, {&s.prunableSQL, prunableTemplate},
		{&s.endedSQL, endedTemplate},
	} {
		*q.dst = expand(q.tmpl, cfg, Sync)
	}
	s.probeSQL = expand(probeTemplate, cfg, Async)
	s.firstSQL = expand(firstClaimTemplate(), cfg, Async)
	return s, nil
}

// sqlFor returns the statements of the table's replication mode, reading
// the table's configuration first if the Store has not read it yet.
func (s *Store) sqlFor(ctx context.Context) (*statements, error) {
	if m := s.mode.Load(); m != nil {
		return s.byMode[*m], nil
	}
	if _, err := s.ReadConfig(ctx); err != nil {
		return nil, err
	}
	return s.byMode[*s.mode.Load()], nil
}

// Replication returns the table's replication mode as last read (or, before
// the configuration was read, the mode of the statements that ran), or ""
// before the first read.
func (s *Store) Replication() Replication {
	if m := s.recorded.Load(); m != nil {
		return *m
	}
	return s.stmtMode()
}

// stmtMode is the mode of the statements the Store runs, "" before the
// first read.
func (s *Store) stmtMode() Replication {
	if m := s.mode.Load(); m != nil {
		return *m
	}
	return ""
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
	Generation  int64     // the table's generation the claim was made in
}

// Refusal says why a claim found no node ID: the node IDs of the range that
// are not held but may not be claimed yet.
type Refusal struct {
	Held int64 // node IDs held by unexpired leases of their holders
	// Cooling node IDs are not held, but their previous holder's horizon,
	// an evicted lease's expiry or a failover's quarantine has not passed
	// yet.
	Cooling int64
	// Soonest is the cooling node ID that becomes claimable first, after
	// unix millisecond Until, with its horizon set at SetAt; Quarantined
	// when it waits for a failover's quarantine rather than a horizon,
	// Evicted when for the expiry of a lease an operator evicted.
	Soonest     int64
	Until       int64
	SetAt       time.Time
	Quarantined bool
	Evicted     bool
	// RestorePending is set while the table's server is not the one it
	// recorded (another system identifier: a dump restored elsewhere, an
	// upgrade, a move) and the operator has not declared the restore: no
	// node ID is handed out until then.
	RestorePending bool
	// CreationPending is set while the table's creation is not confirmed:
	// it was created on an asynchronous server with standbys, and no node
	// ID is handed out until every standby has replayed it
	// (ConfirmCreation).
	CreationPending bool
	// TTLAbove is set when the claim's TTL exceeds the table's maximum
	// MaxTTL; Unconfigured when the table has no recorded configuration.
	TTLAbove     bool
	MaxTTL       time.Duration
	Unconfigured bool
	// ModeChanged is set when the table records another replication mode
	// than the one the statement was built for: the Store uses the
	// table's from now on, and a new claim may succeed.
	ModeChanged bool
	Now         time.Time
}

// EndReason is why a claim ended, as its history records it.
type EndReason string

// The ends of a claim.
const (
	EndReleased EndReason = "released" // released by its holder
	EndExpired  EndReason = "expired"  // lapsed (and claimed again, or evicted after it lapsed)
	EndEvicted  EndReason = "evicted"  // evicted by an operator while it was held
)

// Outcome is the result of a renewal or release. When OK is false the
// statement changed nothing, and Owner, Epoch and Exists describe the row as
// a statement run after it found it (every change that stopped it has
// committed), so that the caller can tell why; EndReason is the history's
// end of the claim of the key, if it ended.
type Outcome struct {
	OK        bool
	Expires   time.Time // the new expiry, when OK and renewing
	Horizon   int64     // the horizon recorded, when OK
	Now       time.Time // the server's now()
	Exists    bool      // the node ID's row exists
	Owner     string
	Epoch     int64
	EndReason EndReason // the history's end of the claim, "" while it lasts
}

// The head of the claim and the refusal (the renewal and the release have
// writeHead), each of which starts with a comment line naming it, for
// pg_stat_statements and pg_stat_activity. q has
// the table's maximum TTL, its replication mode, the server's now() in unix
// ms, gen, the table's generation, and fence_ms: the end of the current
// generation's quarantine, after which a row last claimed in an earlier
// generation may be claimed again; pending is set while a restore is not
// declared, when no row may be claimed (fence_ms is then the largest
// bigint), and creating while the table's creation is not confirmed, when
// no row may be claimed either. q also makes the statement's commit durable (synchronous_commit
// on for its transaction only, whatever the server, database, role or
// session set): every write of a lease statement joins q, so q is read
// before anything is written. One statement, one transaction: no session
// state is left behind. docs/protocol.md states the rules; the model in
// model_test.go checks them.
//
// The asynchronous head reads the server's system identifier and timeline
// (id). When they are not the ones the table recorded, the server is not the
// one that last wrote the table, and this statement starts a new generation
// (seen). Another timeline of the same system (a promotion, a point-in-time
// recovery) quarantines the rows of earlier generations for the longest
// lease the lost history could hold, the larger of the maximum TTL and a
// pending raise, and a tenth more for the servers' clocks, or until the
// quarantine still running ends, if later: a declared restore's lasts the
// operator's bound, which may exceed the copy's maximum TTL. Another system
// identifier (a dump restored elsewhere, an upgrade, a move) cannot know how
// stale its copy is: its generation waits for the operator's declaration
// (restoredTemplate), which states the bound, and so does every generation
// after it until then; the quarantine that was running is kept
// (moved_fence_ms), which the declaration never ends sooner. Concurrent
// statements that see the change compute the same generation; the first to lock the configuration row records it,
// and the others' update finds the identity recorded and changes nothing.
// The synchronous head reads neither: the table's generation then changes
// only by an operator's declaration.
const asyncHead = `WITH id AS (
    SELECT {sid} AS sid, {tl} AS tli
), c AS (
    SELECT c.*, (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        (c.replication = 'async' OR c.server_id IS NOT NULL) AND (c.server_id, c.wal_timeline) IS DISTINCT FROM (id.sid, id.tli) AS changed,
        c.fence_ms IS NULL OR c.server_id <> id.sid AS moved,
        id.sid, id.tli
    FROM {c} AS c, id
    LIMIT 1
), g AS (
    SELECT c.max_ttl_ms, ` + watchedMode + ` AS mode, c.changed, c.generation + c.changed::integer AS gen, c.sid, c.tli, c.now_ms, now() AS now_at,
        COALESCE(c.creation_pending, false) AS creating,
        CASE WHEN NOT c.changed THEN c.fence_ms WHEN NOT c.moved THEN GREATEST(c.fence_ms, c.now_ms + ` + quarantine + `) END AS fence_ms,
        set_config('synchronous_commit', 'on', true) AS durable
    FROM c
), seen AS (
    UPDATE {c} SET generation = g.gen, generation_at = now(), server_id = g.sid, wal_timeline = g.tli, fence_ms = g.fence_ms,
        moved_fence_ms = CASE WHEN g.fence_ms IS NULL THEN GREATEST({c}.moved_fence_ms, {c}.fence_ms) ELSE {c}.moved_fence_ms END
    FROM g WHERE g.changed AND ({c}.server_id, {c}.wal_timeline) IS DISTINCT FROM (g.sid, g.tli)
), q AS (
    SELECT g.*, g.fence_ms IS NULL AS pending, COALESCE(g.fence_ms, 9223372036854775807) AS fence FROM g
)`

// writeHead is the head of the renewal and the release: the server's now()
// in unix ms, and the statement's commit made durable, as q. Neither runs
// the generation check: neither grants a node ID, and neither records the
// generation in a row (a lease that survived a failover keeps its row
// quarantined for the next claimer), so a generation that only a claim or
// a refusal starts starts no sooner than one a renewal would have started,
// and its quarantine ends no sooner. Nor do they read the configuration:
// a renewal's TTL is not checked against the maximum (see renewTemplate).
// Without them a release costs a third of a durable one-row update less.
const writeHead = `WITH q AS (
    SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        set_config('synchronous_commit', 'on', true) AS durable
)`

// quarantine is how long, in ms, a new generation quarantines the rows of
// earlier ones, given c, the configuration row: the longest lease the lost
// history could hold (the maximum TTL or a pending raise of it) and a tenth
// of it for the servers' clocks.
const quarantine = `GREATEST(c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10`

// watchedMode is the mode of the statements that a table's configuration
// row c needs: async (the generation check) on a table that records async,
// and on one that records sync whose DDL could read the server's identity
// (server_id): a synchronous standby may still lack an acknowledged commit
// (a cancelled wait for it), so only a server that cannot tell its
// timeline (a WAL-less managed service) is trusted never to lose one.
const watchedMode = `CASE WHEN c.replication = 'async' OR c.server_id IS NOT NULL THEN 'async' ELSE 'sync' END`

const syncHead = `WITH g AS (
    SELECT c.max_ttl_ms, ` + watchedMode + ` AS mode, false AS changed, c.generation AS gen,
        (extract(epoch FROM now()) * 1000)::bigint AS now_ms, now() AS now_at, c.fence_ms,
        COALESCE(c.creation_pending, false) AS creating,
        set_config('synchronous_commit', 'on', true) AS durable
    FROM {c} AS c
    LIMIT 1
), q AS (
    SELECT g.*, g.fence_ms IS NULL AS pending, COALESCE(g.fence_ms, 9223372036854775807) AS fence FROM g
)`

// claimable is the condition on a row t of the lease table, given q, that
// its previous holders can no longer stamp: its horizon has passed, and if
// it was last claimed in an earlier generation, the quarantine too.
const claimable = `(CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.fence) ELSE t.horizon_ms END) < q.now_ms`

// lapsedRows are the claimable lapsed rows of the range (a lease that
// expired, or that an operator evicted and that has expired since), found
// through the partial index on expires_at. They are compared with q.now_at,
// not now(): the planner cannot estimate a value from another CTE from the
// table's statistics, so that statistics older than the leases' expiries
// (which make every row look lapsed) cannot turn the read into a scan of
// the table; and their range and the lowest of them are of node_id + 0,
// which the primary key cannot serve (a walk over every held row when none
// has lapsed).
const lapsedRows = `t.expires_at > '-infinity' AND t.expires_at < q.now_at
      AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND ` + claimable

// freeRows are the claimable free rows of the range (never claimed, or
// released), found in node ID order through the partial index on
// node_id + 0.
const freeRows = `t.expires_at = '-infinity' AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND ` + claimable

// closeClaim ends the history row of a claim: the statements that end a
// claim insert its row, which conflicts with the row its claim recorded, and
// update that one. A conflict reaches the row through the history's primary
// key, whatever the planner's statistics (an UPDATE ... WHERE on the key is
// a plan, and one made while the history was small scans it). The row that
// the insert stands for is written only if the claim's own is missing, a
// history that lost it: it is rebuilt from the lease row, and from_ms, which
// the lease row does not keep, is 0 (any millisecond), so that Who still
// finds the claim.
const closeClaim = `ON CONFLICT (node_id, epoch) DO UPDATE
    SET ended_at = excluded.ended_at, end_reason = excluded.end_reason, horizon_ms = excluded.horizon_ms`

// EraOrigin is the origin of the eras of epochs, in unix seconds
// (2020-01-01T00:00:00Z): the first claim of a row after its generation
// ended takes an epoch whose high 31 bits count the seconds since then.
const EraOrigin = 1577836800

// The claim takes the lowest claimable node ID of the range and locks no
// other row. The free rows (never claimed or released) and the lapsed rows
// are each found through their own partial index. lo reads, without
// locking, the lowest claimable lapsed node ID (none, at once, on a table
// without lapsed rows) and, only if there is one, fmin the lowest
// claimable free one: the source with the lower is tried first, each read
// with FOR UPDATE SKIP LOCKED LIMIT 1, and the other only if the first
// yields nothing. So concurrent claimers never wait on each other, never
// get the same row, and never find nothing while a node ID is claimable.
// The free and the lapsed rows are read by node_id + 0, which the primary
// key cannot serve: in a generic plan the range's bounds are parameters,
// which the planner takes for a narrow range, and with statistics older
// than the leases it walked the primary key over every held row (19 ms a
// claim at 65,536 node IDs); so each is read through its own partial
// index, whatever the statistics say. A row whose horizon has not
// passed is not claimable: its next holder would have to wait for its
// clock. No row is claimable while a restore is not declared (q.pending),
// nor while the table's creation is not confirmed (q.creating).
// The statement ends the lapsed holder's history row and starts the new
// one, and answers with the claimed row, or with no row when it found
// nothing (refusalTemplate then says why). It claims only for the
// replication mode it was built for ({mode}): a Store whose table changed
// its mode finds nothing and learns the new mode from the refusal.
//
// The epoch is one more than the row's. On a row last claimed in an
// earlier generation it also jumps to an era of the database clock: the
// seconds since EraOrigin, times 2^32, with the low 32 bits counting on.
// That claim happens after the quarantine, more than nine tenths of a
// maximum TTL after any claim the lost history (a failover's lost commits,
// a restored backup's later life) could have made, even with the servers'
// clocks a tenth of a maximum TTL apart, so its era is above every era
// that history could have used: fencing tokens never repeat across
// failovers, moves, upgrades and restores. The claim is the only statement
// that records the generation in the row (claim_generation): a renewal or a
// release in a later generation leaves the row quarantined, since the lost
// history may hold a later claim of it. The horizon recorded is the
// registry's ($5) but never more than the server's now() plus the TTL, so
// that every stamp of a lease is bounded by the database's clock too: a
// quarantine relies on it. The expiry counts from now(), the start of the
// transaction, as the holder's deadline assumes; acquired_at is read after
// the row lock (clock_timestamp()), so that it never precedes the end of the
// release that freed the row.
//
// What a claim of a free row costs, and what for: one round trip (one
// statement, its own transaction) and one WAL flush at commit (a claim
// that returned survives a crash: the durability rule). It reads the
// configuration row and, in asynchronous mode, the server's system
// identifier and timeline (the generation and its quarantine: failovers
// and restores); the range of the lapsed-row index below now (empty on a
// table without lapsed rows; the lowest-claimable rule); one entry of the
// free-row index and its row. It writes the lease row (a new row version:
// an entry in the primary key and one in the lapsed-row index, as its
// expiry is now finite) and inserts the claim's history row (an entry in
// the history's primary key: Who, audit and the end reason a failed
// renewal reports). A lapsed row also ends its claim's history row, through
// the history's primary key (closeClaim). The configuration row is written
// only by the first claim on a new server (a new generation).
//
// $1, $2: range; $3: owner; $4: TTL in ms; $5: the horizon to record.
const claimTemplate = "-- nodeid claim\n{head}" + `, lo AS (
    SELECT (SELECT min(t.node_id + 0) FROM {t} AS t WHERE ` + lapsedRows + `) AS lapsed_min
    FROM q WHERE $4::bigint <= q.max_ttl_ms AND q.mode = '{mode}' AND NOT q.pending AND NOT q.creating
), fmin AS (
    SELECT t.node_id FROM {t} AS t, q WHERE ` + freeRows + `
    ORDER BY t.node_id + 0 LIMIT 1
), free_first AS (
    SELECT lapsed_min IS NULL OR COALESCE((SELECT node_id FROM fmin), $2::integer + 1) < lapsed_min AS yes FROM lo
), free AS (
    SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM {t} AS t, q
    WHERE ` + freeRows + `
    ORDER BY t.node_id + 0 LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), lapsed AS (
    SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM {t} AS t, q
    WHERE ` + lapsedRows + ` AND t.node_id >= (SELECT lapsed_min FROM lo)
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), pick AS (
    SELECT p.node_id, p.epoch, p.owner, p.acquired_at, p.expires_at, p.claim_generation,
        CASE WHEN p.claim_generation < q.gen THEN GREATEST(p.horizon_ms, q.fence) ELSE p.horizon_ms END AS prev_ms
    FROM (
        (SELECT * FROM free WHERE (SELECT yes FROM free_first))
        UNION ALL (SELECT * FROM lapsed WHERE (SELECT lapsed_min FROM lo) IS NOT NULL)
        UNION ALL (SELECT * FROM free WHERE NOT (SELECT yes FROM free_first))
        LIMIT 1
    ) AS p, q
), claimed AS (
    UPDATE {t} AS t
    SET owner = $3::text, acquired_at = clock_timestamp(),
        epoch = CASE WHEN pick.claim_generation < q.gen
            THEN GREATEST(t.epoch + 1, ((q.now_ms / 1000 - {era}) << 32) | ((t.epoch + 1) & 4294967295))
            ELSE t.epoch + 1 END,
        expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(pick.prev_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        claim_generation = q.gen
    FROM pick, q WHERE t.node_id = pick.node_id
    RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation
), ended AS (
    INSERT INTO {h} AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
    SELECT pick.node_id, pick.epoch, pick.owner, COALESCE(pick.acquired_at, now()), 0, pick.claim_generation,
        LEAST(pick.expires_at, now()), 'expired', pick.prev_ms
    FROM pick WHERE pick.owner <> ''
    ` + closeClaim + ` WHERE h.ended_at IS NULL
), started AS (
    INSERT INTO {h} (node_id, epoch, owner, acquired_at, from_ms, generation)
    SELECT c.node_id, c.epoch, $3::text, c.acquired_at, pick.prev_ms, c.claim_generation FROM claimed c, pick
)
` + claimedRow

// claimedRow is the claim's answer: the claimed row, or no row.
const claimedRow = `SELECT c.node_id, c.epoch, c.expires_at, pick.prev_ms, c.horizon_ms, c.claim_generation, now()
FROM claimed c, pick`

// The refusal says why a claim of $1 to $2 found no node ID; the Store
// runs it after a claim that answered with no row. It is a statement of
// its own, not a branch of the claim, because every execution of a cached
// plan initialises every node of it, run or not: as a branch it cost each
// claim a sixth of its time (0.09-0.11 ms in 0.56-0.77 ms, side by side on
// one connection), to serve the claims that find nothing. It reads the
// table as it is after the claim, which may differ from what the claim
// saw: it explains, and the Registry waits by it, but nothing is claimed
// or fenced by it.
const refusalTemplate = "-- nodeid refusal\n{head}\n" + `SELECT now(),
    (SELECT count(*) FROM {t} WHERE node_id BETWEEN $1::integer AND $2::integer AND owner <> '' AND expires_at >= now()),
    w.cooling, w.node_id, w.until_ms, w.set_at, w.quarantined, w.evicted,
    (SELECT max_ttl_ms FROM q), (SELECT mode FROM q), (SELECT pending FROM q), (SELECT creating FROM q)
FROM (
    SELECT count(*) OVER () AS cooling, t.node_id, x.until_ms, t.claim_generation < q.gen AND q.fence >= x.own_ms AS quarantined,
        t.owner = '' AND t.expires_at >= now() AS evicted,
        COALESCE((SELECT h.ended_at FROM {h} AS h WHERE h.node_id = t.node_id AND h.epoch = t.epoch),
            CASE WHEN isfinite(t.expires_at) THEN t.expires_at END) AS set_at
    FROM {t} AS t, q,
        LATERAL (SELECT GREATEST(t.horizon_ms, CASE WHEN isfinite(t.expires_at)
            THEN (extract(epoch FROM t.expires_at) * 1000)::bigint END) AS own_ms) AS o,
        LATERAL (SELECT CASE WHEN t.claim_generation < q.gen THEN GREATEST(o.own_ms, q.fence) ELSE o.own_ms END AS until_ms, o.own_ms) AS x
    WHERE (t.owner = '' OR t.expires_at < now()) AND t.node_id BETWEEN $1::integer AND $2::integer
      AND x.until_ms >= q.now_ms
    ORDER BY x.until_ms, t.node_id LIMIT 1
) AS w RIGHT JOIN (SELECT 1) AS one ON true`

// ClaimResult is the result of a claim that ran: the claim when OK, else
// the Refusal that says why no node ID was claimable.
type ClaimResult struct {
	Claim
	OK      bool
	Refusal Refusal
}

// Claim claims the lowest claimable node ID of lo to hi for owner, for ttl,
// recording horizonMs as the horizon (see claimTemplate). When no node ID
// can be claimed, the result is not OK and its Refusal says why (a second
// statement, refusalTemplate).
func (s *Store) Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (ClaimResult, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return ClaimResult{}, err
	}
	res, err := s.claim(ctx, q.claim, false, []any{lo, hi, owner, ttl.Milliseconds(), horizonMs}, owner)
	if err != nil || res.OK {
		return res, err
	}
	why, mode, err := s.refuse(ctx, q.refusal, lo, hi, ttl)
	if err != nil {
		return ClaimResult{}, err
	}
	if mode != "" && mode != s.stmtMode() {
		// The table's mode changed: the next claim uses the new one.
		s.mode.Store(&mode)
		why.ModeChanged = true
	}
	return ClaimResult{Refusal: why}, nil
}

// claim runs q, a claim statement of owner with args (once: see queryRow),
// and reads its answer (claimedRow's columns, then extra): the claim, or
// not OK when it answered with no row.
func (s *Store) claim(ctx context.Context, q string, once bool, args []any, owner string, extra ...any) (ClaimResult, error) {
	c := Claim{Key: Key{Owner: owner}}
	err := s.queryRow(ctx, q, once, args, append([]any{&c.NodeID, &c.Epoch, &c.Expires, &c.PrevHorizon, &c.Horizon, &c.Generation, &c.Now},
		extra...)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ClaimResult{}, nil
	case err != nil:
		return ClaimResult{}, s.wrapErr("claim", err)
	}
	return ClaimResult{Claim: c, OK: true}, nil
}

// refuse runs q, the refusal of a claim of lo to hi for ttl that found no
// node ID: why, and the table's replication mode ("" when it has no
// configuration).
func (s *Store) refuse(ctx context.Context, q string, lo, hi int64, ttl time.Duration) (Refusal, Replication, error) {
	var (
		why                           Refusal
		held, cooling, soonest, until sql.NullInt64
		setAt                         sql.NullTime
		quarantined, evicted, pending sql.NullBool
		creating                      sql.NullBool
		maxTTL                        sql.NullInt64
		mode                          sql.NullString
	)
	err := s.queryRow(ctx, q, false, []any{lo, hi},
		&why.Now, &held, &cooling, &soonest, &until, &setAt, &quarantined, &evicted, &maxTTL, &mode, &pending, &creating)
	if err != nil {
		return Refusal{}, "", s.wrapErr("claim", err)
	}
	why.Held, why.Cooling, why.Soonest, why.Until = held.Int64, cooling.Int64, soonest.Int64, until.Int64
	why.SetAt, why.Quarantined, why.Evicted = setAt.Time, quarantined.Bool, evicted.Bool
	why.MaxTTL, why.Unconfigured = time.Duration(maxTTL.Int64)*time.Millisecond, !maxTTL.Valid
	why.RestorePending, why.CreationPending = pending.Bool, creating.Bool
	why.TTLAbove = maxTTL.Valid && ttl.Milliseconds() > maxTTL.Int64
	return why, Replication(mode.String), nil
}

// firstClaimTemplate is the claim of a Store that has not read the table's
// configuration (ClaimFirst): the claim of asynchronous replication, which
// also checks what ReadConfig and CheckReplication check before a first
// claim, so that a new process's first claim is one statement. It claims
// only when the table records asynchronous replication and its tables are
// logged, and when the range is the caller's ($7) within the table's, or
// else the table's within the node IDs the caller's layout holds ($1 is 0
// and $2 is $6, the highest of them: the rows are the table's range). rng
// is then the table's range, which the answer carries in two more
// columns. Otherwise it claims nothing, and the caller reads the
// configuration as before, which says why. A table or server that refuses
// the statement (no such table, an earlier version's columns, the identity
// functions denied) fails it the same way.
//
// Its answer is the claimed row, with the table's range, or no row: the
// caller learns why from the configuration.
func firstClaimTemplate() string {
	const rng = `, rng AS (
    SELECT c.min_node, c.max_node FROM {c} AS c
    WHERE CASE WHEN $7::boolean THEN $1::integer >= c.min_node AND $2::integer <= c.max_node ELSE c.max_node <= $6::integer END
      AND NOT EXISTS (SELECT FROM pg_class WHERE oid IN ('{t}'::regclass, '{h}'::regclass, '{c}'::regclass) AND relpersistence <> 'p')
)`
	body, _, _ := strings.Cut(claimTemplate, claimedRow)
	body = strings.Replace(body, "AND NOT q.creating\n", "AND NOT q.creating AND EXISTS (SELECT FROM rng)\n", 1)
	body = strings.Replace(body, ", lo AS (", rng+", lo AS (", 1)
	return body + strings.Replace(claimedRow, "\nFROM claimed c, pick", ",\n    rng.min_node, rng.max_node\nFROM claimed c, pick, rng", 1)
}

// FirstClaim is the result of ClaimFirst: when OK, the claim, and the
// table's recorded range.
type FirstClaim struct {
	ClaimResult
	TableMinNode, TableMaxNode int64
}

// ClaimFirst claims as Claim does, for a Store that has not read the
// table's configuration, in one statement that also checks what a first
// claim needs (see firstClaimTemplate). With given, lo to hi is the range
// to claim from, which must be within the table's; without, the table's
// range, which must be within 0 to maxNode, the highest node ID the
// caller's IDs hold. It is not OK, and the caller reads the configuration
// (ReadConfig, CheckReplication) before claiming with Claim, whenever it
// claimed nothing or failed: those say why. Once OK, the Store runs the
// statements of asynchronous replication.
func (s *Store) ClaimFirst(ctx context.Context, lo, hi int64, given bool, maxNode int64, owner string, ttl time.Duration, horizonMs int64) (FirstClaim, error) {
	if !given {
		lo, hi = 0, maxNode
	}
	var tlo, thi sql.NullInt64
	res, err := s.claim(ctx, s.firstSQL, true, []any{lo, hi, owner, ttl.Milliseconds(), horizonMs, maxNode, given}, owner, &tlo, &thi)
	if err != nil || !res.OK || !tlo.Valid || !thi.Valid {
		return FirstClaim{}, err
	}
	m := Async
	s.mode.Store(&m)
	return FirstClaim{ClaimResult: res, TableMinNode: tlo.Int64, TableMaxNode: thi.Int64}, nil
}

// The renewal extends only a live lease of this owner and epoch: a lapsed
// lease is never revived. It raises the expiry, never lowers it: a renewal
// whose attempt the holder gave up on may commit after a later attempt,
// with the now() of its own, earlier transaction start, and the holder
// keeps the deadline of the later one. It raises the horizon, never lowers
// it: to the registry's ($5), never above the server's now() plus the TTL.
// It leaves
// the row's claim generation alone: a lease that survived a failover or a
// restore keeps its row quarantined for the next claimer (see
// claimTemplate). The conditions are on the row the UPDATE writes: when a
// concurrent statement (a claim, an eviction) changed the row first,
// PostgreSQL waits for it and tests them again on the row it committed, so
// that a lease evicted or taken over meanwhile is never renewed. The
// statement answers with the renewed row, or with no row when it changed
// nothing; only then does the Store read why (endedTemplate). The row
// lock is the UPDATE's own: reading the row FOR NO KEY UPDATE first, as
// earlier versions did, wrote a second WAL record and cost a renewal an
// eighth of its time.
//
// The TTL is not checked against the table's maximum here: a lease's claim
// was, and the maximum only rises, so that a lease in a copy of the table
// is within that copy's maximum; a raise that a failover may lose is
// pending until every standby has it, and the quarantine covers it.
//
// $1 node; $2 owner; $3 epoch; $4 TTL in ms; $5 horizon.
const renewTemplate = "-- nodeid renew\n" + writeHead + `, renewed AS (
    UPDATE {t} AS t
    SET expires_at = GREATEST(t.expires_at, now() + $4::bigint * interval '1 millisecond'),
        horizon_ms = GREATEST(t.horizon_ms, LEAST($5::bigint, q.now_ms + $4::bigint))
    FROM q
    WHERE ` + liveLease + `
    RETURNING t.expires_at, t.horizon_ms
)
SELECT r.expires_at, r.horizon_ms, now() FROM renewed AS r`

// liveLease is the condition on the row t that the lease $1, $2, $3 is
// live: its row, its holder, its claim, not expired by the database's
// clock.
const liveLease = `t.node_id = $1::integer AND t.owner = $2::text AND t.epoch = $3::bigint AND t.expires_at >= now()`

// The end of a lease says why a renewal or a release of the claim of node
// ID $1 at epoch $2 changed nothing: the row as it is once that statement
// has ended (its owner and epoch) and the history's end reason of the
// claim. The Store
// runs it after a renewal or a release that answered with no row; it
// reads and writes nothing else, and takes no lock.
const endedTemplate = `-- nodeid ended
SELECT t.owner, t.epoch, now(), (SELECT end_reason FROM {h} WHERE node_id = $1::integer AND epoch = $2::bigint)
FROM {t} AS t WHERE t.node_id = $1::integer`

// Renew extends the lease k by ttl from the server's now() and raises its
// horizon to horizonMs (see renewTemplate).
func (s *Store) Renew(ctx context.Context, k Key, ttl time.Duration, horizonMs int64) (Outcome, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return Outcome{}, err
	}
	var (
		expires sql.NullTime
		horizon sql.NullInt64
	)
	o, err := s.outcome(ctx, "renew", q.renew, k, []any{k.NodeID, k.Owner, k.Epoch, ttl.Milliseconds(), horizonMs},
		[]any{&expires, &horizon})
	o.Expires, o.Horizon = expires.Time, horizon.Int64
	return o, err
}

// outcome runs a renewal or a release of k, whose answer, when it changed
// the row, is the columns of dest and now(). When it changed nothing, the
// Store reads why (endedTemplate): the row's owner and epoch, and the
// history's end reason of the claim.
func (s *Store) outcome(ctx context.Context, op, q string, k Key, args, dest []any) (Outcome, error) {
	var o Outcome
	err := s.queryRow(ctx, q, false, args, append(dest, &o.Now)...)
	if err == nil {
		o.OK, o.Exists, o.Owner, o.Epoch = true, true, k.Owner, k.Epoch
		return o, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return o, s.wrapErr(op, err)
	}
	var reason sql.NullString
	err = s.queryRow(ctx, s.endedSQL, false, []any{k.NodeID, k.Epoch}, &o.Owner, &o.Epoch, &o.Now, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return o, nil
	}
	if err != nil {
		return o, s.wrapErr(op, err)
	}
	o.Exists, o.EndReason = true, EndReason(reason.String)
	return o, nil
}

// The release frees a live lease of this owner and epoch for immediate
// claim. The row and its epoch stay. The horizon becomes $4 when given (the
// exact latest millisecond stamped), and otherwise stays the promise
// recorded at the last renewal. Like the renewal, it leaves the row's claim
// generation alone, tests its conditions on the row it writes, and
// answers with no row when it changed nothing: the Store then reads the
// history's end reason of the claim (endedTemplate), so that a retry can
// tell its own earlier release from an operator's eviction.
//
// $1 node; $2 owner; $3 epoch; $4 horizon or NULL.
const releaseTemplate = "-- nodeid release\n" + writeHead + `, released AS (
    UPDATE {t} AS t
    SET owner = '', expires_at = '-infinity', horizon_ms = COALESCE($4::bigint, t.horizon_ms)
    FROM q
    WHERE ` + liveLease + `
    RETURNING t.node_id, t.epoch, t.horizon_ms, t.acquired_at, t.claim_generation
), ended AS (
    INSERT INTO {h} AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
    SELECT r.node_id, r.epoch, $2::text, COALESCE(r.acquired_at, now()), 0, r.claim_generation, now(), 'released', r.horizon_ms
    FROM released r
    ` + closeClaim + `
)
SELECT r.horizon_ms, now() FROM released AS r`

// NoHorizon is the exact horizon of a release that has none: the row keeps
// the horizon recorded at the last renewal.
const NoHorizon = -1

// Release frees the lease k, recording exactMs, the latest millisecond
// stamped under it, as its horizon; with NoHorizon the row keeps the one
// it has.
func (s *Store) Release(ctx context.Context, k Key, exactMs int64) (Outcome, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return Outcome{}, err
	}
	var (
		horizon sql.NullInt64
		arg     any
	)
	if exactMs != NoHorizon {
		arg = exactMs
	}
	o, err := s.outcome(ctx, "release", q.release, k, []any{k.NodeID, k.Owner, k.Epoch, arg}, []any{&horizon})
	o.Horizon = horizon.Int64
	if o.OK {
		o.EndReason = EndReleased
	}
	return o, err
}

// The eviction ends the lease of a stuck holder, but only for the epoch
// given, so that it can never hit a newer holder: the holder's next
// renewal fails (ErrEvicted). The row keeps its expiry, its horizon and its
// claim generation: it becomes claimable once the evicted lease has
// expired by the database's clock, its horizon has passed (the evicted
// holder stops minting at its deadline, before the expiry, and may have
// stamped up to the horizon), and, for a row of an earlier generation, the
// quarantine. Freeing it before the expiry would be safe only while no
// failover or restore loses the eviction: a holder whose clock is behind
// and whose lease survives on a copy that lacks the eviction would renew
// there and stamp again what the next holder stamped (docs/protocol.md,
// the model's evict-at-horizon). It is durable when it returns, and waits
// at most $3 ms for the row's lock (a long transaction holding it), so that
// it never queues the holder's renewals behind it: q sets both before the
// row is read.
//
// $1 node; $2 epoch; $3 lock timeout in ms.
const evictTemplate = `-- nodeid evict
WITH q AS (
    SELECT set_config('synchronous_commit', 'on', true) AS durable,
        set_config('lock_timeout', $3::bigint || 'ms', true) AS lock_timeout
), old AS (
    SELECT node_id, epoch, owner, expires_at FROM {t}
    WHERE node_id = $1::integer AND epoch = $2::bigint AND owner <> ''
      AND (SELECT durable IS NOT NULL AND lock_timeout IS NOT NULL FROM q)
    FOR UPDATE
), evicted AS (
    UPDATE {t} AS t SET owner = ''
    FROM old WHERE t.node_id = old.node_id
    RETURNING t.node_id, t.epoch, t.horizon_ms, t.expires_at, t.acquired_at, t.claim_generation
), ended AS (
    INSERT INTO {h} AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
    SELECT e.node_id, e.epoch, old.owner, COALESCE(e.acquired_at, now()), 0, e.claim_generation, LEAST(now(), old.expires_at),
        CASE WHEN old.expires_at < now() THEN 'expired' ELSE 'evicted' END, e.horizon_ms
    FROM evicted e, old
    ` + closeClaim + ` WHERE h.ended_at IS NULL
)
SELECT count(*), COALESCE(max(horizon_ms), 0), max(expires_at), now() FROM evicted`

// LockTimeout bounds how long maintenance (the DDL, an eviction, a
// restore) waits for a lock on the lease tables before it gives up.
const LockTimeout = time.Second

// Eviction is the result of an eviction.
type Eviction struct {
	OK        bool      // the row was evicted
	HorizonMs int64     // the horizon the row kept: the next holder stamps after it
	Expires   time.Time // the evicted lease's expiry, which the row kept
	Now       time.Time // the server's now()
}

// ClaimableAfter is when the evicted row becomes claimable, by the
// database's clock (unless a quarantine holds it longer): after the evicted
// lease's expiry and its horizon.
func (e Eviction) ClaimableAfter() time.Time {
	return latest(e.Expires, time.UnixMilli(e.HorizonMs))
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Evict ends the lease of node ID node if its current epoch is epoch and it
// is held (see evictTemplate). It waits at most LockTimeout for the row's
// lock, and fails with SQLSTATE 55P03 if another transaction holds it
// longer.
func (s *Store) Evict(ctx context.Context, node, epoch int64) (Eviction, error) {
	var (
		e       Eviction
		n       int
		expires sql.NullTime
	)
	if err := s.db.QueryRowContext(ctx, s.evictSQL, node, epoch, LockTimeout.Milliseconds()).Scan(&n, &e.HorizonMs, &expires, &e.Now); err != nil {
		return Eviction{}, s.wrapErr("evict", lockErr(err, "the lease row of node ID "+fmt.Sprint(node)))
	}
	e.OK, e.Expires = n == 1, expires.Time
	return e, nil
}

// The declaration of a restore starts a new generation from now: every row
// becomes quarantined for the longest lease the old history may hold (the
// largest of the operator's bound $2, the maximum TTL and a pending raise)
// and a tenth, or until the quarantine still running ends, if later (a
// second declaration with a smaller bound never shortens the first's, even
// with a move between them: the move kept it in moved_fence_ms), and
// its next claim takes an epoch of a new era (see
// claimTemplate), above any the restored or the lost history could hold.
// It ends a restore that a statement found pending (another system
// identifier). In asynchronous mode it also records the server's identity,
// so that the next statement does not start another generation.
//
// $1 lock timeout in ms; $2 the operator's bound, in ms.
const restoredTemplate = `-- nodeid restored
UPDATE {c} AS c SET generation = c.generation + 1, generation_at = now(),
    fence_ms = GREATEST(c.fence_ms, c.moved_fence_ms,
        (extract(epoch FROM now()) * 1000)::bigint + GREATEST($2::bigint, c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10),
    moved_fence_ms = NULL{identity}
FROM (SELECT set_config('synchronous_commit', 'on', true) AS durable,
    set_config('lock_timeout', $1::bigint || 'ms', true) AS lock_timeout) AS q
WHERE q.durable IS NOT NULL AND q.lock_timeout IS NOT NULL
RETURNING c.generation, c.fence_ms`

// Restored declares a restore (see restoredTemplate): maxTTL is the
// longest lease any holder of the old history may hold, which a copy of
// the table cannot know. It returns the new generation and when the
// quarantine of every node ID ends, by the database's clock.
func (s *Store) Restored(ctx context.Context, maxTTL time.Duration) (generation int64, until time.Time, err error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	var fence int64
	if err := s.db.QueryRowContext(ctx, q.restored, LockTimeout.Milliseconds(), maxTTL.Milliseconds()).Scan(&generation, &fence); err != nil {
		return 0, time.Time{}, s.wrapErr("restore", lockErr(err, "the configuration row of "+s.cfg.ConfigTable()))
	}
	return generation, time.UnixMilli(fence), nil
}

// A raise of the maximum TTL on a table that records asynchronous
// replication is pending (raise_ttl_ms) until every standby that may be
// promoted has replayed it: a standby that lacked it would quarantine for
// the old maximum only, after a failover that lost leases granted under the
// new one. The confirmation makes it the maximum, but never more than $2,
// the raise the standbys were seen to have (PendingRaise): a later raise,
// which they may lack, stays pending. And only on the server where that
// raise was read ($3, its system identifier, timeline and start): a WAL position
// means nothing on another timeline, where a standby of a promoted server
// can be past it and lack a raise made there since. Pending, a raise
// already lengthens every quarantine. The statement answers with the
// maximum it made (NULL when it changed nothing) and whether the server is
// the one of $3.
const confirmRaiseTemplate = `-- nodeid confirm raise
WITH q AS (
    SELECT set_config('synchronous_commit', 'on', true) AS durable,
        set_config('lock_timeout', $1::bigint || 'ms', true) AS lock_timeout, {server} AS server
), confirmed AS (
    UPDATE {c} AS c SET max_ttl_ms = LEAST(c.raise_ttl_ms, $2::bigint),
        raise_ttl_ms = CASE WHEN c.raise_ttl_ms > $2::bigint THEN c.raise_ttl_ms END
    FROM q
    WHERE q.durable IS NOT NULL AND q.lock_timeout IS NOT NULL AND q.server = $3::text AND c.raise_ttl_ms IS NOT NULL
        AND LEAST(c.raise_ttl_ms, $2::bigint) > c.max_ttl_ms
    RETURNING c.max_ttl_ms
)
SELECT (SELECT max_ttl_ms FROM confirmed), q.server = $3::text FROM q`

// ConfirmRaise makes the table's pending raise of its maximum TTL the
// maximum, up to m.Raise: the pending raise that PendingRaise read before
// every standby was seen to replay its position. It reports the maximum,
// and whether it raised it; a raise above m.Raise stays pending. On another
// server than the one m was read on (a failover, a move, a restart since) it changes
// nothing and returns ErrServerChanged: read the raise again there.
func (s *Store) ConfirmRaise(ctx context.Context, m RaiseMark) (maxTTL time.Duration, raised bool, err error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return 0, false, err
	}
	var (
		ms   sql.NullInt64
		same bool
	)
	err = s.db.QueryRowContext(ctx, q.confirmRaise, LockTimeout.Milliseconds(), m.Raise.Milliseconds(), m.Server).Scan(&ms, &same)
	switch {
	case err != nil:
		return 0, false, s.wrapErr("confirm the raise", lockErr(err, "the configuration row of "+s.cfg.ConfigTable()))
	case !same:
		return 0, false, ErrServerChanged
	case !ms.Valid:
		return 0, false, nil
	}
	return time.Duration(ms.Int64) * time.Millisecond, true, nil
}

// ErrServerChanged is ConfirmRaise's and ConfirmCreation's refusal on
// another server than the one their mark was read on, and what the
// errors of Standbys and WaitStandbys match when they read the standbys
// on another server than the mark's.
var ErrServerChanged = errors.New("the server is not the one the pending raise or creation was read on (a failover, a move or a restart since): read it again")

// RaiseMark is a pending raise of the maximum TTL as PendingRaise read it.
type RaiseMark struct {
	Raise time.Duration // the raise pending then, 0 when none
	Mark
}

// Mark is where a pending raise or creation was read (walMark).
type Mark struct {
	// LSN is a WAL position that the commit of what was read precedes: a
	// standby of that server that has replayed it has what was read. It
	// is one byte into the record that follows what was read, so that no
	// replication slot has reached it when the mark is read.
	LSN string
	// Server is the server it was read on: its system identifier, WAL
	// timeline and start ("" on a table that records synchronous
	// replication).
	Server string
	// Slots are the physical replication slots that existed then, each
	// as its name, a colon and the process that held it ("" when none
	// did), and a ">" after a slot that was past the position then: only
	// their restart_lsn says how far a standby has flushed, only while
	// that process still holds them, and never for a slot past the
	// position, whose standby reported a flush of another history.
	Slots []string
}

// walMark is what a mark reads besides what is pending: a WAL position
// that the commit of whatever the statement sees precedes, the server's
// identity, which gives the position its meaning, and the physical
// replication slots that exist then. The position is the next record's
// (pg_current_wal_insert_lsn): a commit is seen only once its record is
// inserted, though it may not be written yet (a DDL applied statement by
// statement on a database with synchronous_commit off commits
// asynchronously). The statement takes a transaction ID and commits
// durably, so that its own commit record, after the position, is flushed
// before the answer: the standbys can receive and replay past the
// position even on an idle primary, where the next record's position may
// lie past a page header that no record follows. A slot's restart_lsn
// tells how far its standby has flushed only once the standby has
// replied through it: a slot reserved after the mark starts at a
// checkpoint's redo pointer, which may be past the position while its
// standby lacks it; so only the slots that existed when the mark was read
// count, and each only while the process that held it then still holds
// it: a slot dropped and made again under its name is a new slot, and an
// active slot cannot be dropped (markSlots). The slots are read first
// (markHead), and the position after them: a slot's restart_lsn, whether
// its standby's last reply, a reserved redo pointer or where an operator
// advanced it, is then at most the position, and it may be the position
// itself on an idle primary, where nothing has been written since (a
// slot reserved during a checkpoint, or advanced, and held by a standby
// whose first reply has not come). So the mark waits for a byte past the
// position (scanMark), which no slot of the mark reaches but by its
// standby's replies. A slot's restart_lsn is what its standby reported,
// whatever it was sent: a standby that replayed more of an old primary's
// WAL than the standby promoted in its place reports its position on the
// old timeline, at every connection, and stays there, since it can never
// follow the new primary. So a slot that is past the position when the
// mark is read (a flush the server never wrote) is marked with a ">" and
// never counts; one that is not can reach a byte past the position only
// by replies of this server's history.
const walMark = `mark.lsn, {server}, mark.slots,
    set_config('synchronous_commit', 'on', true) IS NOT NULL AND pg_current_xact_id() IS NOT NULL`

// markHead reads the physical replication slots, then the position of the
// next WAL record, for walMark, and marks the slots that were past it: a
// statement that reads a mark is markHead, then its SELECT of walMark FROM
// the configuration and mark.
const markHead = `WITH seen AS MATERIALIZED (
    SELECT COALESCE(array_agg(slot_name::text || ':' || COALESCE(active_pid::text, '') ORDER BY slot_name), '{}') AS keys,
        COALESCE(array_agg(restart_lsn ORDER BY slot_name), '{}') AS restarts
    FROM pg_replication_slots WHERE slot_type = 'physical'
), x AS MATERIALIZED (
    SELECT pg_current_wal_insert_lsn() AS at, seen.keys, seen.restarts FROM seen
), mark AS MATERIALIZED (
    SELECT x.at::text AS lsn,
        (SELECT COALESCE(string_agg(u.k || CASE WHEN u.r > x.at THEN '>' ELSE '' END, ','), '')
            FROM unnest(x.keys, x.restarts) AS u (k, r)) AS slots
    FROM x
)
`

// markSlots lists the physical replication slots, each as its name, a
// colon and the process that holds it ("" when none does): slot names
// are lower-case letters, digits and underscores.
const markSlots = `(SELECT COALESCE(string_agg(slot_name::text || ':' || COALESCE(active_pid::text, ''), ','), '')
    FROM pg_replication_slots WHERE slot_type = 'physical')`

// pendingRaiseTemplate reads the pending raise and the mark (walMark).
const pendingRaiseTemplate = markHead + `SELECT COALESCE(raise_ttl_ms, 0), ` + walMark + ` FROM {c}, mark`

// scanMark reads walMark's columns after the others, into m, and moves
// its position a byte past the one read (walMark).
func (s *Store) scanMark(ctx context.Context, q, what string, m *Mark, others ...any) error {
	var lsn, slots string
	if err := s.db.QueryRowContext(ctx, q).Scan(append(others, &lsn, &m.Server, &slots, new(bool))...); err != nil {
		return s.wrapErr(what, err)
	}
	past, err := pastLSN(lsn)
	if err != nil {
		return s.wrapErr(what, err)
	}
	m.LSN = past
	if slots != "" {
		m.Slots = strings.Split(slots, ",")
	}
	return nil
}

// pastLSN returns the WAL position a byte after lsn ("X/Y", in hex).
func pastLSN(lsn string) (string, error) {
	hi, lo, ok := strings.Cut(lsn, "/")
	h, herr := strconv.ParseUint(hi, 16, 32)
	l, lerr := strconv.ParseUint(lo, 16, 32)
	if !ok || herr != nil || lerr != nil {
		return "", fmt.Errorf("a WAL position that is not one: %q", lsn)
	}
	v := (h<<32 | l) + 1
	return fmt.Sprintf("%X/%X", v>>32, uint32(v)), nil
}

// PendingRaise returns the table's pending raise of its maximum TTL (0 when
// none), the WAL position to wait for and the server it was read on:
// ConfirmRaise confirms that raise, not one made after this read, and only
// on that server.
func (s *Store) PendingRaise(ctx context.Context) (RaiseMark, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return RaiseMark{}, err
	}
	var (
		m  RaiseMark
		ms int64
	)
	if err := s.scanMark(ctx, q.pendingRaise, "read the pending raise", &m.Mark, &ms); err != nil {
		return RaiseMark{}, err
	}
	m.Raise = time.Duration(ms) * time.Millisecond
	return m, nil
}

// Standby is a standby of the primary: one it streams to now, as
// pg_stat_replication shows it, or a physical replication slot, which
// keeps the place of a standby even while it is disconnected.
type Standby struct {
	Name string // application_name, or "slot " and the slot's name
	Addr string // client_addr, "" for a local socket or a slot
	// Position is how far it has replayed (pg_stat_replication), or
	// flushed (a slot's restart_lsn): "" when the role may not see it
	// (Hidden), a standby that has not replied yet, or a slot never used.
	Position string
	Caught   bool // it has the position asked for
	// Hidden is set for a streaming standby whose position this role may
	// not see, and that streams from no slot to judge it by.
	Hidden bool
	// New is set for a slot made, or taken up by another process, since
	// the mark was read: its restart_lsn says nothing of the standby the
	// mark saw, and it never counts as caught up.
	New bool
	// Foreign is set for a position that may be of another history: a
	// standby that reports having replayed the mark's position, which its
	// connection has not been sent (a standby that replayed more of an old
	// primary's WAL than the standby promoted in its place, and can never
	// follow it; or one that has just connected), or a slot that was past
	// the WAL the server had written when the mark was read. It is not
	// caught up while so.
	Foreign bool
}

// walClient is the condition on a row r of pg_stat_replication that its
// WAL sender streams to a client that is no server that may be promoted,
// and that no confirmation waits for (E2 of docs/protocol.md): the sender
// of a base backup's files (state backup), a logical decoding client (it
// holds a logical slot), and a client that receives the WAL and never
// replays it (pg_receivewal, pg_basebackup -X stream: it reports a written
// position and no replayed one). A standby that has connected and not
// replied yet reports neither, and is waited for; so is one whose replay is
// paused or delayed, which reports the position it replayed. A role that
// may not see the positions (pg_read_all_stats) sees no client of the
// third kind: its senders, and their slots, are then waited for.
const walClient = `r.state = 'backup' OR r.write_lsn IS NOT NULL AND r.replay_lsn IS NULL
        OR EXISTS (SELECT FROM pg_replication_slots AS l WHERE l.slot_type = 'logical' AND l.active_pid = r.pid)`

// standbysTemplate lists the standbys streaming now (not the WAL clients:
// walClient), with how far each has
// replayed, and the physical replication slots, with how far each
// standby has flushed (what a promotion replays). A slot counts only as
// the mark saw it ($2, markSlots): held by the same process then and now
// (an active slot cannot be dropped, so it is the slot the mark saw, and
// its restart_lsn moves only by its standby's replies). A slot held by
// none now is behind: it may have been made again since, at a redo
// pointer past the mark. A slot the mark did not see, or held by another
// process than then, is New: read the mark again (walMark); one that was
// past the mark's position when the mark was read ("name:pid>") never
// counts, and is Foreign. A streaming standby's replay_lsn is what it
// reports, and a standby of another history (one that replayed more of an
// old primary's WAL than this server had when it was promoted) reports
// its position on the old timeline at every connection, while this server
// sends it that timeline up to the fork, again and again: it counts only
// once its connection has been sent the mark's position too (sent_lsn),
// which a connection that streams an old timeline never is, as the
// mark's position follows the fork. Roles that
// are neither superusers nor members of pg_read_all_stats see the
// streaming standbys without their positions: a standby that streams from
// a slot (the slot's active_pid, which any role may read) is then judged
// by its slot alone, and one without a slot is Hidden. Every row, and one
// row with no standby when there is none, names the server the statement
// ran on ({server}, "" on a standby, or when the mark names none, $3):
// the positions say something of a mark's standbys only when read on the
// mark's server, which a failover, or a pooler that sends reads to a
// standby (Pgpool-II's load balancing), may not be.
const standbysTemplate = `WITH clients AS (
    SELECT r.pid FROM pg_stat_replication AS r
    WHERE ` + walClient + `
)
SELECT me.server, x.name, x.addr, x.position, x.caught, x.hidden, x.new, x.other
FROM (SELECT CASE WHEN $3::text = '' OR pg_is_in_recovery() THEN '' ELSE {server} END AS server) AS me
LEFT JOIN (
    SELECT COALESCE(r.application_name, ''), COALESCE(host(r.client_addr), ''),
        COALESCE(r.replay_lsn::text, ''), COALESCE(r.replay_lsn >= $1::pg_lsn AND r.sent_lsn >= $1::pg_lsn, false),
        r.replay_lsn IS NULL AND NOT pg_has_role('pg_read_all_stats', 'USAGE'), false,
        COALESCE(r.replay_lsn >= $1::pg_lsn AND NOT r.sent_lsn >= $1::pg_lsn, false)
    FROM pg_stat_replication AS r
    WHERE (r.replay_lsn IS NOT NULL OR pg_has_role('pg_read_all_stats', 'USAGE')
        OR NOT EXISTS (SELECT FROM pg_replication_slots AS s WHERE s.slot_type = 'physical' AND s.active_pid = r.pid))
      AND r.pid NOT IN (SELECT pid FROM clients)
    UNION ALL
    SELECT 'slot ' || s.slot_name, '', COALESCE(s.restart_lsn::text, ''),
        COALESCE(s.restart_lsn >= $1::pg_lsn, false) AND s.active_pid IS NOT NULL AND k.key = ANY (m.keys), false,
        NOT s.slot_name::text = ANY (m.names) OR s.active_pid IS NOT NULL AND NOT k.key = ANY (m.seen),
        k.key = ANY (m.ahead)
    FROM pg_replication_slots AS s,
        LATERAL (SELECT s.slot_name::text || ':' || COALESCE(s.active_pid::text, '') AS key) AS k,
        (SELECT COALESCE(array_agg(x) FILTER (WHERE x NOT LIKE '%>'), '{}') AS keys, COALESCE(array_agg(rtrim(x, '>')), '{}') AS seen,
            COALESCE(array_agg(rtrim(x, '>')) FILTER (WHERE x LIKE '%>'), '{}') AS ahead, COALESCE(array_agg(split_part(x, ':', 1)), '{}') AS names
            FROM unnest(string_to_array($2::text, ',')) AS x) AS m
    WHERE s.slot_type = 'physical' AND (s.active_pid IS NULL OR s.active_pid NOT IN (SELECT pid FROM clients))
) AS x (name, addr, position, caught, hidden, new, other) ON true
ORDER BY 2, 3`

// standbysSQL is standbysTemplate with the server's identity as a mark
// names it on a table that records asynchronous replication.
var standbysSQL = strings.NewReplacer("{sid}", walServerID, "{tl}", walTimeline, "{started}", serverStarted).Replace(
	strings.ReplaceAll(standbysTemplate, "{server}", serverText))

// Standbys returns the server's standbys (see Standby), each with whether
// it has m.LSN; only the slots of m.Slots count, as m saw them. A zero m
// stands for the server's WAL position now and its slots now, which
// Standbys returns. When m names a server (m.Server) and the standbys
// were read on another (a failover since m was read, or a pooler that
// sends reads to a standby), it returns an error that matches
// ErrServerChanged: their positions say nothing of m's standbys.
func (s *Store) Standbys(ctx context.Context, m Mark) (Mark, []Standby, error) {
	if m.LSN == "" {
		var slots string
		if err := s.db.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text, `+markSlots).Scan(&m.LSN, &slots); err != nil {
			return Mark{}, nil, s.wrapErr("read the WAL position", err)
		}
		if slots != "" {
			m.Slots = strings.Split(slots, ",")
		}
	}
	rows, err := s.db.QueryContext(ctx, standbysSQL, m.LSN, strings.Join(m.Slots, ","), m.Server)
	if err != nil {
		return Mark{}, nil, s.wrapErr("read the standbys", err)
	}
	defer rows.Close()
	var (
		out    []Standby
		server string
	)
	for rows.Next() {
		var (
			sb                             Standby
			name, addr, pos                sql.NullString
			caught, hidden, fresh, foreign sql.NullBool
		)
		if err := rows.Scan(&server, &name, &addr, &pos, &caught, &hidden, &fresh, &foreign); err != nil {
			return Mark{}, nil, s.wrapErr("read the standbys", err)
		}
		if !name.Valid {
			continue // no standby, no slot
		}
		sb.Name, sb.Addr, sb.Position = name.String, addr.String, pos.String
		sb.Caught, sb.Hidden, sb.New, sb.Foreign = caught.Bool, hidden.Bool, fresh.Bool, foreign.Bool
		out = append(out, sb)
	}
	if err := rows.Err(); err != nil {
		return Mark{}, nil, s.wrapErr("read the standbys", err)
	}
	if m.Server != "" && server != m.Server {
		where := "a standby"
		if server != "" {
			where = "server " + server
		}
		return Mark{}, nil, fmt.Errorf("%w: the standbys' positions were read on %s, not on server %s (a failover since, or a pooler that sends reads to a standby)",
			ErrServerChanged, where, m.Server)
	}
	return m, out, nil
}

// A table created asynchronously is pending (creation_pending) until
// every standby and physical replication slot the server has once the
// creation has committed has replayed it: a failover to a standby that
// lacked it would find no table, and a table created again there would
// hand out the node IDs and epochs that the lost one had handed out, with
// nothing to quarantine them. No claim is made in a creation a failover
// can lose. The mark is a raise's (walMark).
const pendingCreationTemplate = markHead + `SELECT COALESCE(creation_pending, false), ` + walMark + ` FROM {c}, mark`

// confirmCreationTemplate ends a pending creation, only on the server its
// mark was read on ($2). It answers whether it confirmed, and whether the
// server is that one.
const confirmCreationTemplate = `-- nodeid confirm creation
WITH q AS (
    SELECT set_config('synchronous_commit', 'on', true) AS durable,
        set_config('lock_timeout', $1::bigint || 'ms', true) AS lock_timeout, {server} AS server
), confirmed AS (
    UPDATE {c} AS c SET creation_pending = NULL
    FROM q
    WHERE q.durable IS NOT NULL AND q.lock_timeout IS NOT NULL AND q.server = $2::text AND c.creation_pending
    RETURNING true
)
SELECT EXISTS (SELECT FROM confirmed), q.server = $2::text FROM q`

// CreationMark is a pending creation as PendingCreation read it.
type CreationMark struct {
	Pending bool // the creation was pending then
	Mark
}

// PendingCreation reads whether the table's creation is pending, with the
// WAL position to wait for and the server it was read on.
func (s *Store) PendingCreation(ctx context.Context) (CreationMark, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return CreationMark{}, err
	}
	var m CreationMark
	if err := s.scanMark(ctx, q.pendingCreation, "read the pending creation", &m.Mark, &m.Pending); err != nil {
		return CreationMark{}, err
	}
	return m, nil
}

// ConfirmCreation ends the table's pending creation, once every standby
// has replayed m.LSN, on the server m was read on; on another it changes
// nothing and returns ErrServerChanged. It reports whether it confirmed
// the creation (false when it was not pending).
func (s *Store) ConfirmCreation(ctx context.Context, m CreationMark) (bool, error) {
	q, err := s.sqlFor(ctx)
	if err != nil {
		return false, err
	}
	var confirmed, same bool
	err = s.db.QueryRowContext(ctx, q.confirmCreation, LockTimeout.Milliseconds(), m.Server).Scan(&confirmed, &same)
	switch {
	case err != nil:
		return false, s.wrapErr("confirm the creation", lockErr(err, "the configuration row of "+s.cfg.ConfigTable()))
	case !same:
		return false, ErrServerChanged
	}
	return confirmed, nil
}

// SettleCreation confirms the table's creation if it is pending, once
// every standby has replayed it (WaitStandbys), reading it again after a
// change of server. It waits until ctx ends; behind, if not nil, is told
// once which standbys it waits for. Standbys read twice on another server
// than the primary the creation was read on, unchanged between the two
// (a pooler that sends reads to a standby), end it with their error.
func (s *Store) SettleCreation(ctx context.Context, behind func(lsn string, sbs []Standby)) error {
	elsewhere := ""
	for {
		m, err := s.PendingCreation(ctx)
		if err != nil || !m.Pending {
			return err
		}
		err = s.WaitStandbys(ctx, m.Mark, behind)
		switch {
		case errors.Is(err, ErrSlotsChanged):
			continue
		case errors.Is(err, ErrServerChanged) && m.Server != elsewhere:
			elsewhere = m.Server // read the mark again where the standbys are read
			continue
		case err != nil:
			return err
		}
		if _, err := s.ConfirmCreation(ctx, m); !errors.Is(err, ErrServerChanged) {
			return err
		}
	}
}

// standbyPoll is how often WaitStandbys reads the standbys' positions.
const standbyPoll = 200 * time.Millisecond

// WaitStandbys waits until every standby the primary streams to, and
// every physical replication slot, has the WAL position of m. behind, if
// not nil, is told once which have not. A slot made, or taken up by
// another process, since m was read, whose position says nothing of the
// standby m saw, gives ErrSlotsChanged at once: read a mark again. The
// standbys read on another server than m's give an error that matches
// ErrServerChanged at once (Standbys). A standby whose position this role
// may not see gives a *HiddenStandbyError at once; the end of ctx, a
// *StandbysBehindError naming the standbys still behind.
func (s *Store) WaitStandbys(ctx context.Context, m Mark, behind func(lsn string, sbs []Standby)) error {
	lsn := m.LSN
	var late []Standby // behind at the last read
	for said := false; ; {
		_, sbs, err := s.Standbys(ctx, m)
		if err != nil && late != nil && ctx.Err() != nil {
			// ctx ended as the standbys were read again: they are behind
			// as the last read found them.
			return &StandbysBehindError{Behind: late, LSN: lsn}
		} else if err != nil {
			return err
		}
		late = nil
		for _, sb := range sbs {
			switch {
			case sb.New:
				return ErrSlotsChanged
			case sb.Hidden:
				return &HiddenStandbyError{Standby: sb, LSN: lsn}
			case !sb.Caught:
				late = append(late, sb)
			}
		}
		if len(late) == 0 {
			return nil
		}
		if !said && behind != nil {
			behind(lsn, late)
			said = true
		}
		select {
		case <-ctx.Done():
			return &StandbysBehindError{Behind: late, LSN: lsn}
		case <-time.After(standbyPoll):
		}
	}
}

// ErrSlotsChanged is WaitStandbys' answer when a physical replication
// slot was made, or taken up by another process, since its mark was read:
// read a mark again.
var ErrSlotsChanged = errors.New("a replication slot was made, or taken up by another process, since the mark was read: read it again")

// HiddenStandbyError is WaitStandbys' refusal when this role may not see
// how far a standby has replayed: pg_stat_replication shows the positions
// to superusers and members of pg_read_all_stats.
type HiddenStandbyError struct {
	Standby Standby
	LSN     string
}

func (e *HiddenStandbyError) Error() string {
	return fmt.Sprintf("this role cannot see how far standby %s has replayed (pg_stat_replication shows the positions to superusers and members of pg_read_all_stats)",
		e.Standby.Label())
}

// StandbysBehindError is WaitStandbys' error when its context ended
// before every standby had replayed LSN.
type StandbysBehindError struct {
	Behind []Standby
	LSN    string
}

func (e *StandbysBehindError) Error() string {
	return fmt.Sprintf("these standbys have not replayed WAL position %s: %s", e.LSN, Labels(e.Behind))
}

// Label names the standby for messages: its name, its address, and how
// far it has replayed.
func (sb Standby) Label() string {
	name := sb.Name
	if name == "" {
		name = "-"
	}
	if sb.Addr != "" {
		name += " (" + sb.Addr + ")"
	}
	switch {
	case sb.Position == "" && strings.HasPrefix(sb.Name, "slot "):
		return name + " (never used)"
	case sb.Position != "" && !sb.Caught && sb.Foreign:
		return name + " at " + sb.Position + ", which this server never sent it (another history?)"
	case sb.Position != "" && !sb.Caught:
		return name + " at " + sb.Position
	}
	return name
}

// Labels names the standbys for messages, comma-separated.
func Labels(sbs []Standby) string {
	out := make([]string, len(sbs))
	for i, sb := range sbs {
		out[i] = sb.Label()
	}
	return strings.Join(out, ", ")
}

// lockErr names what a statement that gave up waiting for a lock
// (SQLSTATE 55P03, lock_timeout) waited for.
func lockErr(err error, what string) error {
	if SQLState(err) != pgerrcode.LockNotAvailable {
		return err
	}
	return fmt.Errorf("waited %s for a lock on %s, which another transaction holds (look for it in pg_stat_activity), and gave up so as not to queue the fleet's renewals behind it: %w",
		LockTimeout, what, err)
}

// TableConfig is what a lease table records of its configuration.
type TableConfig struct {
	MinNode, MaxNode int64
	MaxTTL           time.Duration
	// Replication is how the table's database replicates.
	Replication Replication
	// PendingMaxTTL is a raise of MaxTTL not yet confirmed (asynchronous
	// replication: until every standby has it), 0 if none. Quarantines
	// already count with it; leases may not use it yet.
	PendingMaxTTL time.Duration
	// Generation is the table's generation, which began at GenerationAt:
	// rows last claimed in an earlier one are quarantined until
	// QuarantineUntil. RestorePending is set while the server is not the
	// one the table recorded (another system identifier) and the operator
	// has not declared the restore (Store.Restored): no node ID is handed
	// out until then.
	Generation      int64
	GenerationAt    time.Time
	QuarantineUntil time.Time
	RestorePending  bool
	// CreationPending is set while the table's creation is not confirmed
	// (see ConfirmCreation): no node ID is handed out until then.
	CreationPending bool
	// ServerID and Timeline identify the server that began the generation
	// (0 when not recorded: a table that records sync on a server that
	// refuses the WAL functions).
	ServerID, Timeline int64
	// Watched is set when the statements run the generation check: on
	// every table but one that records sync on a server that cannot tell
	// its identity, which is trusted never to lose an acknowledged commit.
	Watched bool
	// Unlogged names the tables of the lease table that are UNLOGGED (or
	// temporary): a crash empties them. Empty when all are logged.
	Unlogged string
}

// readConfigTemplate reads moved_fence_ms too, which nothing but the
// statements needs, so that a table without it is an earlier version's.
const readConfigTemplate = `SELECT min_node, max_node, max_ttl_ms, COALESCE(raise_ttl_ms, 0), replication, generation, generation_at,
    fence_ms, COALESCE(server_id, 0), COALESCE(wal_timeline, 0), moved_fence_ms IS NULL, COALESCE(creation_pending, false),
    (SELECT COALESCE(string_agg(oid::regclass::text, ', ' ORDER BY oid::regclass::text), '') FROM pg_class
     WHERE oid IN (to_regclass('{t}'), to_regclass('{h}'), to_regclass('{c}')) AND relpersistence <> 'p')
FROM {c}`

// ReadConfig reads the table's recorded configuration, and from then on
// the Store runs the statements of its replication mode. A table created
// before configurations were recorded, or by a version of nodeid that
// recorded less, gives ErrUnconfigured; a table that is UNLOGGED
// gives a Fatal error naming it.
func (s *Store) ReadConfig(ctx context.Context) (TableConfig, error) {
	var (
		c           TableConfig
		ms, raiseMs int64
		fence       sql.NullInt64
		mode        string
	)
	err := s.db.QueryRowContext(ctx, s.readConfigSQL).Scan(&c.MinNode, &c.MaxNode, &ms, &raiseMs, &mode, &c.Generation,
		&c.GenerationAt, &fence, &c.ServerID, &c.Timeline, new(bool), &c.CreationPending, &c.Unlogged)
	missing := SQLState(err) == pgerrcode.UndefinedTable
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
	case errors.Is(err, sql.ErrNoRows) || missing || SQLState(err) == pgerrcode.UndefinedColumn:
		return c, s.wrapErr("read configuration", fmt.Errorf("%w (it was made by an earlier version of nodeid): bring it up to date with nodeid init, or the DDL of postgres.Schema.SQL applied as its owner",
			ErrUnconfigured))
	case err != nil:
		return c, s.wrapErr("read configuration", err)
	case c.Unlogged != "":
		return c, s.wrapErr("read configuration", &unloggedError{tables: c.Unlogged})
	}
	c.MaxTTL, c.PendingMaxTTL = time.Duration(ms)*time.Millisecond, time.Duration(raiseMs)*time.Millisecond
	c.RestorePending = !fence.Valid
	if fence.Valid {
		c.QuarantineUntil = time.UnixMilli(fence.Int64)
	}
	c.Replication = Replication(mode)
	c.Watched = c.Replication == Async || c.ServerID != 0
	stmts := Sync
	if c.Watched {
		stmts = Async
	}
	s.mode.Store(&stmts)
	s.recorded.Store(&c.Replication)
	return c, nil
}

// The probe evaluates what the asynchronous statements read of the server:
// its system identifier and timeline.
const probeTemplate = `SELECT {sid}, {tl}`

// CheckReplication checks that the server allows what the table's
// replication mode needs: in asynchronous mode, the functions that tell the
// server's identity and timeline. A server that refuses them gives a Fatal
// error naming the functions and the mode; a standby (recovery in progress)
// gives a retryable one. In synchronous mode nothing is needed.
func (s *Store) CheckReplication(ctx context.Context) error {
	if _, err := s.sqlFor(ctx); err != nil {
		return err
	}
	if s.stmtMode() != Async {
		return nil
	}
	var sid, tl int64
	err := s.db.QueryRowContext(ctx, s.probeSQL).Scan(&sid, &tl)
	if err == nil || Retryable(err) || SQLState(err) == "" {
		return s.wrapErr("check the server", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrcode.ObjectNotInPrerequisiteState && strings.Contains(pe.Message+pe.Hint, "recovery") {
		return s.wrapErr("check the server", &recoveryError{err: err})
	}
	return s.wrapErr("check the server", &WALError{err: err})
}

// exists reports whether a relation of that name exists. It needs no
// privilege on it.
func (s *Store) exists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok)
	return ok, err
}

// Create creates the lease, history and configuration tables when the
// lease table is missing, recording the Store's range and maxTTL (and
// asynchronous replication), fills the range and analyses the table. It
// reports whether it created them. Many processes may call it at once: a
// transaction-scoped advisory lock serialises them, and only the first
// creates.
func (s *Store) Create(ctx context.Context, maxTTL time.Duration) (bool, error) {
	if exists, err := s.exists(ctx, s.cfg.Table); err != nil || exists {
		return false, s.wrapErr("look up", err)
	}
	ddl, err := Schema{Table: s.cfg.Table, MinNode: s.cfg.MinNode, MaxNode: s.cfg.MaxNode, MaxTTL: maxTTL}.SQL()
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
	if SQLState(err) == pgerrcode.InsufficientPrivilege {
		err = fmt.Errorf("table %s does not exist, and this role may not create it: %w", s.cfg.Table, err)
	}
	if err != nil {
		return false, s.wrapErr("create", classifyDDL(err))
	}
	if created {
		return true, s.confirmAlone(ctx)
	}
	return false, nil
}

// confirmAlone confirms the table's pending creation at once if the
// server has neither a standby nor a physical replication slot now that
// the creation has committed: none can lack it. Elsewhere the creation
// stays pending, for SettleCreation (init, Acquire) to wait for them.
func (s *Store) confirmAlone(ctx context.Context) error {
	if tc, err := s.ReadConfig(ctx); err != nil || !tc.CreationPending {
		return err
	}
	m, err := s.PendingCreation(ctx)
	if err != nil || !m.Pending {
		return err
	}
	_, sbs, err := s.Standbys(ctx, m.Mark)
	if errors.Is(err, ErrServerChanged) || err == nil && len(sbs) > 0 {
		return nil // standbys to wait for, or read elsewhere: left pending
	} else if err != nil {
		return err
	}
	if _, err := s.ConfirmCreation(ctx, m); !errors.Is(err, ErrServerChanged) {
		return err
	}
	return nil
}

// Apply runs the DDL of Schema.SQL for the Store's table and range and
// maxTTL, keeping the table's replication mode; see ApplyMode.
func (s *Store) Apply(ctx context.Context, maxTTL time.Duration) error {
	return s.ApplyMode(ctx, maxTTL, "")
}

// ApplyMode runs the DDL of Schema.SQL for the Store's table and range and
// maxTTL (and replication, unless it is "", which keeps the table's) in one
// transaction, serialised with Create: it creates what is missing, brings
// an older table up to date, widens the recorded range, raises the maximum
// TTL and sets the replication mode, never narrowing or lowering. A lock
// the DDL waits for longer than LockTimeout makes it give up and try again,
// with backoff, until ctx ends: a long transaction on the table delays the
// DDL, never the fleet's renewals behind it.
func (s *Store) ApplyMode(ctx context.Context, maxTTL time.Duration, replication Replication) error {
	ddl, err := Schema{Table: s.cfg.Table, MinNode: s.cfg.MinNode, MaxNode: s.cfg.MaxNode, MaxTTL: maxTTL, Replication: replication}.SQL()
	if err != nil {
		return err
	}
	wait := retry.Backoff{Next: 50 * time.Millisecond, Max: time.Second}
	var waited error // the last attempt that gave up on a lock
	for {
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1::text, true), pg_advisory_xact_lock(hashtext($2::text))`,
				fmt.Sprintf("%dms", LockTimeout.Milliseconds()), "nodeid:"+s.cfg.Table); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, ddl)
			return err
		})
		if err != nil && ctx.Err() != nil && waited != nil {
			err = waited // ctx ended while an attempt waited for the lock again
		}
		if SQLState(err) != pgerrcode.LockNotAvailable {
			break
		}
		waited = err
		if !wait.Wait(ctx) {
			return s.wrapErr("apply the schema", lockErr(err, "table "+s.cfg.Table))
		}
	}
	if err != nil {
		return s.wrapErr("apply the schema", classifyDDL(err))
	}
	s.mode.Store(nil) // the next statement reads the mode the table now records
	s.recorded.Store(nil)
	return s.confirmAlone(ctx)
}

// classifyDDL recognises the DDL's failures to evaluate the functions that
// asynchronous replication needs.
func classifyDDL(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == pgerrcode.InsufficientPrivilege || pe.Code == pgerrcode.ObjectNotInPrerequisiteState || pe.Code == pgerrcode.FeatureNotSupported) &&
		(strings.Contains(pe.Message, "pg_walfile_name") || strings.Contains(pe.Message, "pg_current_wal_lsn") ||
			strings.Contains(pe.Message, "pg_control_system") || strings.Contains(pe.Message, "wal_level") ||
			strings.Contains(pe.Message, "Aurora")) {
		return &WALError{err: err}
	}
	return err
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
// columns, that they are logged (a crash empties an UNLOGGED table), that
// the role has the privileges the lease statements need (SELECT and UPDATE
// on the lease and configuration tables, SELECT, INSERT and UPDATE on the
// history), and that the server allows what the table's replication mode
// needs (CheckReplication). It never creates, alters or repairs anything.
// A missing table, column or privilege, an unlogged table or a refused
// function gives an error for which Fatal is true, naming it.
func (s *Store) CheckSchema(ctx context.Context) error {
	for _, q := range []struct {
		table, columns string
		privileges     []string
	}{
		{s.cfg.Table, "node_id, owner, epoch, acquired_at, expires_at, horizon_ms, claim_generation", []string{"SELECT", "UPDATE"}},
		{s.cfg.HistoryTable(), "node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation",
			[]string{"SELECT", "INSERT", "UPDATE"}},
		{s.cfg.ConfigTable(), "min_node, max_node, max_ttl_ms, raise_ttl_ms, replication, generation, generation_at, fence_ms, moved_fence_ms, creation_pending, server_id, wal_timeline",
			[]string{"SELECT", "UPDATE"}},
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
	if _, err := s.ReadConfig(ctx); err != nil {
		return err
	}
	return s.CheckReplication(ctx)
}
