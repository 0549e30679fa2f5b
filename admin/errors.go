package admin

import (
	"fmt"

	"github.com/jackc/pgerrcode"
)

// wrapErr wraps a statement's error with the operation and the table; the
// error's message names the fix for the failures a deployment can fix.
func (s *Store) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &StatementError{Op: op, Table: s.cfg.Table, Err: err}
}

// privilegeError reports a privilege CheckSchema found missing; it carries
// SQLSTATE 42501 like the server's own error.
type privilegeError struct{ kind, table, privilege string }

func (e *privilegeError) Error() string {
	return fmt.Sprintf("permission denied: the role lacks %s on %s %s (SQLSTATE 42501)", e.privilege, e.kind, e.table)
}

// SQLState lets SQLSTATE and Fatal classify the error like the server's.
func (e *privilegeError) SQLState() string { return pgerrcode.InsufficientPrivilege }

// missingError reports a table CheckSchema found missing; it carries
// SQLSTATE 42P01 like the server's own error.
type missingError struct{ table string }

func (e *missingError) Error() string {
	return fmt.Sprintf("table %s does not exist (SQLSTATE 42P01)", e.table)
}

// SQLState lets SQLSTATE and Fatal classify the error like the server's.
func (e *missingError) SQLState() string { return pgerrcode.UndefinedTable }

// unloggedError reports lease tables that are UNLOGGED (or temporary),
// which a crash empties: every epoch and horizon would start again from
// zero. It carries SQLSTATE 55000 (object_not_in_prerequisite_state) and
// is Fatal.
type unloggedError struct{ tables string }

func (e *unloggedError) Error() string {
	return fmt.Sprintf("%s is UNLOGGED: a crash of the server empties it, resetting every epoch and horizon, so that node IDs would be handed out again while their holders still mint; make it logged with ALTER TABLE ... SET LOGGED",
		e.tables)
}

// SQLState lets SQLSTATE classify the error.
func (e *unloggedError) SQLState() string { return pgerrcode.ObjectNotInPrerequisiteState }

// Fatal marks the error as a deployment problem.
func (e *unloggedError) Fatal() bool { return true }

// WALError reports a server that refuses the functions asynchronous
// replication needs to tell its identity and timeline.
type WALError struct{ err error }

func (e *WALError) Error() string {
	return fmt.Sprintf("the server refuses %s, which a table that records asynchronous replication needs to detect failovers, moves and upgrades: %v; "+
		"allow the role to execute them, or, if the database's failovers never lose an acknowledged commit (synchronous replication, shared storage, a managed service such as Aurora), record synchronous replication (postgres.Schema.Replication = postgres.Sync, nodeid init --replication sync)",
		WALFunctions, e.err)
}

// Unwrap returns the server's error.
func (e *WALError) Unwrap() error { return e.err }

// Fatal marks the error as a deployment problem.
func (e *WALError) Fatal() bool { return true }
