-- nodeid renew
WITH id AS (
    SELECT (SELECT system_identifier FROM pg_control_system()) AS sid, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint AS tli
), q AS (
    SELECT c.max_ttl_ms, c.replication AS mode, x.changed, c.generation + x.changed::integer AS gen, id.sid, id.tli,
        (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        (extract(epoch FROM CASE WHEN x.changed THEN now() ELSE c.generation_at END) * 1000)::bigint
            + c.max_ttl_ms + c.max_ttl_ms / 10 AS fence_ms,
        set_config('synchronous_commit', 'on', true) AS durable
    FROM snowflake_nodes_config AS c, id,
        LATERAL (SELECT (c.server_id, c.wal_timeline) IS DISTINCT FROM (id.sid, id.tli) AS changed) AS x
    LIMIT 1
), seen AS (
    UPDATE snowflake_nodes_config SET generation = q.gen, generation_at = now(), server_id = q.sid, wal_timeline = q.tli
    FROM q WHERE q.changed AND (snowflake_nodes_config.server_id, snowflake_nodes_config.wal_timeline) IS DISTINCT FROM (q.sid, q.tli)
), cur AS (
    SELECT node_id, owner, epoch, expires_at FROM snowflake_nodes WHERE node_id = $1::integer FOR NO KEY UPDATE
), renewed AS (
    UPDATE snowflake_nodes AS t
    SET expires_at = now() + $4::bigint * interval '1 millisecond',
        horizon_ms = GREATEST(t.horizon_ms, LEAST($5::bigint, q.now_ms + $4::bigint),
            LEAST($6::bigint, q.now_ms + $4::bigint + q.max_ttl_ms / 10)),
        generation = q.gen
    FROM cur, q
    WHERE t.node_id = cur.node_id AND cur.owner = $2::text AND cur.epoch = $3::bigint AND cur.expires_at >= now()
      AND $4::bigint <= q.max_ttl_ms
    RETURNING t.expires_at, t.horizon_ms
)
SELECT r.expires_at, r.horizon_ms, cur.owner, cur.epoch, now(),
    (SELECT end_reason FROM snowflake_nodes_history WHERE node_id = $1::integer AND epoch = $3::bigint),
    $4::bigint > (SELECT max_ttl_ms FROM q)
FROM cur LEFT JOIN renewed AS r ON true
