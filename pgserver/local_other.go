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

// ErrNoPgBouncer is returned by StartPgBouncer and FindPgBouncer.
var ErrNoPgBouncer = ErrUnsupported

// Bouncer is a throwaway PgBouncer; see StartPgBouncer.
type Bouncer struct{}

// FindPgBouncer returns ErrUnsupported: see StartLocal.
func FindPgBouncer() (string, error) { return "", ErrUnsupported }

// StartPgBouncer returns ErrUnsupported: see StartLocal.
func StartPgBouncer(context.Context, string, int) (*Bouncer, error) { return nil, ErrUnsupported }

// Addr returns "".
func (b *Bouncer) Addr() string { return "" }

// Port returns 0.
func (b *Bouncer) Port() int { return 0 }

// PID returns 0.
func (b *Bouncer) PID() int { return 0 }

// DSN returns "".
func (b *Bouncer) DSN(string, ...string) string { return "" }

// Close does nothing.
func (b *Bouncer) Close() error { return nil }
