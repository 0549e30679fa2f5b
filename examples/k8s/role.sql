-- The least-privilege role of "nodeid run" and "nodeid serve". As the
-- tables' owner, once: nodeid init --range 0-1023 (it makes the tables);
-- then:
CREATE ROLE orders_ids LOGIN; -- set its password with \password orders_ids
GRANT SELECT, UPDATE ON snowflake_nodes, snowflake_nodes_config TO orders_ids;
GRANT SELECT, INSERT, UPDATE ON snowflake_nodes_history TO orders_ids;
-- In a schema other than public, also: GRANT USAGE ON SCHEMA ids TO orders_ids;
