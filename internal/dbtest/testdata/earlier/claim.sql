-- nodeid claim
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
), lo AS (
    SELECT (SELECT min(t.node_id) FROM snowflake_nodes AS t
            WHERE t.expires_at > '-infinity' AND t.expires_at < now()
              AND t.node_id BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms)
         < COALESCE((SELECT min(t.node_id) FROM snowflake_nodes AS t
            WHERE t.expires_at = '-infinity' AND t.node_id BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms),
            $2::integer + 1) AS lapsed_first
    FROM q WHERE $4::bigint <= q.max_ttl_ms
), lapsed AS (
    SELECT t.node_id, t.epoch, t.expires_at, t.horizon_ms, t.timeline FROM snowflake_nodes AS t, q
    WHERE t.expires_at > '-infinity' AND t.expires_at < now()
      AND t.node_id BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), free AS (
    SELECT t.node_id, t.epoch, t.expires_at, t.horizon_ms, t.timeline FROM snowflake_nodes AS t, q
    WHERE t.expires_at = '-infinity' AND t.node_id BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), again AS (
    SELECT t.node_id, t.epoch, t.expires_at, t.horizon_ms, t.timeline FROM snowflake_nodes AS t, q
    WHERE t.expires_at > '-infinity' AND t.expires_at < now()
      AND t.node_id BETWEEN $1::integer AND $2::integer AND (CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END) < q.now_ms
    ORDER BY t.node_id LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), pick AS (
    SELECT p.node_id, p.epoch, p.expires_at, p.timeline,
        CASE WHEN p.timeline < q.cur THEN GREATEST(p.horizon_ms, q.fence_ms) ELSE p.horizon_ms END AS prev_ms
    FROM (
        (SELECT * FROM lapsed WHERE (SELECT lapsed_first FROM lo))
        UNION ALL (SELECT * FROM free WHERE (SELECT true FROM lo))
        UNION ALL (SELECT * FROM again WHERE NOT (SELECT lapsed_first FROM lo))
        LIMIT 1
    ) AS p, q
), claimed AS (
    UPDATE snowflake_nodes AS t
    SET owner = $3::text, acquired_at = clock_timestamp(),
        epoch = CASE WHEN pick.timeline < q.cur
            THEN GREATEST(t.epoch + 1, (q.cur << 32) | ((t.epoch + 1) & 4294967295)) ELSE t.epoch + 1 END,
        expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(pick.prev_ms, LEAST($5::bigint, q.now_ms + $4::bigint)),
        timeline = q.cur
    FROM pick, q WHERE t.node_id = pick.node_id
    RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms, t.timeline
), ended AS (
    UPDATE snowflake_nodes_history AS h
    SET ended_at = LEAST(pick.expires_at, now()), end_reason = 'expired', horizon_ms = pick.prev_ms
    FROM pick
    WHERE h.node_id = pick.node_id AND h.epoch = pick.epoch AND h.ended_at IS NULL
), started AS (
    INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, timeline)
    SELECT c.node_id, c.epoch, $3::text, c.acquired_at, pick.prev_ms, c.timeline FROM claimed c, pick
)
SELECT c.node_id, c.epoch, c.expires_at, pick.prev_ms, c.horizon_ms, c.timeline, now(),
    NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::boolean, NULL::bigint
FROM claimed c, pick
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, now(),
    (SELECT count(*) FROM snowflake_nodes WHERE node_id BETWEEN $1::integer AND $2::integer AND expires_at >= now()),
    w.cooling, w.node_id, w.until_ms, w.set_at, w.quarantined, (SELECT max_ttl_ms FROM q)
FROM (
    SELECT count(*) OVER () AS cooling, t.node_id, x.until_ms, t.timeline < q.cur AS quarantined,
        COALESCE((SELECT h.ended_at FROM snowflake_nodes_history AS h WHERE h.node_id = t.node_id AND h.epoch = t.epoch),
            CASE WHEN isfinite(t.expires_at) THEN t.expires_at END) AS set_at
    FROM snowflake_nodes AS t, q,
        LATERAL (SELECT CASE WHEN t.timeline < q.cur THEN GREATEST(t.horizon_ms, q.fence_ms) ELSE t.horizon_ms END AS until_ms) AS x
    WHERE t.expires_at < now() AND t.node_id BETWEEN $1::integer AND $2::integer
      AND x.until_ms >= q.now_ms
    ORDER BY x.until_ms, t.node_id LIMIT 1
) AS w RIGHT JOIN (SELECT 1) AS one ON true
WHERE NOT EXISTS (SELECT 1 FROM claimed)