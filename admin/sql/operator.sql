-- The operator functions of the lease table {t}: an eviction, a restore's
-- declaration, the history's pruning, and the confirmations of a pending
-- creation or raise (with the mark and the standbys they wait on). Like
-- the client functions, each is SECURITY DEFINER with a pinned search_path;
-- EXECUTE is the owner's until granted (nodeid init --grant-operator, and
-- --grant for what a client's first use may need: the mark, the standbys
-- and the confirmations).

-- {t}_server is the server's identity as a mark names it on a watched
-- table: its system identifier, WAL timeline and start; '' on a trusted
-- one (sync, on a server that refuses the WAL functions).
CREATE OR REPLACE FUNCTION {t}_server()
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF NOT EXISTS (SELECT FROM {t}_config AS c WHERE c.replication = 'async' OR c.server_id IS NOT NULL) THEN
        RETURN '';
    END IF;
    RETURN (SELECT system_identifier FROM pg_control_system())::text || '/'
        || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint::text || '/'
        || (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint::text;
END
$fn$;

-- {t}_mark reads the pending raise of the maximum TTL and the pending
-- creation, with a WAL position that the commit of what it read precedes
-- (the next record's), the server it was read on, and the physical
-- replication slots (read first: each as name:pid, and a '>' after one
-- already past the position). It takes a transaction ID and commits
-- durably, so that its own commit record, after the position, is flushed
-- before the answer and the standbys can replay past the position even on
-- an idle primary. docs/protocol.md gives the reasons for each part.
CREATE OR REPLACE FUNCTION {t}_mark()
RETURNS TABLE (raise_ms bigint, creation_pending boolean, lsn text, server text, slots text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_keys     text[];
    v_restarts pg_lsn[];
    v_at       pg_lsn;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true), pg_current_xact_id();
    SELECT COALESCE(array_agg(s.slot_name::text || ':' || COALESCE(s.active_pid::text, '') ORDER BY s.slot_name), '{}'),
        COALESCE(array_agg(s.restart_lsn ORDER BY s.slot_name), '{}')
    INTO v_keys, v_restarts
    FROM pg_replication_slots AS s WHERE s.slot_type = 'physical';
    v_at := pg_current_wal_insert_lsn();
    RETURN QUERY
    SELECT COALESCE(c.raise_ttl_ms, 0), COALESCE(c.creation_pending, false), v_at::text, {t}_server(),
        (SELECT COALESCE(string_agg(u.k || CASE WHEN u.r > v_at THEN '>' ELSE '' END, ','), '')
         FROM unnest(v_keys, v_restarts) AS u (k, r))
    FROM {t}_config AS c;
END
$fn$;

-- {t}_standbys lists the standbys streaming now, with how far each has
-- replayed, and the physical replication slots, with how far each standby
-- has flushed, judged against the mark lsn, slots and server that
-- {t}_mark read (lsn NULL: the position now). It reads them as the
-- function's owner, whose view of pg_stat_replication decides what is
-- hidden. WAL clients that will never be promoted (a base backup's sender,
-- pg_receivewal, a logical decoding client) and their slots are left out.
-- Every row, and one row with no standby when there is none, names the
-- server the statement ran on ('' on a standby, or when server is '').
CREATE OR REPLACE FUNCTION {t}_standbys(lsn text, slots text, server text)
RETURNS TABLE (on_server text, name text, addr text, replayed text, caught boolean, hidden boolean, fresh boolean,
    foreign_history boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_lsn    ALIAS FOR $1;
    a_slots  ALIAS FOR $2;
    a_server ALIAS FOR $3;
    v_server text;
BEGIN
    v_server := CASE WHEN a_server = '' OR pg_is_in_recovery() THEN '' ELSE {t}_server() END;
    RETURN QUERY
    WITH clients AS (
        SELECT r.pid FROM pg_stat_replication AS r
        WHERE r.state = 'backup' OR r.write_lsn IS NOT NULL AND r.replay_lsn IS NULL
            OR EXISTS (SELECT FROM pg_replication_slots AS l WHERE l.slot_type = 'logical' AND l.active_pid = r.pid)
    )
    SELECT v_server, x.name, x.addr, x.replayed, x.caught, x.hidden, x.fresh, x.other
    FROM (SELECT 1) AS me
    LEFT JOIN (
        SELECT COALESCE(r.application_name, '') AS name, COALESCE(host(r.client_addr), '') AS addr,
            COALESCE(r.replay_lsn::text, '') AS replayed,
            COALESCE(r.replay_lsn >= a_lsn::pg_lsn AND r.sent_lsn >= a_lsn::pg_lsn, false) AS caught,
            r.replay_lsn IS NULL AND NOT pg_has_role('pg_read_all_stats', 'USAGE') AS hidden, false AS fresh,
            COALESCE(r.replay_lsn >= a_lsn::pg_lsn AND NOT r.sent_lsn >= a_lsn::pg_lsn, false) AS other
        FROM pg_stat_replication AS r
        WHERE (r.replay_lsn IS NOT NULL OR pg_has_role('pg_read_all_stats', 'USAGE')
            OR NOT EXISTS (SELECT FROM pg_replication_slots AS s WHERE s.slot_type = 'physical' AND s.active_pid = r.pid))
          AND r.pid NOT IN (SELECT clients.pid FROM clients)
        UNION ALL
        SELECT 'slot ' || s.slot_name, '', COALESCE(s.restart_lsn::text, ''),
            COALESCE(s.restart_lsn >= a_lsn::pg_lsn, false) AND s.active_pid IS NOT NULL AND k.key = ANY (m.keys), false,
            NOT s.slot_name::text = ANY (m.names) OR s.active_pid IS NOT NULL AND NOT k.key = ANY (m.seen),
            k.key = ANY (m.ahead)
        FROM pg_replication_slots AS s,
            LATERAL (SELECT s.slot_name::text || ':' || COALESCE(s.active_pid::text, '') AS key) AS k,
            (SELECT COALESCE(array_agg(x) FILTER (WHERE x NOT LIKE '%>'), '{}') AS keys,
                COALESCE(array_agg(rtrim(x, '>')), '{}') AS seen,
                COALESCE(array_agg(rtrim(x, '>')) FILTER (WHERE x LIKE '%>'), '{}') AS ahead,
                COALESCE(array_agg(split_part(x, ':', 1)), '{}') AS names
             FROM unnest(string_to_array(a_slots, ',')) AS x) AS m
        WHERE s.slot_type = 'physical' AND (s.active_pid IS NULL OR s.active_pid NOT IN (SELECT clients.pid FROM clients))
    ) AS x ON true
    ORDER BY 2, 3;
END
$fn$;

-- {t}_created ends the table's pending creation, only on the server its
-- mark was read on (server, as {t}_mark named it): a WAL position means
-- nothing on another. It answers whether it confirmed, and whether the
-- server is that one. It waits at most lock_timeout_ms for the row's lock.
CREATE OR REPLACE FUNCTION {t}_created(server text, lock_timeout_ms bigint DEFAULT 1000)
RETURNS TABLE (confirmed boolean, same_server boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_server  ALIAS FOR $1;
    a_timeout ALIAS FOR $2;
    v_same    boolean;
    v_done    boolean;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true), set_config('lock_timeout', a_timeout || 'ms', true);
    v_same := {t}_server() = a_server;
    UPDATE {t}_config AS c SET creation_pending = NULL WHERE v_same AND c.creation_pending;
    v_done := FOUND;
    RETURN QUERY SELECT v_done, v_same;
END
$fn$;

-- {t}_raised confirms the table's pending raise of its maximum TTL, up to
-- raise_ms, the raise the standbys were seen to have ({t}_mark's): a later
-- raise, which they may lack, stays pending; and only on the server the
-- mark was read on. It answers the maximum it made (NULL when it changed
-- nothing) and whether the server is that one.
CREATE OR REPLACE FUNCTION {t}_raised(raise_ms bigint, server text, lock_timeout_ms bigint DEFAULT 1000)
RETURNS TABLE (max_ttl_ms bigint, same_server boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_raise   ALIAS FOR $1;
    a_server  ALIAS FOR $2;
    a_timeout ALIAS FOR $3;
    v_same    boolean;
    v_max     bigint;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true), set_config('lock_timeout', a_timeout || 'ms', true);
    v_same := {t}_server() = a_server;
    UPDATE {t}_config AS c SET max_ttl_ms = LEAST(c.raise_ttl_ms, a_raise),
        raise_ttl_ms = CASE WHEN c.raise_ttl_ms > a_raise THEN c.raise_ttl_ms END
    WHERE v_same AND c.raise_ttl_ms IS NOT NULL AND LEAST(c.raise_ttl_ms, a_raise) > c.max_ttl_ms
    RETURNING c.max_ttl_ms INTO v_max;
    RETURN QUERY SELECT v_max, v_same;
END
$fn$;

-- {t}_restored declares a restore: a new generation from now, every row
-- quarantined for the longest lease the old history may hold (the largest
-- of max_ttl_ms, the table's maximum and a pending raise) and a tenth, or
-- until the quarantine still running (or kept across a move) ends, if
-- later; the next claim of each row takes an epoch of a new era. On a
-- watched table it records the server's identity, so that the next claim
-- starts no other generation. It answers the generation and the end of its
-- quarantine, in unix ms.
CREATE OR REPLACE FUNCTION {t}_restored(max_ttl_ms bigint, lock_timeout_ms bigint DEFAULT 1000)
RETURNS TABLE (generation bigint, quarantine_until_ms bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_ttl     ALIAS FOR $1;
    a_timeout ALIAS FOR $2;
    v_watched boolean;
    v_sid     bigint;
    v_tli     bigint;
BEGIN
    IF a_ttl IS NULL OR a_ttl < 1 THEN
        RAISE EXCEPTION 'max_ttl_ms %: it must be a positive number of milliseconds', COALESCE(a_ttl::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    PERFORM set_config('synchronous_commit', 'on', true), set_config('lock_timeout', a_timeout || 'ms', true);
    SELECT c.replication = 'async' OR c.server_id IS NOT NULL INTO v_watched FROM {t}_config AS c;
    IF v_watched THEN
        SELECT system_identifier INTO v_sid FROM pg_control_system();
        v_tli := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint;
    END IF;
    RETURN QUERY
    UPDATE {t}_config AS c SET generation = c.generation + 1, generation_at = now(),
        quarantine_until_ms = GREATEST(c.quarantine_until_ms, c.moved_quarantine_until_ms,
            (extract(epoch FROM now()) * 1000)::bigint + GREATEST(a_ttl, c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10),
        moved_quarantine_until_ms = NULL,
        server_id = CASE WHEN v_watched THEN v_sid ELSE c.server_id END,
        wal_timeline = CASE WHEN v_watched THEN v_tli ELSE c.wal_timeline END
    RETURNING c.generation, c.quarantine_until_ms;
END
$fn$;

-- {t}_evict ends the lease of a stuck holder, only for the epoch given, so
-- that it never hits a newer holder: the holder's next renewal fails
-- (evicted). The row keeps its expiry, horizon and claim generation: it
-- becomes claimable once the evicted lease has expired by the database's
-- clock and its horizon has passed (docs/protocol.md: evicting at the
-- horizon). It is durable when it returns, and waits at most
-- lock_timeout_ms for the row's lock, so that it never queues the holder's
-- renewals behind it. status: ok, or not_held (no held row of that epoch).
CREATE OR REPLACE FUNCTION {t}_evict(node_id integer, epoch bigint, lock_timeout_ms bigint DEFAULT 1000)
RETURNS TABLE (status text, kept_horizon_ms bigint, expires_at timestamptz, now timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    a_node    ALIAS FOR $1;
    a_epoch   ALIAS FOR $2;
    a_timeout ALIAS FOR $3;
    old       record;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true), set_config('lock_timeout', a_timeout || 'ms', true);
    SELECT t.owner, t.expires_at, t.horizon_ms, t.acquired_at, t.claim_generation INTO old
    FROM {t} AS t WHERE t.node_id = a_node AND t.epoch = a_epoch AND t.owner <> ''
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_held'::text, 0::bigint, NULL::timestamptz, now();
        RETURN;
    END IF;
    UPDATE {t} AS t SET owner = '' WHERE t.node_id = a_node;
    INSERT INTO {t}_history AS h (node_id, epoch, owner, acquired_at, from_ms, generation, ended_at, end_reason, horizon_ms)
    VALUES (a_node, a_epoch, old.owner, COALESCE(old.acquired_at, now()), 0, old.claim_generation, LEAST(now(), old.expires_at),
        CASE WHEN old.expires_at < now() THEN 'expired' ELSE 'evicted' END, old.horizon_ms)
    ON CONFLICT (node_id, epoch) DO UPDATE
        SET ended_at = excluded.ended_at, end_reason = excluded.end_reason, horizon_ms = excluded.horizon_ms
        WHERE h.ended_at IS NULL;
    RETURN QUERY SELECT 'ok'::text, old.horizon_ms, old.expires_at, now();
END
$fn$;

-- {t}_prune deletes the history of claims that ended more than
-- older_than_ms ago (claims still open are kept), or with dry_run counts
-- them, and answers how many.
CREATE OR REPLACE FUNCTION {t}_prune(older_than_ms bigint, dry_run boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    a_older ALIAS FOR $1;
    a_dry   ALIAS FOR $2;
    n       bigint;
BEGIN
    IF a_older IS NULL OR a_older < 0 THEN
        RAISE EXCEPTION 'older_than_ms %: it must be 0 or more milliseconds', COALESCE(a_older::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF a_dry THEN
        SELECT count(*) INTO n FROM {t}_history AS h WHERE h.ended_at IS NOT NULL AND h.ended_at < now() - a_older * interval '1 millisecond';
    ELSE
        DELETE FROM {t}_history AS h WHERE h.ended_at IS NOT NULL AND h.ended_at < now() - a_older * interval '1 millisecond';
        GET DIAGNOSTICS n = ROW_COUNT;
    END IF;
    RETURN n;
END
$fn$;
