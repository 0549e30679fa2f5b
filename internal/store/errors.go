package store

import (
	"fmt"

	"github.com/nodeid/nodeid/postgres"
)

// wrapErr wraps a statement's error with the operation and the table; the
// error's Hint names the fix for the failures a deployment can fix.
func (s *Store) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &postgres.StatementError{Op: op, Table: s.cfg.Table, Err: err}
}

// privilegeError reports a privilege CheckSchema found missing; it carries
// SQLSTATE 42501 like the server's own error.
type privilegeError struct{ table, privilege string }

func (e *privilegeError) Error() string {
	return fmt.Sprintf("permission denied: the role lacks %s on table %s (SQLSTATE 42501)", e.privilege, e.table)
}

// SQLState lets SQLSTATE and Fatal classify the error like the server's.
func (e *privilegeError) SQLState() string { return "42501" }

// missingError reports a table CheckSchema found missing; it carries
// SQLSTATE 42P01 like the server's own error.
type missingError struct{ table string }

func (e *missingError) Error() string {
	return fmt.Sprintf("table %s does not exist (SQLSTATE 42P01)", e.table)
}

// SQLState lets SQLSTATE and Fatal classify the error like the server's.
func (e *missingError) SQLState() string { return "42P01" }
