CREATE TABLE IF NOT EXISTS snowflake_nodes (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0,
    timeline    bigint      NOT NULL DEFAULT 0
);
ALTER TABLE snowflake_nodes ADD COLUMN IF NOT EXISTS timeline bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS snowflake_nodes_free_idx ON snowflake_nodes (node_id) WHERE expires_at = '-infinity';
CREATE INDEX IF NOT EXISTS snowflake_nodes_lapse_idx ON snowflake_nodes (expires_at) WHERE expires_at > '-infinity';
CREATE TABLE IF NOT EXISTS snowflake_nodes_history (
    node_id     integer     NOT NULL,
    epoch       bigint      NOT NULL,
    owner       text        NOT NULL,
    acquired_at timestamptz NOT NULL,
    from_ms     bigint      NOT NULL,
    ended_at    timestamptz,
    end_reason  text        CHECK (end_reason IN ('released', 'expired', 'evicted')),
    horizon_ms  bigint,
    timeline    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (node_id, epoch)
);
ALTER TABLE snowflake_nodes_history ADD COLUMN IF NOT EXISTS timeline bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS snowflake_nodes_history_ended_idx ON snowflake_nodes_history (ended_at);
CREATE TABLE IF NOT EXISTS snowflake_nodes_config (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    min_node    integer     NOT NULL CHECK (min_node >= 0),
    max_node    integer     NOT NULL CHECK (max_node >= min_node),
    max_ttl_ms  bigint      NOT NULL CHECK (max_ttl_ms > 0),
    timeline    bigint      NOT NULL,
    timeline_seen_at timestamptz NOT NULL
);
UPDATE snowflake_nodes SET timeline = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint WHERE timeline = 0;
INSERT INTO snowflake_nodes_config (min_node, max_node, max_ttl_ms, timeline, timeline_seen_at)
VALUES (0, 1, 60000, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint, now())
ON CONFLICT (singleton) DO UPDATE
SET min_node = LEAST(snowflake_nodes_config.min_node, EXCLUDED.min_node), max_node = GREATEST(snowflake_nodes_config.max_node, EXCLUDED.max_node),
    max_ttl_ms = GREATEST(snowflake_nodes_config.max_ttl_ms, EXCLUDED.max_ttl_ms);
INSERT INTO snowflake_nodes (node_id, timeline)
SELECT g, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint FROM snowflake_nodes_config, generate_series(snowflake_nodes_config.min_node, snowflake_nodes_config.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
ANALYZE snowflake_nodes, snowflake_nodes_config;
