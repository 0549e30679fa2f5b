package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/pgserver"
)

// Pair is a primary and an asynchronous streaming standby, both local
// servers, the standby replicating through Repl: see pgserver.Pair.
type Pair struct {
	Primary, Standby *Server
	Repl             *Proxy // the standby's replication connection runs through it

	pair *pgserver.Pair
}

// WaitReplayed waits until the standby has replayed the primary's WAL up to
// where it was when WaitReplayed was called, or ctx ends.
func (p *Pair) WaitReplayed(ctx context.Context) error { return p.pair.WaitReplayed(ctx) }

// Promote promotes the standby and waits until it accepts writes.
func (p *Pair) Promote(ctx context.Context) error { return p.pair.Promote(ctx) }

// DSN returns a multi-host DSN for database db that connects to whichever
// of the two accepts writes: see pgserver.Pair.DSN.
func (p *Pair) DSN(db string) string { return p.pair.DSN(db) }

// Close stops both servers and the proxy and removes their files.
func (p *Pair) Close() error { return p.pair.Close() }

// NewPair starts a Pair for the test and closes it when the test ends. It
// calls Unavailable when the PostgreSQL binaries are missing, and fails the
// test if they do not start.
func NewPair(t testing.TB, settings ...string) *Pair {
	t.Helper()
	if _, err := pgserver.FindBinaries(); err != nil {
		Unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pgserver.StartPair(ctx, settings...)
	if errors.Is(err, pgserver.ErrUnsupported) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &Pair{Primary: &Server{p.Primary}, Standby: &Server{p.Standby}, Repl: p.Repl, pair: p}
}

// AddStandby starts another standby of p's primary, streaming through a
// proxy of its own, for the test (see pgserver.Pair.AddStandby), and
// closes it when the test ends.
func (p *Pair) AddStandby(t testing.TB, name string) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, err := p.pair.AddStandby(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return &Pair{Primary: p.Primary, Standby: &Server{q.Standby}, Repl: q.Repl, pair: q}
}
