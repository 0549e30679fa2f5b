-- The DDL of the lease table, its history and its configuration: nodeid
-- init, postgres.Schema.SQL and WithCreateTable run it (admin.Schema.SQL),
-- followed by the functions (lease.sql, operator.sql, install.sql). Its
-- placeholders are filled by admin's one expander, which fails on any it
-- does not know: {t} the lease table, {h} the history table, {c} the
-- configuration table, {b} the bare table name (for index names) and {ix}
-- the same in the table's schema, {lo} and {hi} the node range, {ttl} the
-- maximum TTL in milliseconds, {want} the replication asked for (a literal,
-- or NULL), {lockms} the lock timeout, {serverid} and {tl} the expressions
-- of the server's identity, {quarantine} the length of a quarantine in
-- milliseconds (the longest TTL the table allows, or a pending raise of it,
-- and a tenth).
--
-- The lease table holds one row per node ID, created once and never deleted:
-- deleting a row would reset its epoch and break fencing.
--
--   - expires_at is '-infinity' for a node ID that is free (never claimed or
--     released); a past time for a lease that lapsed; a future time for a
--     held lease, or for one an operator evicted (owner ''). A row is
--     claimable when expires_at < now() and its horizon has passed.
--   - horizon_ms (unix milliseconds) is the latest millisecond the current or
--     last holder may have stamped: the next holder stamps only after it.
--   - claim_generation is the table's generation at the row's last claim:
--     a row last claimed in an earlier generation may hide a claim that a
--     failover or a restore lost. Only a claim changes it.
--
-- Two partial indexes keep the claim's cost flat however many node IDs are
-- held: one orders the free rows by node ID, the other finds lapsed leases
-- by expiry.
--
-- The configuration table holds one row: what every registry on the table
-- must agree on (the node range, the longest TTL any lease may take, how
-- the database replicates), and the table's generation, with when it began
-- and when its quarantine ends (quarantine_until_ms). The generation goes
-- up whenever the server that a claim (or this DDL) runs on is not the one
-- recorded (asynchronous replication only): another WAL timeline of the
-- same system (a promotion, a point-in-time recovery) quarantines the rows
-- of earlier generations for the maximum TTL, or a pending raise of it,
-- and a tenth; another system identifier (a dump restored elsewhere, an
-- upgrade, a move) leaves quarantine_until_ms unset, and no node ID is
-- handed out, until the operator declares the restore and the longest TTL
-- the old history may hold ("nodeid init --restored --max-ttl"); the
-- quarantine that was running is kept in moved_quarantine_until_ms until
-- then, and the declaration's ends no sooner.
-- The declaration starts a generation too. A raise of the maximum TTL on
-- an asynchronous table is pending (raise_ttl_ms) until confirmed, once
-- every standby has it; so is the creation of an asynchronous table
-- (creation_pending), and no node ID is handed out until then: a server
-- without standbys or slots once it has committed confirms it at once
-- (Store.Create, Store.Apply, SettleCreation).
--
-- The statements are idempotent and take strong locks only where something
-- changes: a table of an earlier version is brought up to date (its rows
-- keep their epochs and horizons, and those last written before its last
-- recorded failover stay quarantined), and columns that earlier versions
-- used are renamed, so that their statements fail instead of running on
-- rules they do not know; an unused column makes their DDL fail too, so
-- that it cannot add those columns back. The history's generation has no
-- default, so that a claim of a version that does not record it fails too.
-- Every write is durable when the transaction commits (synchronous_commit
-- on), and no statement waits more than lock_timeout for a lock, so that
-- the DDL never queues the fleet's renewals behind a long transaction on
-- the table.
SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', '{lockms}ms', true);
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
    quarantine_until_ms bigint,
    moved_quarantine_until_ms bigint,
    creation_pending boolean CHECK (creation_pending),
    server_id     bigint,
    wal_timeline  bigint
);
DO $nodeid$
DECLARE
    want  text := {want};
    cur   text;
    eff   text;
    trust boolean;
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
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'timeline_seen_at' AND NOT attisdropped) THEN
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
    -- A column no statement uses, which shuts out the DDL of every earlier
    -- version with generations: each renames a configuration's "timeline"
    -- to wal_timeline, which exists, and fails as a whole. Run again after
    -- this one (an old process that applies its DDL at start, an old nodeid
    -- init), it would otherwise add back the columns whose renaming makes
    -- its statements fail, and raise the maximum TTL at once on an
    -- asynchronous table. (The DDL of the versions before generations runs,
    -- and their statements still fail: they compare this boolean with a
    -- number, or insert history rows without their generation.)
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
        ALTER TABLE {c} ADD COLUMN timeline boolean CHECK (timeline IS NULL);
        COMMENT ON COLUMN {c}.timeline IS 'unused: makes the DDL of nodeid versions earlier than this table fail on it';
    END IF;
    -- The versions that called the end of the quarantine fence_ms: the
    -- columns are renamed, their values kept. Those versions' claims read
    -- them and fail on the table from then on; their renewals and releases
    -- do not, and go on. Their DDL, run again after this one, fails as a
    -- whole: it would add fence_ms back with raise_ttl_ms, which exists.
    -- (Store.Create renames them too, when it makes the functions alone.)
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'fence_ms' AND NOT attisdropped) THEN
        ALTER TABLE {c} RENAME COLUMN fence_ms TO quarantine_until_ms;
    END IF;
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'moved_fence_ms' AND NOT attisdropped) THEN
        ALTER TABLE {c} RENAME COLUMN moved_fence_ms TO moved_quarantine_until_ms;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'quarantine_until_ms' AND NOT attisdropped) THEN
        -- The versions that computed the quarantine from the maximum TTL
        -- when a statement ran: it is recorded when the generation begins.
        ALTER TABLE {c} ADD COLUMN quarantine_until_ms bigint, ADD COLUMN raise_ttl_ms bigint CHECK (raise_ttl_ms > 0);
        UPDATE {c} SET quarantine_until_ms = (extract(epoch FROM generation_at) * 1000)::bigint + max_ttl_ms * 11 / 10;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'moved_quarantine_until_ms' AND NOT attisdropped) THEN
        -- The versions that forgot, at a move, the quarantine running.
        ALTER TABLE {c} ADD COLUMN moved_quarantine_until_ms bigint;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{c}'::regclass AND attname = 'creation_pending' AND NOT attisdropped) THEN
        -- The versions whose tables were usable as soon as created.
        ALTER TABLE {c} ADD COLUMN creation_pending boolean CHECK (creation_pending);
    END IF;
    -- The free rows in node ID order, by an expression no other index
    -- orders (node_id + 0), so that the planner reads the lowest free row
    -- from it whatever its statistics say: an index on node_id itself
    -- costs the same as the primary key when the statistics say every row
    -- is free, and the primary key then walks every held row. Earlier
    -- versions' index on node_id goes.
    IF to_regclass('{ix}_free_key_idx') IS NULL THEN
        CREATE INDEX {b}_free_key_idx ON {t} ((node_id + 0)) WHERE expires_at = '-infinity';
    END IF;
    IF to_regclass('{ix}_free_idx') IS NOT NULL THEN
        DROP INDEX {ix}_free_idx;
    END IF;
    IF to_regclass('{ix}_lapse_idx') IS NULL THEN
        CREATE INDEX {b}_lapse_idx ON {t} (expires_at) WHERE expires_at > '-infinity';
    END IF;
    -- Earlier versions indexed the history's ended_at, which let the
    -- planner end a claim by scanning it: the claims now reach the history
    -- only through its primary key.
    IF to_regclass('{ix}_history_ended_idx') IS NOT NULL THEN
        DROP INDEX {ix}_history_ended_idx;
    END IF;

    SELECT replication INTO cur FROM {c} FOR UPDATE;
    IF NOT FOUND THEN
        want := COALESCE(want, 'async');
        IF want = 'async' THEN
            EXECUTE pair INTO sid, tli;
        ELSE
            -- A table that records sync watches its server too, wherever
            -- the server tells its identity: a synchronous standby may
            -- still lack an acknowledged commit (a cancelled wait for it).
            -- Only a server that refuses the functions is trusted.
            BEGIN
                EXECUTE pair INTO sid, tli;
            EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_function THEN
                sid := NULL;
                tli := NULL;
            END;
        END IF;
        -- A table created asynchronously is pending until every standby
        -- has replayed its creation (confirmed as a raise is): a failover
        -- to one that lacks it would let a new table hand out the node IDs
        -- and epochs that the lost one did. Whether there are standbys is
        -- read once the creation has committed, not here: a standby
        -- attached while this transaction runs on receives its commit
        -- late, or not at all.
        INSERT INTO {c} (min_node, max_node, max_ttl_ms, replication, generation, generation_at, quarantine_until_ms, server_id, wal_timeline,
            creation_pending)
        VALUES ({lo}, {hi}, {ttl}, want, 1, now(), (extract(epoch FROM now()) * 1000)::bigint, sid, tli,
            CASE WHEN sid IS NOT NULL THEN true END);
    ELSE
        IF cur = 'sync' AND (SELECT server_id FROM {c}) IS NULL THEN
            -- A table that records sync and has not watched its server: it
            -- does from now on if the server tells its identity (its past
            -- was trusted, as it was then the rule).
            BEGIN
                EXECUTE pair INTO sid, tli;
                UPDATE {c} SET server_id = sid, wal_timeline = tli;
            EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_function THEN
                NULL;
            END;
        ELSE
            -- The generation check of a claim (asyncHead's seen): a
            -- failover, a move or a restore that no claim has seen yet
            -- starts its generation now, before the table switches its mode
            -- or gains rows. Renewals and releases do not look either.
            EXECUTE pair INTO sid, tli;
            UPDATE {c} AS c SET generation = c.generation + 1, generation_at = now(),
                quarantine_until_ms = CASE WHEN c.quarantine_until_ms IS NOT NULL AND c.server_id = sid THEN
                    GREATEST(c.quarantine_until_ms, (extract(epoch FROM now()) * 1000)::bigint + {quarantine}) END,
                moved_quarantine_until_ms = CASE WHEN c.quarantine_until_ms IS NOT NULL AND c.server_id = sid THEN c.moved_quarantine_until_ms
                    ELSE GREATEST(c.moved_quarantine_until_ms, c.quarantine_until_ms) END,
                server_id = sid, wal_timeline = tli
            WHERE (c.server_id, c.wal_timeline) IS DISTINCT FROM (sid, tli);
        END IF;
        eff := COALESCE(want, cur);
        -- Only a table that records sync and cannot watch its server trusts
        -- that a failover loses no commit: a raise is at once there.
        trust := eff = 'sync' AND (SELECT server_id FROM {c}) IS NULL;
        IF want = 'async' AND cur = 'sync' THEN
            -- From now on a change of server or timeline is a failover that
            -- may have lost commits: the server of now is the one.
            EXECUTE pair INTO sid, tli;
            UPDATE {c} SET server_id = sid, wal_timeline = tli;
        END IF;
        -- A raise of the maximum TTL is pending on a watched table
        -- (raise_ttl_ms: quarantines count with it, leases may not use it)
        -- until every standby has it; on a trusted one it is at once, and
        -- a switch to sync that makes a table trusted confirms a pending
        -- creation too.
        UPDATE {c} SET min_node = LEAST(min_node, {lo}), max_node = GREATEST(max_node, {hi}),
            max_ttl_ms = CASE WHEN trust THEN GREATEST(max_ttl_ms, {ttl}, COALESCE(raise_ttl_ms, 0)) ELSE max_ttl_ms END,
            raise_ttl_ms = CASE WHEN trust THEN NULL
                WHEN {ttl} > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0)) THEN {ttl} ELSE raise_ttl_ms END,
            creation_pending = CASE WHEN trust THEN NULL ELSE creation_pending END,
            replication = eff
        WHERE min_node > {lo} OR max_node < {hi} OR {ttl} > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0))
            OR replication <> eff OR (trust AND (raise_ttl_ms IS NOT NULL OR creation_pending));
    END IF;
END
$nodeid$;
-- Rows a widening adds are of the generation before the current one: a
-- failover or a restore may have lost a widening and the claims of its
-- rows, which the current generation's quarantine and a new era's epochs
-- then cover as they cover every older row. (A new table's rows, of
-- generation 0, become the first generation's below.)
INSERT INTO {t} (node_id, claim_generation)
SELECT g, c.generation - 1 FROM {c} AS c, generate_series(c.min_node, c.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
UPDATE {t} SET claim_generation = c.generation FROM {c} AS c WHERE {t}.claim_generation = 0;
UPDATE {h} SET generation = c.generation FROM {c} AS c WHERE {h}.generation = 0;
ANALYZE {t}, {c};
