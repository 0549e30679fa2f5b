package admin

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

// Store calls the SQL functions of one lease table (sql/lease.sql and
// sql/operator.sql) and reads its tables.
type Store struct {
	db  *sql.DB
	cfg Config

	// recorded is the mode the table records, and watched whether its
	// statements watch the server's identity, once read.
	recorded atomic.Pointer[Replication]
	watched  atomic.Pointer[bool]

	claimSQL, renewSQL, releaseSQL, verifySQL, evictSQL, restoredSQL             string
	markSQL, standbysSQL, createdSQL, raisedSQL, pruneSQL                        string
	readConfigSQL, historySQL, whoSQL, listWatchedSQL, listTrustedSQL, serverSQL string
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
	t := cfg.Table
	// Each call starts with a comment naming it, for pg_stat_activity and
	// pg_stat_statements.
	s.claimSQL = "-- nodeid claim\nSELECT status, node_id, epoch, expires_at, after_ms, until_ms, generation, now, replication, table_min_node, table_max_node, " +
		"max_ttl_ms, held, cooling, soonest, soonest_ms, soonest_set_at, quarantined, evicted FROM " + t + "_claim($1, $2, $3, $4, $5, $6)"
	s.renewSQL = "-- nodeid renew\nSELECT status, expires_at, until_ms, now, holder, row_epoch, end_reason FROM " + t + "_renew($1, $2, $3, $4, $5)"
	s.releaseSQL = "-- nodeid release\nSELECT status, until_ms, now, holder, row_epoch, end_reason FROM " + t + "_release($1, $2, $3, $4)"
	s.verifySQL = VerifySQL(cfg)
	s.evictSQL = "-- nodeid evict\nSELECT status, kept_horizon_ms, expires_at, now FROM " + t + "_evict($1, $2, $3)"
	s.restoredSQL = "-- nodeid restored\nSELECT generation, quarantine_until_ms FROM " + t + "_restored($1, $2)"
	s.markSQL = "-- nodeid mark\nSELECT raise_ms, creation_pending, lsn, server, slots FROM " + t + "_mark()"
	s.standbysSQL = "-- nodeid standbys\nSELECT on_server, name, addr, replayed, caught, hidden, fresh, foreign_history FROM " + t + "_standbys($1, $2, $3)"
	s.createdSQL = "-- nodeid confirm creation\nSELECT confirmed, same_server FROM " + t + "_created($1, $2)"
	s.raisedSQL = "-- nodeid confirm raise\nSELECT max_ttl_ms, same_server FROM " + t + "_raised($1, $2, $3)"
	s.pruneSQL = "-- nodeid prune\nSELECT " + t + "_prune($1, $2)"
	for _, r := range []struct {
		dst  *string
		text string
		mode Replication
	}{{&s.readConfigSQL, readConfigText, Sync}, {&s.historySQL, historyText, Sync}, {&s.whoSQL, whoText, Sync},
		{&s.listWatchedSQL, listText, Async}, {&s.listTrustedSQL, listText, Sync}} {
		var err error
		if *r.dst, err = expandRead(r.text, cfg, r.mode); err != nil {
			return nil, err
		}
	}
	s.serverSQL = "-- nodeid server\nSELECT " + t + "_server()"
	return s, nil
}

// serverText is the SQL text of the server's identity as a mark names it on
// a watched table: its system identifier, WAL timeline and start.
const serverText = "{sid}::text || '/' || {tl}::text || '/' || {started}"

// expandRead fills the placeholders of a read's SQL text: {t} the lease
// table, {h} the history table, {c} the configuration table, {tl}, {sid}
// and {started} the server's identity, and the list's tests of a server
// not yet seen ({listChanged}) and of another system than the one
// recorded ({listMoved}), which read the server's identity on a watched
// table (Async) only.
func expandRead(text string, c Config, mode Replication) (string, error) {
	listChanged, listMoved := "false", "false"
	if mode == Async {
		listChanged = "NOT pg_is_in_recovery() AND (c.server_id, c.wal_timeline) IS DISTINCT FROM\n" +
			"            (CASE WHEN NOT pg_is_in_recovery() THEN {sid} END, CASE WHEN NOT pg_is_in_recovery() THEN {tl} END)"
		listMoved = "(c.quarantine_until_ms IS NULL OR c.server_id <> CASE WHEN NOT pg_is_in_recovery() THEN {sid} END)"
	}
	text = strings.NewReplacer("{listChanged}", listChanged, "{listMoved}", listMoved).Replace(text)
	return expand(text, c.Table, "{h}", c.HistoryTable(), "{c}", c.ConfigTable(),
		"{tl}", walTimeline, "{sid}", walServerID, "{started}", serverStarted)
}

// Replication returns the table's replication mode as last read, or ""
// before the first read.
func (s *Store) Replication() Replication {
	if m := s.recorded.Load(); m != nil {
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
	Now          time.Time
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

// EraOrigin is the origin of the eras of epochs, in unix seconds
// (2020-01-01T00:00:00Z): the first claim of a row after its generation
// ended takes an epoch whose high 31 bits count the seconds since then.
const EraOrigin = 1577836800

// ClaimResult is the result of a claim that ran: the claim when OK, else
// the Refusal that says why no node ID was claimable.
type ClaimResult struct {
	Claim
	OK      bool
	Refusal Refusal
}

// Claim claims the lowest claimable node ID of lo to hi for owner, for ttl,
// recording horizonMs as the horizon ({t}_claim). When no node ID can be
// claimed, the result is not OK and its Refusal says why, from the same
// call.
func (s *Store) Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (ClaimResult, error) {
	res, _, _, err := s.claim(ctx, false, owner, ttl, horizonMs, lo, hi, nil)
	return res, err
}

// ClaimFirst claims as Claim does, for a Store that has not read the
// table's configuration. With given, lo to hi is the range to claim from,
// which must be within the table's; without, the table's range, which must
// be within 0 to maxNode, the highest node ID the caller's IDs hold. It is
// not OK, and the caller reads the configuration (ReadConfig,
// CheckReplication) before claiming with Claim, whenever it claimed nothing
// or failed: those say why. The call is sent unprepared (it runs once).
func (s *Store) ClaimFirst(ctx context.Context, lo, hi int64, given bool, maxNode int64, owner string, ttl time.Duration, horizonMs int64) (FirstClaim, error) {
	var rlo, rhi, limit any = lo, hi, nil
	if !given {
		rlo, rhi, limit = nil, nil, maxNode
	}
	res, tlo, thi, err := s.claim(ctx, true, owner, ttl, horizonMs, rlo, rhi, limit)
	if err != nil || !res.OK {
		return FirstClaim{}, err
	}
	return FirstClaim{ClaimResult: res, TableMinNode: tlo, TableMaxNode: thi}, nil
}

// claim calls {t}_claim and reads its row: the claim, or the refusal, and
// the table's range.
func (s *Store) claim(ctx context.Context, once bool, owner string, ttl time.Duration, horizonMs int64, lo, hi, limit any) (ClaimResult, int64, int64, error) {
	var (
		res                                   ClaimResult
		status                                string
		node, epoch, after, until, generation sql.NullInt64
		expires, setAt                        sql.NullTime
		mode                                  sql.NullString
		tlo, thi, maxTTL, held, cooling       sql.NullInt64
		soonest, soonestMs                    sql.NullInt64
		quarantined, evicted                  sql.NullBool
		now                                   time.Time
	)
	err := s.queryRow(ctx, s.claimSQL, once, []any{owner, ttl.Milliseconds(), horizonMs, lo, hi, limit},
		&status, &node, &epoch, &expires, &after, &until, &generation, &now, &mode, &tlo, &thi, &maxTTL,
		&held, &cooling, &soonest, &soonestMs, &setAt, &quarantined, &evicted)
	if err != nil {
		return ClaimResult{}, 0, 0, s.wrapErr("claim", err)
	}
	if mode.Valid {
		m := Replication(mode.String)
		s.recorded.Store(&m)
	}
	if status == "ok" {
		res.OK = true
		res.Claim = Claim{Key: Key{NodeID: node.Int64, Owner: owner, Epoch: epoch.Int64}, Expires: expires.Time, Now: now,
			PrevHorizon: after.Int64, Horizon: until.Int64, Generation: generation.Int64}
		return res, tlo.Int64, thi.Int64, nil
	}
	why := &res.Refusal
	why.Now, why.Held, why.Cooling, why.Soonest, why.Until = now, held.Int64, cooling.Int64, soonest.Int64, soonestMs.Int64
	why.SetAt, why.Quarantined, why.Evicted = setAt.Time, quarantined.Bool, evicted.Bool
	why.MaxTTL, why.Unconfigured = time.Duration(maxTTL.Int64)*time.Millisecond, status == "unconfigured"
	why.RestorePending, why.CreationPending = status == "restore_pending", status == "creation_pending"
	why.TTLAbove = status == "ttl_above_max"
	return res, tlo.Int64, thi.Int64, nil
}

// Renew extends the lease k by ttl from the server's now() and raises its
// horizon to horizonMs ({t}_renew).
func (s *Store) Renew(ctx context.Context, k Key, ttl time.Duration, horizonMs int64) (Outcome, error) {
	var expires sql.NullTime
	o, err := s.outcome(ctx, "renew", s.renewSQL, k, []any{k.NodeID, k.Owner, k.Epoch, ttl.Milliseconds(), horizonMs}, &expires)
	o.Expires = expires.Time
	return o, err
}

// Release frees the lease k, recording exactMs, the latest millisecond
// stamped under it, as its horizon; with NoHorizon the row keeps the one
// it has ({t}_release).
func (s *Store) Release(ctx context.Context, k Key, exactMs int64) (Outcome, error) {
	var arg any
	if exactMs != NoHorizon {
		arg = exactMs
	}
	return s.outcome(ctx, "release", s.releaseSQL, k, []any{k.NodeID, k.Owner, k.Epoch, arg})
}

// outcome calls a renewal or a release of k, whose row is a status, the
// columns of before (the renewal's expiry), the horizon recorded, now(),
// and the row's holder and epoch and the history's end of the claim,
// which say why when it changed nothing.
func (s *Store) outcome(ctx context.Context, op, q string, k Key, args []any, before ...any) (Outcome, error) {
	var (
		o              Outcome
		status         string
		horizon, epoch sql.NullInt64
		holder, reason sql.NullString
	)
	dest := append(append([]any{&status}, before...), &horizon, &o.Now, &holder, &epoch, &reason)
	if err := s.queryRow(ctx, q, false, args, dest...); err != nil {
		return o, s.wrapErr(op, err)
	}
	o.OK, o.Horizon = status == "ok", horizon.Int64
	o.Exists, o.Owner, o.Epoch, o.EndReason = epoch.Valid, holder.String, epoch.Int64, EndReason(reason.String)
	if o.OK {
		o.Owner, o.Epoch = k.Owner, k.Epoch
	}
	return o, nil
}

// FirstClaim is the result of ClaimFirst: when OK, the claim, and the
// table's recorded range.
type FirstClaim struct {
	ClaimResult
	TableMinNode, TableMaxNode int64
}

// NoHorizon is the exact horizon of a release that has none: the row keeps
// the horizon recorded at the last renewal.
const NoHorizon = -1

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
// is held ({t}_evict). It waits at most LockTimeout for the row's lock, and
// fails with SQLSTATE 55P03 if another transaction holds it longer.
func (s *Store) Evict(ctx context.Context, node, epoch int64) (Eviction, error) {
	var (
		e       Eviction
		status  string
		expires sql.NullTime
	)
	if err := s.db.QueryRowContext(ctx, s.evictSQL, node, epoch, LockTimeout.Milliseconds()).Scan(&status, &e.HorizonMs, &expires, &e.Now); err != nil {
		return Eviction{}, s.wrapErr("evict", lockErr(err, "the lease row of node ID "+fmt.Sprint(node)))
	}
	e.OK, e.Expires = status == "ok", expires.Time
	return e, nil
}

// Restored declares a restore ({t}_restored): maxTTL is the longest lease
// any holder of the old history may hold, which a copy of the table cannot
// know. It returns the new generation and when the quarantine of every
// node ID ends, by the database's clock.
func (s *Store) Restored(ctx context.Context, maxTTL time.Duration) (generation int64, until time.Time, err error) {
	var untilMs int64
	if err := s.db.QueryRowContext(ctx, s.restoredSQL, maxTTL.Milliseconds(), LockTimeout.Milliseconds()).Scan(&generation, &untilMs); err != nil {
		return 0, time.Time{}, s.wrapErr("restore", lockErr(err, "the configuration row of "+s.cfg.ConfigTable()))
	}
	return generation, time.UnixMilli(untilMs), nil
}

// ConfirmRaise makes the table's pending raise of its maximum TTL the
// maximum, up to m.Raise: the pending raise that PendingRaise read before
// every standby was seen to replay its position ({t}_raised). It reports
// the maximum, and whether it raised it; a raise above m.Raise stays
// pending. On another server than the one m was read on (a failover, a
// move, a restart since) it changes nothing and returns ErrServerChanged.
func (s *Store) ConfirmRaise(ctx context.Context, m RaiseMark) (maxTTL time.Duration, raised bool, err error) {
	var (
		ms   sql.NullInt64
		same bool
	)
	err = s.db.QueryRowContext(ctx, s.raisedSQL, m.Raise.Milliseconds(), m.Server, LockTimeout.Milliseconds()).Scan(&ms, &same)
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

// mark reads the pending raise and creation with a mark ({t}_mark), and
// moves the mark's position a byte past the one read: no replication slot
// has reached that byte when the mark is read, so only its standby's
// replies can move a slot there.
func (s *Store) mark(ctx context.Context, what string) (raise time.Duration, creating bool, m Mark, err error) {
	var (
		lsn, slots string
		ms         int64
	)
	if err := s.db.QueryRowContext(ctx, s.markSQL).Scan(&ms, &creating, &lsn, &m.Server, &slots); err != nil {
		return 0, false, Mark{}, s.wrapErr(what, err)
	}
	if m.LSN, err = pastLSN(lsn); err != nil {
		return 0, false, Mark{}, s.wrapErr(what, err)
	}
	if slots != "" {
		m.Slots = strings.Split(slots, ",")
	}
	return time.Duration(ms) * time.Millisecond, creating, m, nil
}

// PendingRaise returns the table's pending raise of its maximum TTL (0 when
// none), the WAL position to wait for and the server it was read on:
// ConfirmRaise confirms that raise, not one made after this read, and only
// on that server.
func (s *Store) PendingRaise(ctx context.Context) (RaiseMark, error) {
	raise, _, m, err := s.mark(ctx, "read the pending raise")
	return RaiseMark{Raise: raise, Mark: m}, err
}

// PendingCreation reads whether the table's creation is pending, with the
// WAL position to wait for and the server it was read on.
func (s *Store) PendingCreation(ctx context.Context) (CreationMark, error) {
	_, creating, m, err := s.mark(ctx, "read the pending creation")
	return CreationMark{Pending: creating, Mark: m}, err
}

// markSlots lists the physical replication slots, each as its name, a
// colon and the process that holds it ("" when none does).
const markSlots = `(SELECT COALESCE(string_agg(slot_name::text || ':' || COALESCE(active_pid::text, ''), ','), '')
    FROM pg_replication_slots WHERE slot_type = 'physical')`

// Standbys returns the server's standbys (see Standby), each with whether
// it has m.LSN; only the slots of m.Slots count, as m saw them
// ({t}_standbys). A zero m stands for the server's WAL position now and its
// slots now, which Standbys returns. When m names a server (m.Server) and
// the standbys were read on another (a failover since m was read, or a
// pooler that sends reads to a standby), it returns an error that matches
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
	rows, err := s.db.QueryContext(ctx, s.standbysSQL, m.LSN, strings.Join(m.Slots, ","), m.Server)
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

// ConfirmCreation ends the table's pending creation, once every standby
// has replayed m.LSN, on the server m was read on ({t}_created); on another
// it changes nothing and returns ErrServerChanged. It reports whether it
// confirmed the creation (false when it was not pending).
func (s *Store) ConfirmCreation(ctx context.Context, m CreationMark) (bool, error) {
	var confirmed, same bool
	err := s.db.QueryRowContext(ctx, s.createdSQL, m.Server, LockTimeout.Milliseconds()).Scan(&confirmed, &same)
	switch {
	case err != nil:
		return false, s.wrapErr("confirm the creation", lockErr(err, "the configuration row of "+s.cfg.ConfigTable()))
	case !same:
		return false, ErrServerChanged
	}
	return confirmed, nil
}

// CreationMark is a pending creation as PendingCreation read it.
type CreationMark struct {
	Pending bool // the creation was pending then
	Mark
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

// readConfigText reads moved_quarantine_until_ms too, which nothing but
// the statements needs, so that a table without it is an earlier version's.
const readConfigText = `SELECT min_node, max_node, max_ttl_ms, COALESCE(raise_ttl_ms, 0), replication, generation, generation_at,
    quarantine_until_ms, COALESCE(server_id, 0), COALESCE(wal_timeline, 0), moved_quarantine_until_ms IS NULL, COALESCE(creation_pending, false),
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
		c               TableConfig
		ms, raiseMs     int64
		quarantineUntil sql.NullInt64
		mode            string
	)
	err := s.db.QueryRowContext(ctx, s.readConfigSQL).Scan(&c.MinNode, &c.MaxNode, &ms, &raiseMs, &mode, &c.Generation,
		&c.GenerationAt, &quarantineUntil, &c.ServerID, &c.Timeline, new(bool), &c.CreationPending, &c.Unlogged)
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
	c.RestorePending = !quarantineUntil.Valid
	if quarantineUntil.Valid {
		c.QuarantineUntil = time.UnixMilli(quarantineUntil.Int64)
	}
	c.Replication = Replication(mode)
	c.Watched = c.Replication == Async || c.ServerID != 0
	s.recorded.Store(&c.Replication)
	s.watched.Store(&c.Watched)
	return c, nil
}

// isWatched reports whether the table's functions watch the server's
// identity (TableConfig.Watched), reading the configuration if the Store
// has not yet.
func (s *Store) isWatched(ctx context.Context) (bool, error) {
	if w := s.watched.Load(); w != nil {
		return *w, nil
	}
	c, err := s.ReadConfig(ctx)
	return c.Watched, err
}

// CheckReplication checks that the server allows what the table's
// replication mode needs: on a watched table, the functions that tell the
// server's identity and timeline, called as the table's functions call
// them (by {t}_server, as their owner). A server that refuses them gives a
// Fatal error naming the functions and the mode; a standby (recovery in
// progress) gives a retryable one. On a trusted table nothing is needed.
func (s *Store) CheckReplication(ctx context.Context) error {
	watched, err := s.isWatched(ctx)
	if err != nil || !watched {
		return err
	}
	var server string
	err = s.db.QueryRowContext(ctx, s.serverSQL).Scan(&server)
	var pe *pgconn.PgError
	switch {
	case err == nil || Retryable(err) || SQLState(err) == "":
		// A standby's "recovery is in progress" is retryable: a failover's
		// new primary answers soon.
		return s.wrapErr("check the server", err)
	case errors.As(err, &pe) && (pe.Code == pgerrcode.UndefinedFunction || pe.Code == pgerrcode.InsufficientPrivilege) &&
		strings.Contains(pe.Message, "_server"):
		return s.wrapErr("check the server", err) // the table's own function: missing, or not granted
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
// lease table is missing (and the table's functions when only they are:
// a table of the version before them, whose quarantine's columns it
// renames), recording the Store's range and maxTTL (and asynchronous
// replication), fills the range and analyses the table. It
// reports whether it created them. Many processes may call it at once: a
// transaction-scoped advisory lock serialises them, and only the first
// creates.
func (s *Store) Create(ctx context.Context, maxTTL time.Duration) (bool, error) {
	if exists, err := s.exists(ctx, s.cfg.Table); err != nil {
		return false, s.wrapErr("look up", err)
	} else if exists {
		return false, s.makeFunctions(ctx)
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

// renameQuarantineSQL gives the configuration's quarantine columns of the
// version before the functions (fence_ms, moved_fence_ms) the names the
// functions read, keeping their values, as the DDL's upgrade does. A table
// without a configuration (an older version's) is left as it is, for
// ReadConfig to report.
const renameQuarantineSQL = `DO $nodeid$
BEGIN
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass('{c}') AND attname = 'fence_ms' AND NOT attisdropped) THEN
        ALTER TABLE {c} RENAME COLUMN fence_ms TO quarantine_until_ms;
    END IF;
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass('{c}') AND attname = 'moved_fence_ms' AND NOT attisdropped) THEN
        ALTER TABLE {c} RENAME COLUMN moved_fence_ms TO moved_quarantine_until_ms;
    END IF;
END
$nodeid$`

// makeFunctions makes the table's functions if the claim's is missing (a
// table of the version before them), as its DDL would, and renames the
// quarantine's columns the functions read; it changes nothing else: the
// tables' rows and their configuration's values stay as they are. Many
// processes may call it at once: Create's advisory lock serialises them.
func (s *Store) makeFunctions(ctx context.Context) error {
	var missing bool
	if err := s.db.QueryRowContext(ctx, `SELECT to_regprocedure($1) IS NULL`, s.cfg.Table+clientFunctions[0]).Scan(&missing); err != nil || !missing {
		return s.wrapErr("look up", err)
	}
	fns, err := FunctionsSQL(s.cfg.Table)
	if err != nil {
		return err
	}
	rename, err := expand(renameQuarantineSQL, s.cfg.Table, "{c}", s.cfg.ConfigTable())
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, "nodeid:"+s.cfg.Table); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT to_regprocedure($1) IS NULL`, s.cfg.Table+clientFunctions[0]).Scan(&missing); err != nil || !missing {
			return err
		}
		// The renaming waits for the claims on the configuration, no longer.
		if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1::text, true)`, fmt.Sprintf("%dms", LockTimeout.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, rename); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fns)
		return err
	})
	if SQLState(err) == pgerrcode.InsufficientPrivilege {
		err = fmt.Errorf("the functions of table %s are missing (it was made by an earlier version of nodeid), and this role may not make them: run nodeid init as the table's owner: %w", s.cfg.Table, err)
	}
	return s.wrapErr("create", lockErr(err, "the configuration table "+s.cfg.ConfigTable()))
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
	wait := Backoff{Next: 50 * time.Millisecond, Max: time.Second}
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
	s.recorded.Store(nil) // the next read learns the mode the table now records
	s.watched.Store(nil)
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
// the table's client functions exist (a table of an earlier version lacks
// them), that the role may read the tables and run those functions (what
// GrantSQL grants), and that the server allows what the table's
// replication mode needs (CheckReplication). It never creates, alters or
// repairs anything. A missing table, column, function or privilege, an
// unlogged table or a refused function gives an error for which Fatal is
// true, naming it.
func (s *Store) CheckSchema(ctx context.Context) error {
	for _, q := range []struct{ table, columns string }{
		{s.cfg.Table, "node_id, owner, epoch, acquired_at, expires_at, horizon_ms, claim_generation"},
		{s.cfg.HistoryTable(), "node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation"},
		{s.cfg.ConfigTable(), "min_node, max_node, max_ttl_ms, raise_ttl_ms, replication, generation, generation_at, quarantine_until_ms, moved_quarantine_until_ms, creation_pending, server_id, wal_timeline"},
	} {
		exists, err := s.exists(ctx, q.table)
		if err == nil && !exists {
			err = &missingError{table: q.table}
		}
		if err != nil {
			return s.wrapErr("check schema", err)
		}
		var ok bool
		if err := s.db.QueryRowContext(ctx, `SELECT has_table_privilege($1::text, 'SELECT')`, q.table).Scan(&ok); err != nil {
			return s.wrapErr("check schema", err)
		}
		if !ok {
			return s.wrapErr("check schema", &privilegeError{kind: "table", table: q.table, privilege: "SELECT"})
		}
		rows, err := s.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s LIMIT 0", q.columns, q.table))
		if err != nil {
			return s.wrapErr("check schema", err)
		}
		rows.Close()
	}
	for _, f := range clientFunctions {
		fn := s.cfg.Table + f
		var exists, ok sql.NullBool
		err := s.db.QueryRowContext(ctx, `SELECT to_regprocedure($1) IS NOT NULL,
			CASE WHEN to_regprocedure($1) IS NOT NULL THEN has_function_privilege(to_regprocedure($1), 'EXECUTE') END`, fn).Scan(&exists, &ok)
		switch {
		case err != nil:
			return s.wrapErr("check schema", err)
		case !exists.Bool:
			return s.wrapErr("check schema", fmt.Errorf("%w: function %s is missing (the table was made by an earlier version of nodeid): bring it up to date with nodeid init, or the DDL of postgres.Schema.SQL applied by its owner",
				ErrUnconfigured, fn))
		case !ok.Bool:
			name, _, _ := strings.Cut(fn, "(")
			return s.wrapErr("check schema", &privilegeError{kind: "function", table: name + "()", privilege: "EXECUTE"})
		}
	}
	if _, err := s.ReadConfig(ctx); err != nil {
		return err
	}
	return s.CheckReplication(ctx)
}

// Statements is what a nodeid.Registry runs on its table: *Store implements
// it, and so does package nodeidtest's table in memory (nodeid.NewOn).
type Statements interface {
	Create(ctx context.Context, maxTTL time.Duration) (bool, error)
	ReadConfig(ctx context.Context) (TableConfig, error)
	CheckSchema(ctx context.Context) error
	Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (ClaimResult, error)
	Renew(ctx context.Context, k Key, ttl time.Duration, horizonMs int64) (Outcome, error)
	CheckReplication(ctx context.Context) error
	Release(ctx context.Context, k Key, exactMs int64) (Outcome, error)
}

var _ Statements = (*Store)(nil)
