// Package admin is the Go door to a lease table's SQL functions (see
// docs/sql.md): the claim, renewal, release and verify a Registry calls, and
// what an operator's tools call (init, list and watch, evict, history and
// who, prune, the declarations after a move or a restore). The nodeid
// command uses it; most programs need only package nodeid.
//
// Every call is one statement with no session state, so it behaves the same
// directly and through PgBouncer in transaction mode (use an exec mode that
// does not name prepared statements there: default_query_exec_mode=exec).
// The caller opens the *sql.DB, normally with github.com/jackc/pgx/v5/stdlib.
package admin
