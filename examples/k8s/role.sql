-- The least-privilege role of "nodeid run" and "nodeid serve". As the
-- tables' owner, once:
--   nodeid init --range 0-1023 --grant orders_ids
-- makes the tables and their functions and grants the role what follows
-- (nodeid schema --grant orders_ids prints it, for a migration tool).
-- The role may run the lease functions and read the tables, and never
-- write them: the functions run as the tables' owner (docs/sql.md).
CREATE ROLE orders_ids LOGIN; -- set its password with \password orders_ids
GRANT EXECUTE ON FUNCTION snowflake_nodes_claim(text, bigint, bigint, integer, integer, integer) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_renew(integer, text, bigint, bigint, bigint) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_release(integer, text, bigint, bigint) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_verify(integer, text, bigint) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_mark() TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_standbys(text, text, text) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_created(text, bigint) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_raised(bigint, text, bigint) TO orders_ids;
GRANT EXECUTE ON FUNCTION snowflake_nodes_server() TO orders_ids;
GRANT SELECT ON snowflake_nodes, snowflake_nodes_history, snowflake_nodes_config TO orders_ids;
-- In a schema other than public, also: GRANT USAGE ON SCHEMA ids TO orders_ids;
