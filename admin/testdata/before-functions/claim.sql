-- nodeid claim
WITH id AS (
    SELECT (SELECT system_identifier FROM pg_control_system()) AS sid, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint AS tli
), c AS (
    SELECT c.*, (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        (c.replication = 'async' OR c.server_id IS NOT NULL) AND (c.server_id, c.wal_timeline) IS DISTINCT FROM (id.sid, id.tli) AS changed,
        c.fence_ms IS NULL OR c.server_id <> id.sid AS moved,
        id.sid, id.tli
    FROM snowflake_nodes_config AS c, id
    LIMIT 1
), g AS (
    SELECT c.max_ttl_ms, CASE WHEN c.replication = 'async' OR c.server_id IS NOT NULL THEN 'async' ELSE 'sync' END AS mode, c.changed, c.generation + c.changed::integer AS gen, c.sid, c.tli, c.now_ms, now() AS now_at,
        COALESCE(c.creation_pending, false) AS creating,
        CASE WHEN NOT c.changed THEN c.fence_ms WHEN NOT c.moved THEN GREATEST(c.fence_ms, c.now_ms + GREATEST(c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10) END AS fence_ms,
        set_config('synchronous_commit', 'on', true) AS durable
    FROM c
), seen AS (
    UPDATE snowflake_nodes_config SET generation = g.gen, generation_at = now(), server_id = g.sid, wal_timeline = g.tli, fence_ms = g.fence_ms,
        moved_fence_ms = CASE WHEN g.fence_ms IS NULL THEN GREATEST(snowflake_nodes_config.moved_fence_ms, snowflake_nodes_config.fence_ms) ELSE snowflake_nodes_config.moved_fence_ms END
    FROM g WHERE g.changed AND (snowflake_nodes_config.server_id, snowflake_nodes_config.wal_timeline) IS DISTINCT FROM (g.sid, g.tli)
), q AS (
    SELECT g.*, g.fence_ms IS NULL AS pending, COALESCE(g.fence_ms, 9223372036854775807) AS fence FROM g
), lo AS (
    SELECT (SELECT min(t.node_id + 0) FROM snowflake_nodes AS t WHERE t.expires_at > '-infinity' AND t.expires_at < q.now_at
      AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.fence) ELSE t.horizon_ms END) < q.now_ms) AS lapsed_min
    FROM q WHERE $4::bigint <= q.max_ttl_ms AND q.mode = 'async' AND NOT q.pending AND NOT q.creating
), fmin AS (
    SELECT t.node_id FROM snowflake_nodes AS t, q WHERE t.expires_at = '-infinity' AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.fence) ELSE t.horizon_ms END) < q.now_ms
    ORDER BY t.node_id + 0 LIMIT 1
), free_first AS (
    SELECT lapsed_min IS NULL OR COALESCE((SELECT node_id FROM fmin), $2::integer + 1) < lapsed_min AS yes FROM lo
), free AS (
    SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM snowflake_nodes AS t, q
    WHERE t.expires_at = '-infinity' AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.fence) ELSE t.horizon_ms END) < q.now_ms
    ORDER BY t.node_id + 0 LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), lapsed AS (
    SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM snowflake_nodes AS t, q
    WHERE t.expires_at > '-infinity' AND t.expires_at < q.now_at
      AND t.node_id + 0 BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.fence) ELSE t.horizon_ms END) < q.now_ms AND t.node_id >= (SELECT lapsed_min FROM lo)
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
    UPDATE snowflake_nodes AS t
    SET owner = $3::text, acquired_at = clock_timestamp(),
        epoch = CASE WHEN pick.claim_generation < q.gen
            THEN GREATEST(t.epoch + 1, ((q.now_ms / 1000 - 1577836800) << 32) | ((t.epoch + 1) & 4294967295))
            ELSE t.epoch + 1 END,
        expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(pick.prev_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        claim_generation = q.gen
    FROM pick, q WHERE t.node_id = pick.node_id
    RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation
), ended AS (
    INSERT INTO snowflake_nodes_history AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
    SELECT pick.node_id, pick.epoch, pick.owner, COALESCE(pick.acquired_at, now()), 0, pick.claim_generation,
        LEAST(pick.expires_at, now()), 'expired', pick.prev_ms
    FROM pick WHERE pick.owner <> ''
    ON CONFLICT (node_id, epoch) DO UPDATE
    SET ended_at = excluded.ended_at, end_reason = excluded.end_reason, horizon_ms = excluded.horizon_ms WHERE h.ended_at IS NULL
), started AS (
    INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, generation)
    SELECT c.node_id, c.epoch, $3::text, c.acquired_at, pick.prev_ms, c.claim_generation FROM claimed c, pick
)
SELECT c.node_id, c.epoch, c.expires_at, pick.prev_ms, c.horizon_ms, c.claim_generation, now()
FROM claimed c, pick
