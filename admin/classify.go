package admin

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnconfigured matches the error of a lease table that has no recorded
// configuration: one made by a version of nodeid that did not record it.
// Apply the DDL of Schema.SQL as the table's owner to record it.
var ErrUnconfigured = errors.New("the table has no recorded configuration")

// SQLSTATE returns the PostgreSQL error code carried by err, or "".
func SQLSTATE(err error) string { return SQLState(err) }

// Fatal reports whether err describes a deployment problem that will not go
// away without intervention: a missing table or column, a column of the
// wrong type, a missing privilege, a failed login, a missing database, a
// value the table's checks refuse, a table without a recorded configuration
// (ErrUnconfigured), or a connection pooler that rejects named prepared
// statements. It is the signal worth alerting on.
func Fatal(err error) bool {
	if err == nil {
		return false
	}
	if Pooler(err) || errors.Is(err, ErrUnconfigured) {
		return true
	}
	var marked interface{ Fatal() bool }
	if errors.As(err, &marked) {
		return marked.Fatal()
	}
	switch SQLState(err) {
	case pgerrcode.UndefinedTable,
		pgerrcode.UndefinedColumn,
		pgerrcode.UndefinedFunction,
		pgerrcode.DatatypeMismatch,
		pgerrcode.InsufficientPrivilege,
		pgerrcode.InvalidAuthorizationSpecification,
		pgerrcode.InvalidPassword,
		pgerrcode.InvalidCatalogName,
		pgerrcode.InvalidSchemaName,
		pgerrcode.CheckViolation: // a value the table refuses, such as an owner too long
		return true
	}
	return false
}

// Retryable reports whether err is a transient condition expected to clear
// on its own: a dropped or refused connection, a server shutting down or
// starting, a serialization failure or deadlock, a statement that timed out
// or was cancelled, too many connections, a read-only server or a standby
// (a primary failing over). Retrying never implies that a lease is still held.
func Retryable(err error) bool {
	if err == nil || Fatal(err) {
		return false
	}
	var marked interface{ Retryable() bool }
	if errors.As(err, &marked) {
		return marked.Retryable()
	}
	if code := SQLState(err); code != "" {
		switch {
		case pgerrcode.IsConnectionException(code),
			pgerrcode.IsInsufficientResources(code),
			code == pgerrcode.AdminShutdown,
			code == pgerrcode.CrashShutdown,
			code == pgerrcode.CannotConnectNow,
			code == pgerrcode.DatabaseDropped,
			code == pgerrcode.IdleSessionTimeout,
			code == pgerrcode.SerializationFailure,
			code == pgerrcode.DeadlockDetected,
			code == pgerrcode.LockNotAvailable,
			code == pgerrcode.QueryCanceled, // statement_timeout
			code == pgerrcode.ReadOnlySQLTransaction:
			return true
		case code == pgerrcode.ObjectNotInPrerequisiteState && strings.Contains(err.Error(), "recovery is in progress"):
			return true // a standby, during a failover
		}
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		isConnectError(err)
}

func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// StatementError is the error of a statement on the lease tables. It names
// the operation and the table, keeps the driver's error for errors.Is/As,
// and adds advice where the failure is one a deployment can fix.
type StatementError struct {
	Op    string // "claim", "renew", ...
	Table string // the lease table
	Err   error
}

// Error names the operation, the table and the driver's error, and adds
// advice for a failure a deployment can fix: the table's rule and the part
// of the schema (Schema.SQL) or the DSN that fixes it.
func (e *StatementError) Error() string {
	msg := fmt.Sprintf("nodeid: %s on table %s: %v", e.Op, e.Table, e.Err)
	if h := e.hint(); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// Unwrap returns the driver's error.
func (e *StatementError) Unwrap() error { return e.Err }

// hint returns advice for a failure a deployment can fix, or "".
func (e *StatementError) hint() string {
	switch code := SQLState(e.Err); {
	case code == pgerrcode.UndefinedTable:
		return "the lease tables do not exist: create them with nodeid init, or the DDL of postgres.Schema.SQL applied by their owner (or let nodeid.WithCreateTable create them), or check the table name"
	case code == pgerrcode.UndefinedFunction && strings.Contains(e.Err.Error(), e.Table+"_"):
		return "the table's functions are missing (it was made by an earlier version of nodeid): bring it up to date with nodeid init, or the DDL of postgres.Schema.SQL applied by its owner"
	case code == pgerrcode.UndefinedColumn || code == pgerrcode.DatatypeMismatch:
		return "the table does not have the expected columns: bring it up to date with nodeid init, or the DDL of postgres.Schema.SQL applied by its owner"
	case code == pgerrcode.InsufficientPrivilege:
		if d, ok := Denied(e); ok {
			_, bare, qualified := strings.Cut(e.Table, ".")
			if !qualified {
				bare = e.Table
			}
			if d.Kind == "function" && strings.HasPrefix(d.Object, bare+"_") {
				return d.need() + ": nodeid init --grant ROLE grants a client what it needs (postgres.GrantSQL)"
			}
			return d.need()
		}
		// A message this package cannot read (the server's messages in
		// another language): what the lease statements need, all of it.
		return fmt.Sprintf("the role needs EXECUTE on the functions of %s and SELECT on its tables: grant them with nodeid init --grant ROLE (or postgres.GrantSQL)",
			e.Table)
	case code == pgerrcode.ReadOnlySQLTransaction:
		return "the server is read-only: point the DSN at the primary"
	case Pooler(e.Err):
		return PoolerHint
	}
	return ""
}

// Denial is what a permission error (SQLSTATE 42501) says was refused:
// the object the server named, and what the failed statement needs on it.
type Denial struct {
	// Kind is the kind of object as the server names it: "table",
	// "function", "schema", ...
	Kind string
	// Object is the object's name: a lease table's as the Store names it,
	// schema-qualified if it is ("ids.nodes_history"); a function's with
	// its parentheses ("pg_control_system()"); else as the server wrote
	// it.
	Object string
	// Privileges are what the failed statement needs on the object
	// ("SELECT", "UPDATE"; "EXECUTE" on a function; "USAGE" or "CREATE" on
	// a schema), in the order GRANT lists them; nil when not known.
	Privileges []string
	// Owner is set when the statement must run as the object's owner
	// (the DDL that creates or alters the lease tables).
	Owner bool
}

// String says what the role needs: "SELECT and UPDATE on table
// ids.nodes", "EXECUTE on function pg_control_system()", "ownership of
// table ids.nodes", or "a privilege on table x" when not known.
func (d Denial) String() string {
	on := d.Kind + " " + d.Object
	switch {
	case d.Owner:
		return "ownership of " + on
	case len(d.Privileges) == 0:
		return "a privilege on " + on
	}
	return JoinAnd(d.Privileges) + " on " + on
}

// need is the hint of a StatementError for d.
func (d Denial) need() string {
	if d.Owner {
		return "it must run as the owner of " + d.Kind + " " + d.Object
	}
	return "the role needs " + d.String()
}

// JoinAnd joins words as a sentence lists them: "a", "a and b", "a, b and
// c".
func JoinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// deniedMessage matches PostgreSQL's messages of a refused privilege
// ("permission denied for table nodes", "... for function
// pg_control_system", "... for schema ids") and of a statement only the
// owner may run ("must be owner of table nodes"): the kind of object and
// its name, unqualified. The server sets no field of the error for the
// object (pgconn.PgError's SchemaName and TableName are empty): its
// message is the one place that names it.
var deniedMessage = regexp.MustCompile(`^(permission denied for|must be owner of) (table|view|materialized view|foreign table|sequence|function|procedure|routine|schema|database|type|language|large object|tablespace) (.+)$`)

// opPrivileges are the privileges each read of the Store needs on the
// lease table ('t'), its history ('h') and its configuration ('c'), by the
// operation a StatementError names. Every write is a call of one of the
// table's functions, which needs EXECUTE on it and nothing on the tables.
var opPrivileges = map[string]map[byte][]string{
	"list":               {'t': {"SELECT"}, 'c': {"SELECT"}},
	"history":            {'t': {"SELECT"}, 'h': {"SELECT"}},
	"who":                {'t': {"SELECT"}, 'h': {"SELECT"}},
	"read configuration": {'c': {"SELECT"}},
	"check schema":       {'t': {"SELECT"}, 'h': {"SELECT"}, 'c': {"SELECT"}},
}

// ddlOps are the operations that run the DDL, which only the tables' owner
// (or, for new tables, a role with CREATE on their schema) may run.
var ddlOps = map[string]bool{"create": true, "apply the schema": true}

// Denied returns what the permission error in err refused, and whether err
// holds one whose object it can tell. The privileges are those the failed
// statement needs on that object, when err is a StatementError of an
// operation this package knows: on a lease table, those of the operation;
// EXECUTE on a function; USAGE on a schema (CREATE, for the DDL).
func Denied(err error) (Denial, bool) {
	var (
		pve *privilegeError
		se  *StatementError
		pe  *pgconn.PgError
	)
	if errors.As(err, &pve) { // CheckSchema's: it knows the very privilege
		return Denial{Kind: pve.kind, Object: pve.table, Privileges: []string{pve.privilege}}, true
	}
	if !errors.As(err, &pe) || pe.Code != pgerrcode.InsufficientPrivilege {
		return Denial{}, false
	}
	m := deniedMessage.FindStringSubmatch(pe.Message)
	if m == nil {
		return Denial{}, false
	}
	d := Denial{Kind: m[2], Object: m[3], Owner: m[1] == "must be owner of"}
	if pe.TableName != "" { // should a server name it there, take it whole
		d.Object = pe.TableName
		if pe.SchemaName != "" {
			d.Object = pe.SchemaName + "." + pe.TableName
		}
	}
	errors.As(err, &se)
	ddl := se != nil && ddlOps[se.Op]
	switch d.Kind {
	case "function", "procedure", "routine":
		d.Object += "()"
		d.Privileges = []string{"EXECUTE"}
	case "schema":
		d.Privileges = []string{"USAGE"}
		if ddl {
			d.Privileges = []string{"USAGE", "CREATE"}
		}
	case "table":
		if se == nil {
			break
		}
		var which byte
		for _, t := range []struct {
			role byte
			name string
		}{{'t', se.Table}, {'h', HistoryTable(se.Table)}, {'c', ConfigTable(se.Table)}} {
			if d.Object == t.name || d.Object == unqualified(t.name) {
				which, d.Object = t.role, t.name
			}
		}
		switch {
		case which == 0:
		case ddl:
			d.Owner = true
		default:
			d.Privileges = opPrivileges[se.Op][which]
		}
	}
	return d, true
}

// unqualified returns a table's name without its schema.
func unqualified(table string) string {
	if _, name, ok := strings.Cut(table, "."); ok {
		return name
	}
	return table
}
