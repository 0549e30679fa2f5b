package main

import (
	"errors"
	"fmt"

	"github.com/nodeid/nodeid"
)

// Exit codes of the command. "nodeid run" exits with its command's code
// instead, once the command has started.
const (
	exitOK       = 0 // success
	exitFailure  = 1 // the command failed (database error, declined, not found)
	exitUsage    = 2 // bad flags, arguments or values
	exitNoNodeID = 3 // every node ID of the range is held
)

// usageError is bad input: a flag, an argument or a value. It exits with
// exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// usage marks err, if not nil, as bad input.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// exitCodeError ends the program with code, after printing msg (if any).
// "nodeid run" uses it to pass on its command's exit code.
type exitCodeError struct {
	code int
	msg  string
}

func (e *exitCodeError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.msg
}

// commandError marks an error returned by a command's own code, as opposed
// to cobra's parsing of the command line, whose errors are all bad usage.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// exitCode maps an error returned by the command tree to an exit code.
func exitCode(err error) int {
	var (
		ue *usageError
		ce *exitCodeError
		me *commandError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), errors.Is(err, nodeid.ErrInvalidOption):
		return exitUsage
	case errors.Is(err, nodeid.ErrNoNodeIDAvailable):
		return exitNoNodeID
	case errors.As(err, &me):
		return exitFailure
	}
	return exitUsage // cobra's own errors: unknown command, bad flag, wrong arguments
}
