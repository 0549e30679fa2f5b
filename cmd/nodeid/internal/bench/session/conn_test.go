package session

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestCounterCountsRoundTrips: the counter sees one statement and one
// socket write per round trip. In cache_statement mode a statement's first
// execution on a connection also prepares it, one round trip more; and the
// first reuse of a new pooled connection pings it first (pgx's stdlib
// driver pings in ResetSession a connection whose last reset was more than
// a second ago, and a new connection was never reset), one more again,
// which the counter tells apart from the statement's own.
func TestCounterCountsRoundTrips(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	r := &Session{Target: target(t, dsn)}
	for _, c := range []struct {
		mode          string
		first, second int64
	}{{report.ModeCache, 2, 1}, {report.ModeExec, 1, 1}} {
		ctr := &Counter{}
		db := r.OpenDB(1, c.mode, ctr)
		if err := db.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i, want := range []int64{c.first, c.second, c.second} {
			s0, w0, p0 := ctr.Stmts.Load(), ctr.Operations(), ctr.Pings()
			var n int
			if err := db.QueryRowContext(t.Context(), "SELECT $1::integer + 1", i).Scan(&n); err != nil {
				t.Fatal(err)
			}
			s1, w1 := ctr.Stmts.Load(), ctr.Operations()
			if s1-s0 != 1 || w1-w0 != want {
				t.Errorf("%s, execution %d: %d statements, %d round trips; want 1, %d", c.mode, i+1, s1-s0, w1-w0, want)
			}
			if p := ctr.Pings() - p0; i == 0 && p != 1 {
				t.Errorf("%s: %d pings before the first reuse of a new connection, want 1", c.mode, p)
			}
		}
		db.Close()
	}
}

func target(t *testing.T, dsn string) Target {
	t.Helper()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Conn: cc, Where: "the test database"}
}
