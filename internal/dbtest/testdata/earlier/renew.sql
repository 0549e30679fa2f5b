-- nodeid renew
WITH tl AS (
    SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint AS cur LIMIT 1
), seen AS (
    UPDATE snowflake_nodes_config SET timeline = tl.cur, timeline_seen_at = now() FROM tl WHERE snowflake_nodes_config.timeline < tl.cur
), q AS (
    SELECT tl.cur, c.max_ttl_ms,
        (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        (extract(epoch FROM CASE WHEN c.timeline < tl.cur THEN now() ELSE c.timeline_seen_at END) * 1000)::bigint
            + c.max_ttl_ms + c.max_ttl_ms / 10 AS fence_ms
    FROM snowflake_nodes_config AS c, tl LIMIT 1
), cur AS (
    SELECT node_id, owner, epoch, expires_at FROM snowflake_nodes WHERE node_id = $1::integer FOR NO KEY UPDATE
), renewed AS (
    UPDATE snowflake_nodes AS t
    SET expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(t.horizon_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        timeline = q.cur
    FROM cur, q
    WHERE t.node_id = cur.node_id AND cur.owner = $2::text AND cur.epoch = $3::bigint AND cur.expires_at >= now()
    RETURNING t.expires_at, t.horizon_ms
)
SELECT r.expires_at, r.horizon_ms, cur.owner, cur.epoch, now(),
    (SELECT end_reason FROM snowflake_nodes_history WHERE node_id = $1::integer AND epoch = $3::bigint)
FROM cur LEFT JOIN renewed AS r ON true