package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid/pgserver"
)

// Pair is a primary and an asynchronous streaming standby, both local
// servers, the standby replicating through Repl, which a test can Cut,
// Blackhole and Restore: see pgserver.Pair.
type Pair struct {
	Primary, Standby *Server
	Repl             *Proxy // the standby's replication connection runs through it

	pair     *pgserver.Pair
	settings []string // as given to NewPair, for AddStandby
}

// WaitReplayed waits until the standby has replayed the primary's WAL up to
// where it was when WaitReplayed was called, or ctx ends.
func (p *Pair) WaitReplayed(ctx context.Context) error { return p.pair.WaitReplayed(ctx) }

// Promote promotes the standby and waits until it accepts writes.
func (p *Pair) Promote(ctx context.Context) error { return p.pair.Promote(ctx) }

// FailOver fails the pair over: it stops the primary at once, as a crash
// that also isolates it (it takes no more writes), and promotes the standby.
func (p *Pair) FailOver(ctx context.Context) error {
	if err := p.Primary.Stop(ctx, Immediate); err != nil {
		return err
	}
	return p.Promote(ctx)
}

// DSN returns a multi-host DSN for database db that connects to whichever
// of the two accepts writes: see pgserver.Pair.DSN.
func (p *Pair) DSN(db string) string { return p.pair.DSN(db) }

// Close stops both servers and the proxy (dropping what it holds) and
// removes their files.
func (p *Pair) Close() error {
	p.Repl.gate.set(dropping)
	return p.pair.Close()
}

// NewPair starts a Pair for the test and closes it when the test ends. It
// calls Unavailable when the PostgreSQL binaries are missing, and fails the
// test if they do not start.
func NewPair(t testing.TB, settings ...string) *Pair {
	t.Helper()
	SkipShort(t)
	if _, err := pgserver.FindBinaries(); err != nil {
		Unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newHoldGate()
	p, err := pgserver.StartGatedPair(ctx, g, settings...)
	if errors.Is(err, pgserver.ErrUnsupported) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	pair := &Pair{Primary: &Server{p.Primary}, Standby: &Server{p.Standby}, Repl: &Proxy{Proxy: p.Repl, gate: g}, pair: p, settings: settings}
	t.Cleanup(func() { _ = pair.Close() })
	return pair
}

// NewPairDB starts a Pair for the test (NewPair), creates a database on its
// primary and waits until the standby has replayed it; it returns the
// Pair and the database's name.
func NewPairDB(t testing.TB, settings ...string) (*Pair, string) {
	t.Helper()
	p := NewPair(t, settings...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := p.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	return p, db
}

// AddStandby starts another standby of p's primary, cloned and streaming
// through a proxy of its own, from a replication slot of its own, for the
// test, and returns it as a Pair that shares the primary: two standbys of
// one primary, which a test can cut and promote one after the other, each
// never having seen what the other took after its promotion. The new
// standby is closed when the test ends; closing the new Pair leaves the
// primary running.
func (p *Pair) AddStandby(t testing.TB, name string) *Pair {
	t.Helper()
	return p.addStandby(t, p.Primary, "pgtest_standby_"+name)
}

// AddStandbyOfStandby is AddStandby for a standby of p's standby, once
// that is promoted: the new primary's own standby, which never saw the
// old primary. The slot is on p's standby.
func (p *Pair) AddStandbyOfStandby(t testing.TB, name string) *Pair {
	t.Helper()
	return p.addStandby(t, p.Standby, "pgtest_standby_"+name)
}

// AddStandbyWithoutSlot is AddStandby for a standby that streams without
// a replication slot: the primary keeps no place for it, and only
// pg_stat_replication shows how far it has replayed.
func (p *Pair) AddStandbyWithoutSlot(t testing.TB) *Pair {
	t.Helper()
	return p.addStandby(t, p.Primary, "")
}

func (p *Pair) addStandby(t testing.TB, upstream *Server, slot string) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newHoldGate()
	q, err := pgserver.StartStandby(ctx, upstream.Server, slot, g, p.settings...)
	if err != nil {
		t.Fatal(err)
	}
	added := &Pair{Primary: upstream, Standby: &Server{q.Standby}, Repl: &Proxy{Proxy: q.Repl, gate: g}, pair: q, settings: p.settings}
	t.Cleanup(func() { _ = added.Close() })
	return added
}
