-- The client functions of the lease table {t}: claim, renew, release and
-- verify. Every client, in any language, leases through these four; a
-- client role needs EXECUTE on them and nothing on the tables (nodeid init
-- --grant). Each is SECURITY DEFINER, owned by the tables' owner, with its
-- search_path pinned to the table's schema (then pg_temp) once created.
-- docs/protocol.md states the rules, docs/sql.md the contract; the model in
-- model_test.go checks them. Names of parameters never shadow columns
-- (#variable_conflict use_column, and the parameters are read through
-- aliases). Invalid input raises SQLSTATE 22023 naming the value and the
-- rule.

-- {t}_claim claims the lowest claimable node ID of lo to hi (the table's
-- range by default) for owner, for ttl_ms, recording horizon_ms (by default
-- and at most, the server's now plus the TTL) as the latest millisecond it
-- may stamp. It always answers one row: status 'ok' with the claim, or the
-- reason it found none, with node_id and epoch NULL:
--   all_held          every node ID of the range is held
--   cooling           none is held past its horizon, a quarantine or an
--                     evicted lease's expiry yet: soonest is the first to
--                     become claimable, after soonest_ms
--   ttl_above_max     ttl_ms exceeds the table's max_ttl_ms
--   restore_pending   the server is another system than the one recorded,
--                     and the operator has not declared the restore
--   creation_pending  the table's creation waits for its standbys
--   unconfigured      the table records no configuration
--
-- One statement claims (the CTE below), as one step of the model: it finds
-- the lowest claimable free and lapsed rows through their partial indexes
-- without locking, locks one with FOR UPDATE SKIP LOCKED, and decides on
-- the row it locked. The server's identity is read first, on a watched
-- table (async, or sync where the server tells it): a server that is not
-- the one recorded starts a new generation, whose quarantine covers every
-- older row, and the first claim of such a row takes an epoch of a new era.
-- The claim checks that the table's mode is still the one read; if an
-- operator changed it meanwhile, the function reads it again once.
CREATE OR REPLACE FUNCTION {t}_claim(owner text, ttl_ms bigint, horizon_ms bigint DEFAULT NULL,
    lo integer DEFAULT NULL, hi integer DEFAULT NULL, node_limit integer DEFAULT NULL)
RETURNS TABLE (status text, node_id integer, epoch bigint, expires_at timestamptz, after_ms bigint, until_ms bigint,
    generation bigint, now timestamptz, replication text, table_min_node integer, table_max_node integer, max_ttl_ms bigint,
    held bigint, cooling bigint, soonest integer, soonest_ms bigint, soonest_set_at timestamptz,
    quarantined boolean, evicted boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_owner   ALIAS FOR $1;
    a_ttl     ALIAS FOR $2;
    a_horizon ALIAS FOR $3;
    a_lo      ALIAS FOR $4;
    a_hi      ALIAS FOR $5;
    a_limit   ALIAS FOR $6;
    cfg       record;
    v_watched boolean;
    v_sid     bigint;
    v_tli     bigint;
    v_lo      integer;
    v_hi      integer;
    r         record;
BEGIN
    IF a_owner IS NULL OR a_owner = '' OR octet_length(a_owner) > 255 THEN
        RAISE EXCEPTION 'owner %: it must be 1 to 255 bytes', COALESCE(quote_literal(a_owner), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF a_ttl IS NULL OR a_ttl < 1 THEN
        RAISE EXCEPTION 'ttl_ms %: it must be a positive number of milliseconds', COALESCE(a_ttl::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF (a_lo IS NULL) <> (a_hi IS NULL) OR a_lo < 0 OR a_lo > a_hi THEN
        RAISE EXCEPTION 'node range lo % to hi %: give both or neither, with 0 <= lo <= hi',
            COALESCE(a_lo::text, 'NULL'), COALESCE(a_hi::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid IN ('{t}'::regclass, '{t}_history'::regclass, '{t}_config'::regclass) AND relpersistence <> 'p') THEN
        RAISE EXCEPTION 'the lease tables of {t} are UNLOGGED or temporary: a crash empties them and hands out every epoch again'
            USING ERRCODE = '55000';
    END IF;
    FOR attempt IN 1..2 LOOP
        SELECT c.min_node, c.max_node, (c.replication = 'async' OR c.server_id IS NOT NULL) AS watched INTO cfg
        FROM {t}_config AS c;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'unconfigured'::text, NULL::integer, NULL::bigint, NULL::timestamptz, NULL::bigint, NULL::bigint,
                NULL::bigint, now(), NULL::text, NULL::integer, NULL::integer, NULL::bigint, NULL::bigint, NULL::bigint,
                NULL::integer, NULL::bigint, NULL::timestamptz, NULL::boolean, NULL::boolean;
            RETURN;
        END IF;
        v_lo := COALESCE(a_lo, cfg.min_node);
        v_hi := COALESCE(a_hi, cfg.max_node);
        IF a_lo IS NOT NULL AND (a_lo < cfg.min_node OR a_hi > cfg.max_node) THEN
            RAISE EXCEPTION 'node range % to % is outside the table''s, % to %', a_lo, a_hi, cfg.min_node, cfg.max_node
                USING ERRCODE = '22023';
        END IF;
        IF a_lo IS NULL AND a_limit IS NOT NULL AND cfg.max_node > a_limit THEN
            RAISE EXCEPTION 'the table''s node range, % to %, goes past node ID %, the highest the caller''s IDs hold',
                cfg.min_node, cfg.max_node, a_limit USING ERRCODE = '22023';
        END IF;
        v_watched := cfg.watched;
        v_sid := NULL;
        v_tli := NULL;
        IF v_watched THEN
            SELECT system_identifier INTO v_sid FROM pg_control_system();
            v_tli := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint;
        END IF;

        RETURN QUERY
        WITH id AS (
            SELECT v_sid AS sid, v_tli AS tli
        ), c AS (
            SELECT c.*, (extract(epoch FROM now()) * 1000)::bigint AS now_ms,
                v_watched AND (c.replication = 'async' OR c.server_id IS NOT NULL)
                    AND (c.server_id, c.wal_timeline) IS DISTINCT FROM (id.sid, id.tli) AS changed,
                c.quarantine_until_ms IS NULL OR c.server_id <> id.sid AS moved,
                id.sid, id.tli
            FROM {t}_config AS c, id
            LIMIT 1
        ), g AS (
            SELECT c.max_ttl_ms, (c.replication = 'async' OR c.server_id IS NOT NULL) AS watched, c.changed,
                c.generation + c.changed::integer AS gen, c.sid, c.tli, c.now_ms, now() AS now_at, c.min_node, c.max_node,
                c.replication, COALESCE(c.creation_pending, false) AS creating,
                CASE WHEN NOT c.changed THEN c.quarantine_until_ms
                    WHEN NOT c.moved THEN GREATEST(c.quarantine_until_ms, c.now_ms + GREATEST(c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10)
                END AS quarantine_until_ms,
                set_config('synchronous_commit', 'on', true) AS durable
            FROM c
        ), seen AS (
            UPDATE {t}_config AS s SET generation = g.gen, generation_at = now(), server_id = g.sid, wal_timeline = g.tli,
                quarantine_until_ms = g.quarantine_until_ms,
                moved_quarantine_until_ms = CASE WHEN g.quarantine_until_ms IS NULL THEN GREATEST(s.moved_quarantine_until_ms, s.quarantine_until_ms) ELSE s.moved_quarantine_until_ms END
            FROM g WHERE g.changed AND (s.server_id, s.wal_timeline) IS DISTINCT FROM (g.sid, g.tli)
        ), q AS (
            SELECT g.*, g.quarantine_until_ms IS NULL AS pending, COALESCE(g.quarantine_until_ms, 9223372036854775807) AS quarantine_until FROM g
        ), lo AS (
            SELECT (SELECT min(t.node_id + 0) FROM {t} AS t
                    WHERE t.expires_at > '-infinity' AND t.expires_at < q.now_at AND t.node_id + 0 BETWEEN v_lo AND v_hi
                      AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.quarantine_until) ELSE t.horizon_ms END) < q.now_ms
                ) AS lapsed_min
            FROM q WHERE a_ttl <= q.max_ttl_ms AND q.watched = v_watched AND NOT q.pending AND NOT q.creating
        ), fmin AS (
            SELECT t.node_id FROM {t} AS t, q
            WHERE t.expires_at = '-infinity' AND t.node_id + 0 BETWEEN v_lo AND v_hi
              AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.quarantine_until) ELSE t.horizon_ms END) < q.now_ms
            ORDER BY t.node_id + 0 LIMIT 1
        ), free_first AS (
            SELECT lapsed_min IS NULL OR COALESCE((SELECT fmin.node_id FROM fmin), v_hi + 1) < lapsed_min AS yes FROM lo
        ), free AS (
            SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM {t} AS t, q
            WHERE t.expires_at = '-infinity' AND t.node_id + 0 BETWEEN v_lo AND v_hi
              AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.quarantine_until) ELSE t.horizon_ms END) < q.now_ms
            ORDER BY t.node_id + 0 LIMIT 1
            FOR UPDATE OF t SKIP LOCKED
        ), lapsed AS (
            SELECT t.node_id, t.epoch, t.owner, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation FROM {t} AS t, q
            WHERE t.expires_at > '-infinity' AND t.expires_at < q.now_at AND t.node_id + 0 BETWEEN v_lo AND v_hi
              AND (CASE WHEN t.claim_generation < q.gen THEN GREATEST(t.horizon_ms, q.quarantine_until) ELSE t.horizon_ms END) < q.now_ms
              AND t.node_id >= (SELECT lo.lapsed_min FROM lo)
            ORDER BY t.node_id LIMIT 1
            FOR UPDATE OF t SKIP LOCKED
        ), pick AS (
            SELECT p.node_id, p.epoch, p.owner, p.acquired_at, p.expires_at, p.claim_generation,
                CASE WHEN p.claim_generation < q.gen THEN GREATEST(p.horizon_ms, q.quarantine_until) ELSE p.horizon_ms END AS prev_ms
            FROM (
                (SELECT * FROM free WHERE (SELECT free_first.yes FROM free_first))
                UNION ALL (SELECT * FROM lapsed WHERE (SELECT lo.lapsed_min FROM lo) IS NOT NULL)
                UNION ALL (SELECT * FROM free WHERE NOT (SELECT free_first.yes FROM free_first))
                LIMIT 1
            ) AS p, q
        ), claimed AS (
            UPDATE {t} AS t
            SET owner = a_owner, acquired_at = clock_timestamp(),
                epoch = CASE WHEN pick.claim_generation < q.gen
                    THEN GREATEST(t.epoch + 1, ((q.now_ms / 1000 - 1577836800) << 32) | ((t.epoch + 1) & 4294967295))
                    ELSE t.epoch + 1 END,
                expires_at = now() + a_ttl * interval '1 millisecond',
                horizon_ms = GREATEST(pick.prev_ms, LEAST(a_horizon, q.now_ms + a_ttl)),
                claim_generation = q.gen
            FROM pick, q WHERE t.node_id = pick.node_id
            RETURNING t.node_id, t.epoch, t.acquired_at, t.expires_at, t.horizon_ms, t.claim_generation
        ), ended AS (
            INSERT INTO {t}_history AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
            SELECT pick.node_id, pick.epoch, pick.owner, COALESCE(pick.acquired_at, now()), 0, pick.claim_generation,
                LEAST(pick.expires_at, now()), 'expired', pick.prev_ms
            FROM pick WHERE pick.owner <> ''
            ON CONFLICT (node_id, epoch) DO UPDATE
                SET ended_at = excluded.ended_at, end_reason = excluded.end_reason, horizon_ms = excluded.horizon_ms
                WHERE h.ended_at IS NULL
        ), started AS (
            INSERT INTO {t}_history (node_id, epoch, owner, acquired_at, from_ms, generation)
            SELECT cl.node_id, cl.epoch, a_owner, cl.acquired_at, pick.prev_ms, cl.claim_generation FROM claimed AS cl, pick
        )
        SELECT 'ok'::text, cl.node_id, cl.epoch, cl.expires_at, pick.prev_ms, cl.horizon_ms, cl.claim_generation, now(),
            q.replication, q.min_node, q.max_node, q.max_ttl_ms, NULL::bigint, NULL::bigint, NULL::integer, NULL::bigint,
            NULL::timestamptz, NULL::boolean, NULL::boolean
        FROM claimed AS cl, pick, q;
        IF FOUND THEN
            RETURN;
        END IF;

        -- Why nothing was claimable: the table as it is after the claim,
        -- which may differ from what the claim saw. It explains, and a
        -- client waits by it; nothing is claimed or refused by it.
        SELECT g.max_ttl_ms, g.watched, g.pending, g.creating, g.quarantine_until, g.gen, g.now_ms, g.replication,
            g.min_node, g.max_node, w.cooling, w.node_id AS soonest, w.until_ms, w.set_at, w.quarantined, w.evicted,
            (SELECT count(*) FROM {t} AS t WHERE t.node_id BETWEEN v_lo AND v_hi AND t.owner <> '' AND t.expires_at >= now()) AS held
        INTO r
        FROM (
            SELECT c.max_ttl_ms, (c.replication = 'async' OR c.server_id IS NOT NULL) AS watched, c.quarantine_until_ms IS NULL AS pending,
                COALESCE(c.creation_pending, false) AS creating, COALESCE(c.quarantine_until_ms, 9223372036854775807) AS quarantine_until,
                c.generation AS gen, (extract(epoch FROM now()) * 1000)::bigint AS now_ms, c.replication, c.min_node, c.max_node
            FROM {t}_config AS c LIMIT 1
        ) AS g
        LEFT JOIN LATERAL (
            SELECT count(*) OVER () AS cooling, t.node_id, x.until_ms,
                t.claim_generation < g.gen AND g.quarantine_until >= x.own_ms AS quarantined,
                t.owner = '' AND t.expires_at >= now() AS evicted,
                COALESCE((SELECT h.ended_at FROM {t}_history AS h WHERE h.node_id = t.node_id AND h.epoch = t.epoch),
                    CASE WHEN isfinite(t.expires_at) THEN t.expires_at END) AS set_at
            FROM {t} AS t,
                LATERAL (SELECT GREATEST(t.horizon_ms, CASE WHEN isfinite(t.expires_at)
                    THEN (extract(epoch FROM t.expires_at) * 1000)::bigint END) AS own_ms) AS o,
                LATERAL (SELECT CASE WHEN t.claim_generation < g.gen THEN GREATEST(o.own_ms, g.quarantine_until) ELSE o.own_ms END AS until_ms,
                    o.own_ms) AS x
            WHERE (t.owner = '' OR t.expires_at < now()) AND t.node_id BETWEEN v_lo AND v_hi AND x.until_ms >= g.now_ms
            ORDER BY x.until_ms, t.node_id LIMIT 1
        ) AS w ON true;
        IF NOT FOUND THEN
            CONTINUE; -- the configuration row went between the two: read it again
        END IF;
        IF r.watched <> v_watched AND attempt = 1 THEN
            CONTINUE; -- the table's mode changed under the claim: claim again by the new one
        END IF;
        RETURN QUERY SELECT
            CASE WHEN a_ttl > r.max_ttl_ms THEN 'ttl_above_max' WHEN r.pending THEN 'restore_pending'
                WHEN r.creating THEN 'creation_pending' WHEN COALESCE(r.cooling, 0) > 0 THEN 'cooling' ELSE 'all_held' END,
            NULL::integer, NULL::bigint, NULL::timestamptz, NULL::bigint, NULL::bigint, r.gen, now(), r.replication,
            r.min_node, r.max_node, r.max_ttl_ms, r.held, COALESCE(r.cooling, 0), r.soonest, r.until_ms, r.set_at,
            COALESCE(r.quarantined, false), COALESCE(r.evicted, false);
        RETURN;
    END LOOP;
    RETURN QUERY SELECT 'unconfigured'::text, NULL::integer, NULL::bigint, NULL::timestamptz, NULL::bigint, NULL::bigint,
        NULL::bigint, now(), NULL::text, NULL::integer, NULL::integer, NULL::bigint, NULL::bigint, NULL::bigint,
        NULL::integer, NULL::bigint, NULL::timestamptz, NULL::boolean, NULL::boolean;
END
$fn$;

-- {t}_renew extends the live lease node_id, owner, epoch by ttl_ms from the
-- server's now, and raises its recorded horizon to horizon_ms (by default
-- and at most, now plus the TTL). A lapsed lease is never revived; the
-- expiry and the horizon only rise (an attempt the holder gave up on may
-- commit after a later one). The claim generation stays: a lease that
-- survived a failover keeps its row quarantined for the next claimer. The
-- conditions are on the row the UPDATE writes, which it locks first: a
-- claim or an eviction that changed it meanwhile is waited for, and the
-- conditions are tested again on the row it committed. The TTL is not
-- checked against the maximum: the claim's was, and the maximum only rises.
-- status: ok, or why nothing changed, read once the statements that
-- stopped it have committed: no_row, epoch_mismatch (row_epoch is the
-- row's: higher when taken over, lower when a failover lost the claim),
-- not_owner, released, evicted, lapsed.
CREATE OR REPLACE FUNCTION {t}_renew(node_id integer, owner text, epoch bigint, ttl_ms bigint, horizon_ms bigint DEFAULT NULL)
RETURNS TABLE (status text, expires_at timestamptz, until_ms bigint, now timestamptz, holder text, row_epoch bigint,
    end_reason text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_node    ALIAS FOR $1;
    a_owner   ALIAS FOR $2;
    a_epoch   ALIAS FOR $3;
    a_ttl     ALIAS FOR $4;
    a_horizon ALIAS FOR $5;
BEGIN
    IF a_ttl IS NULL OR a_ttl < 1 THEN
        RAISE EXCEPTION 'ttl_ms %: it must be a positive number of milliseconds', COALESCE(a_ttl::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    WITH q AS (
        SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms, set_config('synchronous_commit', 'on', true) AS durable
    ), renewed AS (
        UPDATE {t} AS t
        SET expires_at = GREATEST(t.expires_at, now() + a_ttl * interval '1 millisecond'),
            horizon_ms = GREATEST(t.horizon_ms, LEAST(a_horizon, q.now_ms + a_ttl))
        FROM q
        WHERE t.node_id = a_node AND t.owner = a_owner AND t.epoch = a_epoch AND t.expires_at >= now()
        RETURNING t.expires_at, t.horizon_ms
    )
    SELECT 'ok'::text, rn.expires_at, rn.horizon_ms, now(), a_owner, a_epoch, NULL::text FROM renewed AS rn;
    IF NOT FOUND THEN
        RETURN QUERY SELECT * FROM {t}_ended(a_node, a_owner, a_epoch);
    END IF;
END
$fn$;

-- {t}_ended says why a renewal or a release of node_id, owner, epoch
-- changed nothing: the row as it is now and the history's end of the
-- claim. It reads and writes nothing else, and takes no lock.
CREATE OR REPLACE FUNCTION {t}_ended(node_id integer, owner text, epoch bigint)
RETURNS TABLE (status text, expires_at timestamptz, until_ms bigint, now timestamptz, holder text, row_epoch bigint,
    end_reason text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_node  ALIAS FOR $1;
    a_owner ALIAS FOR $2;
    a_epoch ALIAS FOR $3;
BEGIN
    RETURN QUERY
    SELECT CASE WHEN t.epoch IS NULL THEN 'no_row'
            WHEN t.epoch <> a_epoch THEN 'epoch_mismatch'
            WHEN t.owner = '' AND x.reason = 'released' THEN 'released'
            WHEN t.owner = '' AND x.reason = 'expired' THEN 'lapsed'
            WHEN t.owner = '' THEN 'evicted'
            WHEN t.owner <> a_owner THEN 'not_owner'
            ELSE 'lapsed' END,
        NULL::timestamptz, NULL::bigint, now(), t.owner, t.epoch, x.reason
    FROM (SELECT 1) AS one
    LEFT JOIN {t} AS t ON t.node_id = a_node
    LEFT JOIN LATERAL (SELECT h.end_reason AS reason FROM {t}_history AS h WHERE h.node_id = a_node AND h.epoch = a_epoch) AS x ON true;
END
$fn$;

-- {t}_release frees the live lease node_id, owner, epoch for immediate
-- claim. The row keeps its epoch; its horizon becomes last_ms when given
-- (the latest millisecond stamped), and otherwise stays the one the last
-- renewal recorded; never below the horizon the claim stamped after (its
-- history row's from_ms), whatever last_ms says, so that no release lets
-- the next holder stamp where an earlier one did. It ends the claim's history row as released. status is
-- ok, or why nothing changed, as {t}_renew's: a retry tells its own
-- earlier release (released) from an operator's eviction (evicted).
CREATE OR REPLACE FUNCTION {t}_release(node_id integer, owner text, epoch bigint, last_ms bigint DEFAULT NULL)
RETURNS TABLE (status text, until_ms bigint, now timestamptz, holder text, row_epoch bigint, end_reason text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_node  ALIAS FOR $1;
    a_owner ALIAS FOR $2;
    a_epoch ALIAS FOR $3;
    a_last  ALIAS FOR $4;
BEGIN
    RETURN QUERY
    WITH q AS (
        SELECT set_config('synchronous_commit', 'on', true) AS durable
    ), released AS (
        UPDATE {t} AS t
        SET owner = '', expires_at = '-infinity',
            horizon_ms = GREATEST(COALESCE(a_last, t.horizon_ms),
                COALESCE((SELECT h.from_ms FROM {t}_history AS h WHERE h.node_id = t.node_id AND h.epoch = t.epoch), t.horizon_ms))
        FROM q
        WHERE t.node_id = a_node AND t.owner = a_owner AND t.epoch = a_epoch AND t.expires_at >= now()
        RETURNING t.node_id, t.epoch, t.horizon_ms, t.acquired_at, t.claim_generation
    ), ended AS (
        INSERT INTO {t}_history AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
        SELECT rl.node_id, rl.epoch, a_owner, COALESCE(rl.acquired_at, now()), 0, rl.claim_generation, now(), 'released', rl.horizon_ms
        FROM released AS rl
        ON CONFLICT (node_id, epoch) DO UPDATE
            SET ended_at = excluded.ended_at, end_reason = excluded.end_reason, horizon_ms = excluded.horizon_ms
    )
    SELECT 'ok'::text, rl.horizon_ms, now(), ''::text, a_epoch, 'released'::text FROM released AS rl;
    IF NOT FOUND THEN
        RETURN QUERY SELECT e.status, e.until_ms, e.now, e.holder, e.row_epoch, e.end_reason FROM {t}_ended(a_node, a_owner, a_epoch) AS e;
    END IF;
END
$fn$;

-- {t}_verify checks, inside the caller's transaction, that the lease
-- node_id, owner, epoch is held, and keeps it so until the transaction
-- ends: it takes a KEY SHARE lock on the row (a claim or an eviction waits
-- for the transaction), and bounds the transaction's idle time
-- (idle_in_transaction_session_timeout, for the transaction only) by the
-- lease's time left, so that a transaction left idle is ended before the
-- lease could lapse under it. status: ok, or no_row, epoch_mismatch,
-- not_owner, released, evicted, lapsed (as {t}_renew's).
CREATE OR REPLACE FUNCTION {t}_verify(node_id integer, owner text, epoch bigint)
RETURNS TABLE (status text, expires_at timestamptz, idle_timeout_ms bigint, holder text, row_epoch bigint, now timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_node  ALIAS FOR $1;
    a_owner ALIAS FOR $2;
    a_epoch ALIAS FOR $3;
    v_exp   timestamptz;
    v_left  bigint;
    v_idle  bigint;
BEGIN
    SELECT t.expires_at, GREATEST(1, floor(extract(epoch FROM t.expires_at - statement_timestamp()) * 1000))::bigint
    INTO v_exp, v_left
    FROM {t} AS t
    WHERE t.node_id = a_node AND t.owner = a_owner AND t.epoch = a_epoch AND t.expires_at >= statement_timestamp()
    FOR KEY SHARE;
    IF FOUND THEN
        v_idle := (extract(epoch FROM current_setting('idle_in_transaction_session_timeout')::interval) * 1000)::bigint;
        IF v_idle <= 0 OR v_idle > v_left THEN
            v_idle := v_left;
        END IF;
        PERFORM set_config('idle_in_transaction_session_timeout', v_idle::text, true);
        RETURN QUERY SELECT 'ok'::text, v_exp, v_idle, a_owner, a_epoch, statement_timestamp();
        RETURN;
    END IF;
    RETURN QUERY SELECT e.status, NULL::timestamptz, NULL::bigint, e.holder, e.row_epoch, statement_timestamp()
    FROM {t}_ended(a_node, a_owner, a_epoch) AS e;
END
$fn$;
