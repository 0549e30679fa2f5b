package cli

import (
	"errors"
	"fmt"

	"github.com/nodeid/nodeid"
)

// Exit codes of the command. "nodeid run" exits with its command's code
// instead, once the command has started, unless it stopped the command
// because the lease ended (ExitLeaseLost).
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // the command failed (database error, declined, not found)
	ExitUsage    = 2 // bad flags, arguments or values
	ExitNoNodeID = 3 // every node ID of the range is held
	// ExitRestorePending: the table is served by another server than the
	// one it records and hands out no node ID until an operator declares
	// the restore (nodeid init --restored --max-ttl).
	ExitRestorePending = 4
	// ExitLeaseLost: "nodeid run" stopped its command because the lease
	// ended while it ran (taken over, evicted, expired, or its deadline or
	// horizon ceiling came), whatever the command's own exit code: a
	// command that exits 0 on SIGTERM must not read as a finished job to a
	// service manager that restarts on failure.
	ExitLeaseLost = 5
	// ExitConflict: what was asked conflicts with what the table records
	// and may not be undone (init --max-ttl below the recorded maximum):
	// the flags are well formed, the table refuses them.
	ExitConflict = 6
	// ExitInterrupted: "nodeid demo" was interrupted (Ctrl-C) and cleaned
	// up first.
	ExitInterrupted = 130
)

// ConflictError is a request that conflicts with what the table records.
// It exits with ExitConflict.
type ConflictError struct{ err error }

func (e *ConflictError) Error() string { return e.err.Error() }
func (e *ConflictError) Unwrap() error { return e.err }

// Conflictf returns a ConflictError with a formatted message.
func Conflictf(format string, args ...any) error {
	return &ConflictError{fmt.Errorf(format, args...)}
}

// UsageError is bad input: a flag, an argument or a value. It exits with
// ExitUsage.
type UsageError struct{ err error }

func (e *UsageError) Error() string { return e.err.Error() }
func (e *UsageError) Unwrap() error { return e.err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Usage marks err, if not nil, as bad input.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{err}
}

// ExitError ends the program with Code, after printing Msg (if any).
// "nodeid run" uses it to pass on its command's exit code.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Msg
}

// commandError marks an error returned by a command's own code, as opposed
// to cobra's parsing of the command line, whose errors are all bad usage.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// ExitCode maps an error returned by the command tree to an exit code.
func ExitCode(err error) int {
	var (
		ue  *UsageError
		ce  *ExitError
		cfe *ConflictError
		me  *commandError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &cfe):
		return ExitConflict
	case errors.As(err, &ue), errors.Is(err, nodeid.ErrInvalidOption):
		return ExitUsage
	case errors.Is(err, nodeid.ErrNoNodeIDAvailable):
		return ExitNoNodeID
	case errors.Is(err, nodeid.ErrRestorePending):
		return ExitRestorePending
	case errors.As(err, &me):
		return ExitFailure
	}
	return ExitUsage // cobra's own errors: unknown command, bad flag, wrong arguments
}
