package postgres

import (
	"github.com/nodeid/nodeid/admin"
)

// Defaults and limits of a lease table.
const (
	// DefaultTable is the lease table used when none is configured.
	DefaultTable = admin.DefaultTable
	// DefaultMinNode and DefaultMaxNode bound the default node range: the
	// node IDs of the default Snowflake layout's 10 node bits.
	DefaultMinNode = admin.DefaultMinNode
	DefaultMaxNode = admin.DefaultMaxNode
	// MaxNode is the largest node ID a table may hold (20 node bits).
	MaxNode = admin.MaxNode
	// DefaultMaxTTL is the maximum TTL a table records when none is given.
	DefaultMaxTTL = admin.DefaultMaxTTL
)

// ErrUnconfigured matches the error of a lease table that has no recorded
// configuration: one made by a version of nodeid that did not record it.
// Apply the DDL of Schema.SQL as the table's owner to record it.
var ErrUnconfigured = admin.ErrUnconfigured

// StatementError is the error of a statement on the lease tables. It names
// the operation and the table, keeps the driver's error for errors.Is and
// errors.As, and its message adds advice where the failure is one a
// deployment can fix.
type StatementError = admin.StatementError

// SQLSTATE returns the PostgreSQL error code carried by err, or "".
func SQLSTATE(err error) string { return admin.SQLState(err) }

// Fatal reports whether err describes a deployment problem that will not go
// away without intervention: a missing table or column, a column of the
// wrong type, a missing privilege, a failed login, a missing database, a
// value the table's checks refuse, a table without a recorded configuration
// (ErrUnconfigured), or a connection pooler that rejects named prepared
// statements. It is the signal worth alerting on.
func Fatal(err error) bool { return admin.Fatal(err) }

// Retryable reports whether err is a transient condition expected to clear
// on its own: a dropped or refused connection, a server shutting down or
// starting, a serialization failure or deadlock, a statement that timed out
// or was cancelled, too many connections, a read-only server or a standby
// (a primary failing over). Retrying never implies that a lease is still
// held.
func Retryable(err error) bool { return admin.Retryable(err) }

// ValidateTable checks a lease table's name: a lowercase SQL identifier,
// optionally schema-qualified, that is not a reserved word and leaves room
// for the suffixes of the history table and the indexes (at most 50 bytes
// without the schema). Names that would need quoting are refused, never
// quoted.
func ValidateTable(name string) error { return admin.ValidateTable(name) }

// HistoryTable returns the name of the history table of lease table t.
func HistoryTable(t string) string { return admin.HistoryTable(t) }

// ConfigTable returns the name of the configuration table of lease table t.
func ConfigTable(t string) string { return admin.ConfigTable(t) }

// VerifySQL returns the statement of nodeid.Lease.Verify for lease table
// table, for programs in other languages (docs/verify.md): a call of the
// table's function T_verify with $1 the node ID, $2 the owner and $3 the
// epoch. Its one row has held (boolean), status ('ok' when held, else why
// not: epoch_mismatch, not_owner, lapsed, released, evicted or no_row),
// expires_at and idle_timeout_ms (when held), holder and row_epoch (the
// row's) and now (the statement's timestamp). Run it first in the
// transaction whose writes it fences, and roll back unless held is true.
func VerifySQL(table string) (string, error) {
	if err := ValidateTable(table); err != nil {
		return "", err
	}
	return admin.VerifySQL(admin.Config{Table: table}), nil
}

// GrantSQL returns the statements that give role what a client of lease
// table table needs (nodeid init --grant): USAGE on the table's schema,
// EXECUTE on its client functions (claim, renew, release, verify, and the
// confirmations a first use may make) and SELECT on its three tables;
// never INSERT, UPDATE, DELETE or TRUNCATE. Run them as the tables' owner.
func GrantSQL(table, role string) (string, error) { return admin.GrantSQL(table, role, false) }

// GrantOperatorSQL returns GrantSQL's statements and EXECUTE on the
// operator functions too: evict, the restore's declaration, and pruning
// (nodeid init --grant-operator).
func GrantOperatorSQL(table, role string) (string, error) { return admin.GrantSQL(table, role, true) }
