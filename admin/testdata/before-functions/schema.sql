SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', '1000ms', true);
CREATE TABLE IF NOT EXISTS snowflake_nodes (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0,
    claim_generation bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS snowflake_nodes_history (
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
CREATE TABLE IF NOT EXISTS snowflake_nodes_config (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    min_node      integer     NOT NULL CHECK (min_node >= 0),
    max_node      integer     NOT NULL CHECK (max_node >= min_node),
    max_ttl_ms    bigint      NOT NULL CHECK (max_ttl_ms > 0),
    raise_ttl_ms  bigint      CHECK (raise_ttl_ms > 0),
    replication   text        NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
    generation    bigint      NOT NULL DEFAULT 1 CHECK (generation > 0),
    generation_at timestamptz NOT NULL DEFAULT now(),
    fence_ms      bigint,
    moved_fence_ms bigint,
    creation_pending boolean CHECK (creation_pending),
    server_id     bigint,
    wal_timeline  bigint
);
DO $nodeid$
DECLARE
    want  text := NULL;
    cur   text;
    eff   text;
    trust boolean;
    sid   bigint;
    tli   bigint;
    pair  constant text := 'SELECT ' || $q$(SELECT system_identifier FROM pg_control_system()), ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint$q$;
BEGIN
    -- Earlier versions: a lease table whose renewals and releases recorded
    -- the generation in the row (generation), one with WAL timelines where
    -- generations are now (timeline), or one without either. Renaming the
    -- column makes those versions' statements fail on the table.
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'claim_generation' AND NOT attisdropped) THEN
        IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'generation' AND NOT attisdropped) THEN
            ALTER TABLE snowflake_nodes RENAME COLUMN generation TO claim_generation;
        ELSIF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
            ALTER TABLE snowflake_nodes RENAME COLUMN timeline TO claim_generation;
        ELSE
            ALTER TABLE snowflake_nodes ADD COLUMN claim_generation bigint NOT NULL DEFAULT 0;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_history'::regclass AND attname = 'generation' AND NOT attisdropped) THEN
        IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_history'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
            ALTER TABLE snowflake_nodes_history RENAME COLUMN timeline TO generation;
            ALTER TABLE snowflake_nodes_history ALTER COLUMN generation DROP DEFAULT;
        ELSE
            ALTER TABLE snowflake_nodes_history ADD COLUMN generation bigint NOT NULL DEFAULT 0;
            ALTER TABLE snowflake_nodes_history ALTER COLUMN generation DROP DEFAULT;
        END IF;
    END IF;
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'timeline_seen_at' AND NOT attisdropped) THEN
        -- The configuration of the version that recorded WAL timelines:
        -- rows of its recorded timeline are of generation 2, earlier ones
        -- of generation 1, which stays quarantined as it was.
        ALTER TABLE snowflake_nodes_config RENAME COLUMN timeline TO wal_timeline;
        ALTER TABLE snowflake_nodes_config RENAME COLUMN timeline_seen_at TO generation_at;
        ALTER TABLE snowflake_nodes_config ALTER COLUMN wal_timeline DROP NOT NULL,
            ADD COLUMN replication text NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
            ADD COLUMN generation bigint NOT NULL DEFAULT 2 CHECK (generation > 0),
            ADD COLUMN server_id bigint;
        UPDATE snowflake_nodes SET claim_generation = CASE WHEN snowflake_nodes.claim_generation >= c.wal_timeline THEN 2 ELSE 1 END FROM snowflake_nodes_config AS c;
        UPDATE snowflake_nodes_history SET generation = CASE WHEN snowflake_nodes_history.generation >= c.wal_timeline THEN 2 ELSE 1 END FROM snowflake_nodes_config AS c;
        IF want IS DISTINCT FROM 'sync' THEN
            -- That version did not record the server's identity: the server
            -- that is on the recorded timeline is taken to be the one.
            EXECUTE pair INTO sid, tli;
            UPDATE snowflake_nodes_config SET server_id = sid WHERE wal_timeline = tli;
        END IF;
    END IF;
    -- A column no statement uses, which fences out the DDL of every earlier
    -- version with generations: each renames a configuration's "timeline"
    -- to wal_timeline, which exists, and fails as a whole. Run again after
    -- this one (an old process that applies its DDL at start, an old nodeid
    -- init), it would otherwise add back the columns whose renaming makes
    -- its statements fail, and raise the maximum TTL at once on an
    -- asynchronous table. (The DDL of the versions before generations runs,
    -- and their statements still fail: they compare this boolean with a
    -- number, or insert history rows without their generation.)
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
        ALTER TABLE snowflake_nodes_config ADD COLUMN timeline boolean CHECK (timeline IS NULL);
        COMMENT ON COLUMN snowflake_nodes_config.timeline IS 'unused: makes the DDL of nodeid versions earlier than this table fail on it';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'fence_ms' AND NOT attisdropped) THEN
        -- The versions that computed the quarantine from the maximum TTL
        -- when a statement ran: it is recorded when the generation begins.
        ALTER TABLE snowflake_nodes_config ADD COLUMN fence_ms bigint, ADD COLUMN raise_ttl_ms bigint CHECK (raise_ttl_ms > 0);
        UPDATE snowflake_nodes_config SET fence_ms = (extract(epoch FROM generation_at) * 1000)::bigint + max_ttl_ms * 11 / 10;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'moved_fence_ms' AND NOT attisdropped) THEN
        -- The versions that forgot, at a move, the quarantine running.
        ALTER TABLE snowflake_nodes_config ADD COLUMN moved_fence_ms bigint;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'creation_pending' AND NOT attisdropped) THEN
        -- The versions whose tables were usable as soon as created.
        ALTER TABLE snowflake_nodes_config ADD COLUMN creation_pending boolean CHECK (creation_pending);
    END IF;
    -- The free rows in node ID order, by an expression no other index
    -- orders (node_id + 0), so that the planner reads the lowest free row
    -- from it whatever its statistics say: an index on node_id itself
    -- costs the same as the primary key when the statistics say every row
    -- is free, and the primary key then walks every held row. Earlier
    -- versions' index on node_id goes.
    IF to_regclass('snowflake_nodes_free_key_idx') IS NULL THEN
        CREATE INDEX snowflake_nodes_free_key_idx ON snowflake_nodes ((node_id + 0)) WHERE expires_at = '-infinity';
    END IF;
    IF to_regclass('snowflake_nodes_free_idx') IS NOT NULL THEN
        DROP INDEX snowflake_nodes_free_idx;
    END IF;
    IF to_regclass('snowflake_nodes_lapse_idx') IS NULL THEN
        CREATE INDEX snowflake_nodes_lapse_idx ON snowflake_nodes (expires_at) WHERE expires_at > '-infinity';
    END IF;
    -- Earlier versions indexed the history's ended_at, which let the
    -- planner end a claim by scanning it: the claims now reach the history
    -- only through its primary key.
    IF to_regclass('snowflake_nodes_history_ended_idx') IS NOT NULL THEN
        DROP INDEX snowflake_nodes_history_ended_idx;
    END IF;

    SELECT replication INTO cur FROM snowflake_nodes_config FOR UPDATE;
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
        INSERT INTO snowflake_nodes_config (min_node, max_node, max_ttl_ms, replication, generation, generation_at, fence_ms, server_id, wal_timeline,
            creation_pending)
        VALUES (0, 3, 6000, want, 1, now(), (extract(epoch FROM now()) * 1000)::bigint, sid, tli,
            CASE WHEN sid IS NOT NULL THEN true END);
    ELSE
        IF cur = 'sync' AND (SELECT server_id FROM snowflake_nodes_config) IS NULL THEN
            -- A table that records sync and has not watched its server: it
            -- does from now on if the server tells its identity (its past
            -- was trusted, as it was then the rule).
            BEGIN
                EXECUTE pair INTO sid, tli;
                UPDATE snowflake_nodes_config SET server_id = sid, wal_timeline = tli;
            EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_function THEN
                NULL;
            END;
        ELSE
            -- The generation check of a claim (asyncHead's seen): a
            -- failover, a move or a restore that no claim has seen yet
            -- starts its generation now, before the table switches its mode
            -- or gains rows. Renewals and releases do not look either.
            EXECUTE pair INTO sid, tli;
            UPDATE snowflake_nodes_config AS c SET generation = c.generation + 1, generation_at = now(),
                fence_ms = CASE WHEN c.fence_ms IS NOT NULL AND c.server_id = sid THEN
                    GREATEST(c.fence_ms, (extract(epoch FROM now()) * 1000)::bigint + GREATEST(c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10) END,
                moved_fence_ms = CASE WHEN c.fence_ms IS NOT NULL AND c.server_id = sid THEN c.moved_fence_ms
                    ELSE GREATEST(c.moved_fence_ms, c.fence_ms) END,
                server_id = sid, wal_timeline = tli
            WHERE (c.server_id, c.wal_timeline) IS DISTINCT FROM (sid, tli);
        END IF;
        eff := COALESCE(want, cur);
        -- Only a table that records sync and cannot watch its server trusts
        -- that a failover loses no commit: a raise is at once there.
        trust := eff = 'sync' AND (SELECT server_id FROM snowflake_nodes_config) IS NULL;
        IF want = 'async' AND cur = 'sync' THEN
            -- From now on a change of server or timeline is a failover that
            -- may have lost commits: the server of now is the one.
            EXECUTE pair INTO sid, tli;
            UPDATE snowflake_nodes_config SET server_id = sid, wal_timeline = tli;
        END IF;
        -- A raise of the maximum TTL is pending on a watched table
        -- (raise_ttl_ms: quarantines count with it, leases may not use it)
        -- until every standby has it; on a trusted one it is at once, and
        -- a switch to sync that makes a table trusted confirms a pending
        -- creation too.
        UPDATE snowflake_nodes_config SET min_node = LEAST(min_node, 0), max_node = GREATEST(max_node, 3),
            max_ttl_ms = CASE WHEN trust THEN GREATEST(max_ttl_ms, 6000, COALESCE(raise_ttl_ms, 0)) ELSE max_ttl_ms END,
            raise_ttl_ms = CASE WHEN trust THEN NULL
                WHEN 6000 > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0)) THEN 6000 ELSE raise_ttl_ms END,
            creation_pending = CASE WHEN trust THEN NULL ELSE creation_pending END,
            replication = eff
        WHERE min_node > 0 OR max_node < 3 OR 6000 > GREATEST(max_ttl_ms, COALESCE(raise_ttl_ms, 0))
            OR replication <> eff OR (trust AND (raise_ttl_ms IS NOT NULL OR creation_pending));
    END IF;
END
$nodeid$;
-- Rows a widening adds are of the generation before the current one: a
-- failover or a restore may have lost a widening and the claims of its
-- rows, which the current generation's quarantine and a new era's epochs
-- then cover as they cover every older row. (A new table's rows, of
-- generation 0, become the first generation's below.)
INSERT INTO snowflake_nodes (node_id, claim_generation)
SELECT g, c.generation - 1 FROM snowflake_nodes_config AS c, generate_series(c.min_node, c.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
UPDATE snowflake_nodes SET claim_generation = c.generation FROM snowflake_nodes_config AS c WHERE snowflake_nodes.claim_generation = 0;
UPDATE snowflake_nodes_history SET generation = c.generation FROM snowflake_nodes_config AS c WHERE snowflake_nodes_history.generation = 0;
ANALYZE snowflake_nodes, snowflake_nodes_config;
