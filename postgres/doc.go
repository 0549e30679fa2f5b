// Package postgres holds what an application calls of nodeid's PostgreSQL
// side directly: the DDL of the lease tables, the statement that fences
// writes in other languages, the validation of table names, and the
// classification of the errors the lease statements return. The leases
// themselves are taken through package nodeid's Registry. It is a thin
// front: the SQL lives in one place, beside the statements it shares its
// rules with.
//
// # Schema
//
// Schema is the lease tables' configuration as a validated value, and its
// SQL method returns their DDL: the lease table, its history (HistoryTable)
// and its configuration (ConfigTable), the node range and the maximum lease
// TTL recorded, and the rows of the range pre-filled; the same statements as
// "nodeid init", for a migration tool (Flyway, Liquibase, golang-migrate,
// goose) where the application's role may not create tables. Every field is
// validated and no SQL is emitted for a value that fails. The DDL is
// idempotent: applied again it keeps every epoch and horizon, and with a
// wider range or a longer maximum TTL it widens or raises what the table
// records, never the reverse. Apply it as the tables' owner, on the primary;
// then grant the application's role SELECT and UPDATE on the lease and
// configuration tables and SELECT, INSERT and UPDATE on the history table.
//
//	s := postgres.DefaultSchema()
//	s.MinNode, s.MaxNode, s.MaxTTL = 0, 255, 30*time.Second
//	ddl, err := s.SQL()
//	if err != nil {
//		return err // names the bad value and the rule
//	}
//	// write ddl into a migration, or: _, err = ownerDB.ExecContext(ctx, ddl)
//
// VerifySQL returns the statement of nodeid.Lease.Verify, for programs in
// other languages that fence their writes with a lease.
//
// # Names
//
// ValidateTable accepts a lowercase SQL identifier, optionally qualified by
// a schema, that is not a reserved word and leaves room for the suffixes of
// the history table and the indexes (at most 50 bytes). Table names are
// never quoted, since a table name cannot be a bind parameter: anything that
// would need quoting is refused with an error naming the character and the
// rule.
//
// # Errors
//
// Fatal reports a deployment problem that will not go away by itself (a
// missing table, column or privilege, a failed login, a table without a
// recorded configuration, a pooler that rejects named prepared statements):
// the error to alert on and to fail a start-up check with. Retryable reports
// a transient one (a lost or refused connection, a server shutting down or
// failing over, a serialization failure, a timeout). Neither says anything
// of whether a lease is still held: the lease's Context (or Done channel)
// does. A StatementError names the operation and the table, wraps the
// driver's error for errors.Is and errors.As, and its message adds advice
// where the deployment can fix the failure; SQLSTATE reads the PostgreSQL
// error code of any error.
package postgres
