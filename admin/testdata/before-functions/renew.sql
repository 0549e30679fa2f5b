-- nodeid renew
WITH q AS (
    SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
        set_config('synchronous_commit', 'on', true) AS durable
), renewed AS (
    UPDATE snowflake_nodes AS t
    SET expires_at = GREATEST(t.expires_at, now() + $4::bigint * interval '1 millisecond'),
        horizon_ms = GREATEST(t.horizon_ms, LEAST($5::bigint, q.now_ms + $4::bigint))
    FROM q
    WHERE t.node_id = $1::integer AND t.owner = $2::text AND t.epoch = $3::bigint AND t.expires_at >= now()
    RETURNING t.expires_at, t.horizon_ms
)
SELECT r.expires_at, r.horizon_ms, now() FROM renewed AS r
