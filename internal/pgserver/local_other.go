//go:build !unix

package pgserver

import "context"

// PostmasterPID returns ErrUnsupported: see StartLocal.
func (s *Server) PostmasterPID() (int, error) { return 0, ErrUnsupported }

// FindBinaries returns ErrUnsupported: see StartLocal.
func FindBinaries() (string, error) { return "", ErrUnsupported }

// StartLocal returns ErrUnsupported: the local PostgreSQL programs are
// run as POSIX child processes, with signals for their shutdown modes.
func StartLocal(context.Context, ...string) (*Server, error) { return nil, ErrUnsupported }

func startStandby(context.Context, []string, string, string) (*Server, error) {
	return nil, ErrUnsupported
}
