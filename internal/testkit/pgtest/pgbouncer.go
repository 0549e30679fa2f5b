//go:build linux

package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/pgserver"
)

// Bouncer is a PgBouncer in transaction pooling mode in front of a Server:
// pgserver's, which the command's bench starts too.
type Bouncer = pgserver.Bouncer

// bouncerPool is the server connections a test's PgBouncer keeps per
// database and user.
const bouncerPool = 20

// StartPgBouncer starts a PgBouncer in transaction pooling mode that
// forwards every database to s, authenticating nobody (trust).
func (s *Server) StartPgBouncer(ctx context.Context) (*Bouncer, error) {
	return pgserver.StartPgBouncer(ctx, s.Addr(), bouncerPool)
}

// NewPgBouncer starts a PgBouncer in front of s for the test, stopped when
// the test ends.
func (s *Server) NewPgBouncer(t testing.TB) *Bouncer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := s.StartPgBouncer(ctx)
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
