package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/internal/wal"
)

// The lease table holds one row per node ID, created once and never deleted:
// deleting a row would reset its epoch and break fencing.
//
//   - expires_at is '-infinity' for a node ID that is free (never claimed or
//     released); a past time for a lease that lapsed; a future time for a
//     held lease, or for one an operator evicted (owner ”). A row is
//     claimable when expires_at < now() and its horizon has passed.
//   - horizon_ms (unix milliseconds) is the latest millisecond the current or
//     last holder may have stamped: the next holder stamps only after it.
//   - claim_generation is the table's generation at the row's last claim:
//     a row last claimed in an earlier generation may hide a claim that a
//     failover or a restore lost. Only a claim changes it.
//
// Two partial indexes keep the claim's cost flat however many node IDs are
// held: one orders the free rows by node ID, the other finds lapsed leases
// by expiry.
//
// The configuration table holds one row: what every registry on the table
// must agree on (the node range, the longest TTL any lease may take, how
// the database replicates), and the table's generation, with when it began
// and when its quarantine ends (fence_ms). The generation goes up whenever
// the server that a lease statement runs on is not the one recorded
// (asynchronous replication only): another WAL timeline of the same system
// (a promotion, a point-in-time recovery) quarantines the rows of earlier
// generations for the maximum TTL, or a pending raise of it, and a tenth;
// another system identifier (a dump restored elsewhere, an upgrade, a move)
// leaves fence_ms unset, and no node ID is handed out, until the operator
// declares the restore and the longest TTL the old history may hold
// ("nodeid init --restored --max-ttl"). The declaration starts a generation
// too. A raise of the maximum TTL on an asynchronous table is pending
// (raise_ttl_ms) until confirmed, once every standby has it.
//
// The statements are idempotent and take strong locks only where something
// changes: a table of an earlier version is brought up to date (its rows
// keep their epochs and horizons, and those last written before its last
// recorded failover stay quarantined), and columns that earlier versions
// used are renamed, so that their statements fail instead of running on
// rules they do not know. The history's generation has no default, so that
// a claim of a version that does not record it fails too. Every write is
// durable when the transaction commits (synchronous_commit on), and no
// statement waits more than lock_timeout for a lock, so that the DDL never
// queues the fleet's renewals behind a long transaction on the table.
const schemaTemplate = `SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', '{lockms}ms', true);
CREATE TABLE IF NOT EXISTS {t} (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0,
    claim_generation bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS {h} (
    node_id     integer     NOT NULL,
    epoch       bigint      NOT NULL,
    owner       text        NOT NULL,
    acquired_at timestamptz NOT NULL,
    from_ms     bigint      NOT NULL,
    ended_at    timestamptz,
    end_reason  text        CHECK (end_reason IN ('released', 'expired', 'evicted')),
    horizon_ms  bigint,
    generation  bigint      NOT NULL,
    PRIMARY KEY (node_id, epoch)
);
CREATE TABLE IF NOT EXISTS {c} (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    min_node      integer     NOT NULL CHECK (min_node >= 0),
    max_node      integer     NOT NULL CHECK (max_node >= min_node),
    max_ttl_ms    bigint      NOT NULL CHECK (max_ttl_ms > 0),
    raise_ttl_ms  bigint      CHECK (raise_ttl_ms > 0),
    replication   text        NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
    generation    bigint      NOT NULL DEFAULT 1 CHECK (generation > 0),
    generation_at timestamptz NOT NULL DEFAULT now(),
    fence_ms      bigint,
    server_id     bigint,
    wal_timeline  bigint
);
DO $nodeid$
DECLARE
    want  text := {want};
    cur   text;
    eff   text;
    sid   bigint;
    tli   bigint;
    pair  constant text := 'SELECT ' || $q${serverid}, {tl}$q$;
BEGIN
    -- Earlier versions: a lease table whose renewals and releases recorded
    -- the generation in the row (generation), one with WAL timelines where
    -- generations are now (timeline), or one without either. Renaming the
    -- column makes those versions' statements fail on the table.
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attname = 'claim_generation' AND NOT attisdropped) THEN
        IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attname = 'generation' AND NOT attisdropped) THEN
            ALTER TABLE {t} RENAME COLUMN generation TO claim_generation;
        ELSIF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
            ALTER TABLE {t} RENAME COLUMN timeline TO claim_generation;
        ELSE
            ALTER TABLE {t} ADD COLUMN claim_generation bigint NOT NULL DEFAULT 0;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{h}'::regclass AND attname = 'generation' AND NOT attisdropped) THEN
        IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{h}'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
            ALTER TABLE {h} RENAME COLUMN timeline TO generation;
            ALTER TABLE {h} ALTER COLUMN generation DROP DEFAULT;
        ELSE
            ALTER TABLE {h} ADD COLUMN generation bigint NOT NULL DEFAULT 0;
            ALTER TABLE {h} ALTER COLUMN generation DROP DEFAULT;
        END IF;
    END IF;
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
        -- The configuration of the version that recorded WAL timelines:
        -- rows of its recorded timeline are of generation 2, earlier ones
        -- of generation 1, which stays quarantined as it was.
        ALTER TABLE {c} RENAME COLUMN timeline TO wal_timeline;
        ALTER TABLE {c} RENAME COLUMN timeline_seen_at TO generation_at;
        ALTER TABLE {c} ALTER COLUMN wal_timeline DROP NOT NULL,
            ADD COLUMN replication text NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
            ADD COLUMN generation bigint NOT NULL DEFAULT 2 CHECK (generation > 0),
            ADD COLUMN server_id bigint;
        UPDATE {t} SET claim_generation = CASE WHEN {t}.claim_generation >= c.wal_timeline THEN 2 ELSE 1 END FROM {c} AS c;
        UPDATE {h} SET generation = CASE WHEN {h}.generation >= c.wal_timeline THEN 2 ELSE 1 END FROM {c} AS c;
        IF want IS DISTINCT FROM 'sync' THEN
            -- That version did not record the server's identity: the server
            -- that is on the recorded timeline is taken to be the one.
            EXECUTE pair INTO sid, tli;
            UPDATE {c} SET server_id = sid WHERE wal_timeline = tli;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'fence_ms' AND NOT attisdropped) THEN
        -- The versions that computed the quarantine from the maximum TTL
        -- when a statement ran: it is recorded when the generation begins.
        ALTER TABLE {c} ADD COLUMN fence_ms bigint, ADD COLUMN raise_ttl_ms bigint CHECK (raise_ttl_ms > 0);
        UPDATE {c} SET fence_ms = (extract(epoch FROM generation_at) * 1000)::bigint + max_ttl_ms * 11 / 10;
    END IF;
    IF to_regclass('{ix}_free_idx') IS NULL THEN
        CREATE INDEX {b}_free_idx ON {t} (node_id) WHERE expires_at = '-infinity';
    END IF;
    IF to_regclass('{ix}_lapse_idx') IS NULL THEN
        CREATE INDEX {b}_lapse_idx ON {t} (expires_at) WHERE expires_at > '-infinity';
    END IF;
    IF to_regclass('{ix}_history_ended_idx') IS NULL THEN
        CREATE INDEX {b}_history_ended_idx ON {h} (ended_at);
    END IF;

    SELECT replication INTO cur FROM {c} FOR UPDATE;
    IF NOT FOUND THEN
        want := COALESCE(want, 'async');
        IF want = 'async' THEN
            EXECUTE pair INTO sid, tli;
        END IF;
        INSERT INTO {c} (min_node, max_node, max_ttl_ms, replication, generation, generation_at, fence_ms, server_id, wal_timeline)
        VALUES ({lo}, {hi}, {ttl}, want, 1, now(), (extract(epoch FROM now()) * 1000)::bigint, sid, tli);
    ELSE
        eff := COALESCE(want, cur);
        IF want = 'async' AND cur = 'sync' THEN
            -- From now on a change of server or timeline is a failover that
            -- may have lost commits: the server of now is the one.
            EXECUTE pair INTO sid, tli;
            UPDATE {c} SET server_id = sid, wal_timeline = tli;
        END IF;
        -- A raise of the maximum TTL is pending on an asynchronous table
        -- (raise_ttl_ms: quarantines count with it, leases may not use it)
        -- until every standby has it; on a synchronous one it is at once.
        UPDATE {c} SET min_node = LEAST(min_node, {lo}), max_node = GREATEST(max_node, {hi}),
            max_ttl_ms = CASE WHEN eff = 'sync' THEN GREATEST(max_ttl_ms, {ttl}, COALESCE(raise_ttl_ms, 0)) ELSE max_ttl_ms END,
            raise_ttl_ms = CASE WHEN eff = 'sync' THEN NULL
                WHEN {ttl} > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0)) THEN {ttl} ELSE raise_ttl_ms END,
            replication = eff
        WHERE min_node > {lo} OR max_node < {hi} OR {ttl} > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0))
            OR replication <> eff OR (eff = 'sync' AND raise_ttl_ms IS NOT NULL);
    END IF;
END
$nodeid$;
INSERT INTO {t} (node_id, claim_generation)
SELECT g, c.generation FROM {c} AS c, generate_series(c.min_node, c.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
UPDATE {t} SET claim_generation = c.generation FROM {c} AS c WHERE {t}.claim_generation = 0;
UPDATE {h} SET generation = c.generation FROM {c} AS c WHERE {h}.generation = 0;
ANALYZE {t}, {c};`

// Option configures SchemaSQL. Every option is validated: SchemaSQL returns
// an error naming the first bad value.
type Option func(*schema) error

type schema struct {
	table       string
	lo, hi      int64
	maxTTL      time.Duration
	replication string // "async", "sync", or "" to keep the table's
}

// WithTable sets the lease table (see ValidateTable). Default DefaultTable.
func WithTable(name string) Option {
	return func(s *schema) error {
		if err := ValidateTable(name); err != nil {
			return err
		}
		s.table = name
		return nil
	}
}

// WithNodeRange sets the node range, lo to hi inclusive (see
// ValidateRange). On an existing table the recorded range is widened to
// include it, never narrowed. Default DefaultMinNode to DefaultMaxNode.
func WithNodeRange(lo, hi int64) Option {
	return func(s *schema) error {
		if err := ValidateRange(lo, hi); err != nil {
			return err
		}
		s.lo, s.hi = lo, hi
		return nil
	}
}

// WithMaxTTL sets the longest TTL a lease of the table may take, MinTTL to
// MaxTTL. Registries with a longer TTL are refused. On a table that records
// asynchronous replication, node IDs last claimed before a failover stay
// unclaimable for this long plus a tenth after it, so keep it close to the
// TTL the fleet uses. On an existing table the recorded maximum is raised
// to it, never lowered. With asynchronous replication the raise is pending
// until confirmed ("nodeid init --max-ttl" waits until every standby has
// replayed it, then confirms it): quarantines count with it at once, leases
// may use it once it is confirmed, so that a failover to a standby that
// lacks it cannot quarantine for the old maximum only. Default
// DefaultMaxTTL.
func WithMaxTTL(d time.Duration) Option {
	return func(s *schema) error {
		if d < MinTTL || d > MaxTTL {
			return fmt.Errorf("maximum TTL %s is outside %s to %s", d, MinTTL, MaxTTL)
		}
		s.maxTTL = d
		return nil
	}
}

// WithReplication records how the table's database replicates: "async" or
// "sync". Default: the table's recorded mode, "async" for a new table.
//
// "async": a failover may lose the latest commits (PostgreSQL's streaming
// replication by default, Patroni without synchronous_mode_strict). Every
// lease statement reads the server's system identifier and WAL timeline
// (pg_control_system, pg_current_wal_lsn, pg_walfile_name, which the role
// must be allowed to execute), and after any change of either (a promotion,
// a move, an upgrade) every node ID last written before it stays
// unclaimable for the maximum TTL and a tenth.
//
// "sync": the database never loses an acknowledged commit in a failover
// (Patroni synchronous_mode_strict, CloudNativePG with required synchronous
// replicas, or storage that is shared or synchronously replicated, as in
// Aurora, RDS Multi-AZ or Cloud SQL HA): no quarantine after a failover,
// and no WAL function is used. A restore or a move that may have lost
// commits then needs the operator's word (a restored table: see the
// documentation on backup and restore).
//
// On an existing table the mode changes to the one given: registries use
// the new mode from their next claim on.
func WithReplication(mode string) Option {
	return func(s *schema) error {
		if mode != "async" && mode != "sync" {
			return fmt.Errorf("replication %q: it must be \"async\" (a failover may lose commits) or \"sync\" (it never does)", mode)
		}
		s.replication = mode
		return nil
	}
}

// SchemaSQL returns the DDL that creates the lease, history and
// configuration tables, records the configuration and pre-fills the node
// range, for a migration tool. It is idempotent: applied again, it changes
// no claim and no horizon, and takes no lock that would block the fleet's
// statements unless it has something to change; with a wider range or a
// longer maximum TTL it widens the recorded range (adding its rows) or
// raises the maximum. It also brings a table made by an earlier version of
// nodeid up to date, after which that version's statements fail on the
// table (deploy the new version with it). It uses the registry's defaults
// (table snowflake_nodes, node IDs 0-1023, a maximum TTL of one minute,
// asynchronous replication for a new table) and validates every option; it
// never emits SQL for a name it could not validate. Its writes are durable
// whatever synchronous_commit the server sets, and it waits at most a
// second for any lock. Apply it as the table's owner, on the primary, in
// one transaction.
func SchemaSQL(opts ...Option) (string, error) {
	s := schema{table: DefaultTable, lo: DefaultMinNode, hi: DefaultMaxNode, maxTTL: DefaultMaxTTL}
	for i, o := range opts {
		if o == nil {
			return "", fmt.Errorf("postgres: SchemaSQL: option %d is nil", i)
		}
		if err := o(&s); err != nil {
			return "", fmt.Errorf("postgres: SchemaSQL: %w", err)
		}
	}
	return s.expand(schemaTemplate) + "\n", nil
}

// schemaLockTimeout bounds every lock wait of the DDL.
const schemaLockTimeout = time.Second

// expand substitutes the validated names and values into a template: {t}
// the lease table, {h} the history table, {c} the configuration table, {b}
// the bare table name (for index names) and {ix} the same in the table's
// schema, {lo} and {hi} the node range, {ttl} the maximum TTL in
// milliseconds, {want} the replication asked for (a literal, or NULL),
// {lockms} the lock timeout, and {serverid} and {tl} the expressions of the
// server's identity.
func (s schema) expand(tmpl string) string {
	bare, ix := s.table, s.table
	if _, t, ok := strings.Cut(s.table, "."); ok {
		bare = t
	}
	want := "NULL"
	if s.replication != "" {
		want = "'" + s.replication + "'"
	}
	return strings.NewReplacer("{t}", s.table, "{h}", HistoryTable(s.table), "{c}", ConfigTable(s.table), "{b}", bare,
		"{ix}", ix, "{lo}", fmt.Sprint(s.lo), "{hi}", fmt.Sprint(s.hi), "{ttl}", fmt.Sprint(s.maxTTL.Milliseconds()),
		"{want}", want, "{lockms}", fmt.Sprint(schemaLockTimeout.Milliseconds()),
		"{serverid}", wal.ServerID, "{tl}", wal.Timeline).Replace(tmpl)
}
