SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', '1000ms', true);
CREATE TABLE IF NOT EXISTS snowflake_nodes (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0,
    generation  bigint      NOT NULL DEFAULT 0
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
    replication   text        NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
    generation    bigint      NOT NULL DEFAULT 1 CHECK (generation > 0),
    generation_at timestamptz NOT NULL DEFAULT now(),
    server_id     bigint,
    wal_timeline  bigint
);
DO $nodeid$
DECLARE
    want  text := NULL;
    cur   text;
    sid   bigint;
    tli   bigint;
    pair  constant text := 'SELECT ' || $q$(SELECT system_identifier FROM pg_control_system()), ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint$q$;
BEGIN
    -- Earlier versions: a lease table without generations, or with WAL
    -- timelines where generations are now.
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'generation' AND NOT attisdropped) THEN
        IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
            ALTER TABLE snowflake_nodes RENAME COLUMN timeline TO generation;
        ELSE
            ALTER TABLE snowflake_nodes ADD COLUMN generation bigint NOT NULL DEFAULT 0;
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
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'snowflake_nodes_config'::regclass AND attname = 'timeline' AND NOT attisdropped) THEN
        -- The configuration of the version that recorded WAL timelines:
        -- rows of its recorded timeline are of generation 2, earlier ones
        -- of generation 1, which stays quarantined as it was.
        ALTER TABLE snowflake_nodes_config RENAME COLUMN timeline TO wal_timeline;
        ALTER TABLE snowflake_nodes_config RENAME COLUMN timeline_seen_at TO generation_at;
        ALTER TABLE snowflake_nodes_config ALTER COLUMN wal_timeline DROP NOT NULL,
            ADD COLUMN replication text NOT NULL DEFAULT 'async' CHECK (replication IN ('async', 'sync')),
            ADD COLUMN generation bigint NOT NULL DEFAULT 2 CHECK (generation > 0),
            ADD COLUMN server_id bigint;
        UPDATE snowflake_nodes SET generation = CASE WHEN snowflake_nodes.generation >= c.wal_timeline THEN 2 ELSE 1 END FROM snowflake_nodes_config AS c;
        UPDATE snowflake_nodes_history SET generation = CASE WHEN snowflake_nodes_history.generation >= c.wal_timeline THEN 2 ELSE 1 END FROM snowflake_nodes_config AS c;
        IF want IS DISTINCT FROM 'sync' THEN
            -- That version did not record the server's identity: the server
            -- that is on the recorded timeline is taken to be the one.
            EXECUTE pair INTO sid, tli;
            UPDATE snowflake_nodes_config SET server_id = sid WHERE wal_timeline = tli;
        END IF;
    END IF;
    IF to_regclass('snowflake_nodes_free_idx') IS NULL THEN
        CREATE INDEX snowflake_nodes_free_idx ON snowflake_nodes (node_id) WHERE expires_at = '-infinity';
    END IF;
    IF to_regclass('snowflake_nodes_lapse_idx') IS NULL THEN
        CREATE INDEX snowflake_nodes_lapse_idx ON snowflake_nodes (expires_at) WHERE expires_at > '-infinity';
    END IF;
    IF to_regclass('snowflake_nodes_history_ended_idx') IS NULL THEN
        CREATE INDEX snowflake_nodes_history_ended_idx ON snowflake_nodes_history (ended_at);
    END IF;

    SELECT replication INTO cur FROM snowflake_nodes_config FOR UPDATE;
    IF NOT FOUND THEN
        want := COALESCE(want, 'async');
        IF want = 'async' THEN
            EXECUTE pair INTO sid, tli;
        END IF;
        INSERT INTO snowflake_nodes_config (min_node, max_node, max_ttl_ms, replication, generation, generation_at, server_id, wal_timeline)
        VALUES (0, 1, 6000, want, 1, now(), sid, tli);
    ELSE
        IF want = 'async' AND cur = 'sync' THEN
            -- From now on a change of server or timeline is a failover that
            -- may have lost commits: the server of now is the one.
            EXECUTE pair INTO sid, tli;
            UPDATE snowflake_nodes_config SET server_id = sid, wal_timeline = tli;
        END IF;
        UPDATE snowflake_nodes_config SET min_node = LEAST(min_node, 0), max_node = GREATEST(max_node, 1),
            max_ttl_ms = GREATEST(max_ttl_ms, 6000), replication = COALESCE(want, replication)
        WHERE min_node > 0 OR max_node < 1 OR max_ttl_ms < 6000 OR replication <> COALESCE(want, replication);
    END IF;
END
$nodeid$;
INSERT INTO snowflake_nodes (node_id, generation)
SELECT g, c.generation FROM snowflake_nodes_config AS c, generate_series(c.min_node, c.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
UPDATE snowflake_nodes SET generation = c.generation FROM snowflake_nodes_config AS c WHERE snowflake_nodes.generation = 0;
UPDATE snowflake_nodes_history SET generation = c.generation FROM snowflake_nodes_config AS c WHERE snowflake_nodes_history.generation = 0;
ANALYZE snowflake_nodes, snowflake_nodes_config;
