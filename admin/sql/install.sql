-- After the functions of {t} are (re)made: each runs with the search_path
-- of the table's schema, then pg_temp (never a schema a client may write
-- to, and no temporary table can stand in for the lease tables), and no
-- role but the owner may run one until granted (nodeid init --grant).
DO $install$
DECLARE
    s text := (SELECT n.nspname FROM pg_class AS k JOIN pg_namespace AS n ON n.oid = k.relnamespace WHERE k.oid = '{t}'::regclass);
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        '{t}_claim(text, bigint, bigint, integer, integer, integer)', '{t}_renew(integer, text, bigint, bigint, bigint)',
        '{t}_ended(integer, text, bigint)', '{t}_release(integer, text, bigint, bigint)', '{t}_verify(integer, text, bigint)',
        '{t}_server()', '{t}_mark()', '{t}_standbys(text, text, text)', '{t}_created(text, bigint)',
        '{t}_raised(bigint, text, bigint)', '{t}_restored(bigint, bigint)', '{t}_evict(integer, bigint, bigint)',
        '{t}_prune(bigint, boolean)']::regprocedure[]
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, s);
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$install$;
