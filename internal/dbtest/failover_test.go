package dbtest

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

// logOnFailure returns a WithLogger option that keeps the registry's
// warnings (each failed renewal attempt, with its error and the time left
// to the deadline) and prints them if the test fails: a lease lost to a
// slow server then says what every attempt met.
func logOnFailure(t *testing.T, name string) nodeid.Option {
	var buf syncbuf.Buffer
	t.Cleanup(func() {
		if t.Failed() && buf.Len() > 0 {
			t.Logf("%s's log:\n%s", name, buf.String())
		}
	})
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	return nodeid.WithLogger(slog.New(h))
}

// minter mints IDs under a lease until the generator refuses, in bursts,
// and keeps them.
type minter struct {
	mu   sync.Mutex
	ids  []uint64
	err  error
	done chan struct{}
}

func mint(t *testing.T, l *nodeid.Lease) *minter {
	t.Helper()
	g, err := snowflake.New(l)
	if err != nil {
		t.Fatal(err)
	}
	m := &minter{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			for range 50 {
				id, err := g.Generate()
				m.mu.Lock()
				if err != nil {
					m.err = err
					m.mu.Unlock()
					return
				}
				m.ids = append(m.ids, uint64(id))
				m.mu.Unlock()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return m
}

func (m *minter) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids)
}

// failoverCase is one way a failover can lose a lease's writes.
type failoverCase struct {
	name string
	// multiHost: the old holder's DSN lists both servers; else only the
	// old primary.
	multiHost bool
	// lose is where the old holder's writes stop reaching the standby:
	// "claim" (replication cut before the claim), "renewal" (after the
	// claim, before a renewal), "renewals" (for longer than the TTL), or
	// "" for a clean switchover that loses nothing.
	lose string
}

// A failover to an asynchronous standby that lacks the latest commits of
// the old primary: whatever was lost (a claim, a renewal, renewals for
// longer than the TTL) and whichever servers the old holder's DSN names,
// no ID is minted by two holders, epochs strictly increase, and the old
// holder's Lost closes; after a clean switchover the old holder's lease
// survives and it mints on.
func TestFailover(t *testing.T) {
	t.Parallel()
	for _, c := range []failoverCase{
		{"claim lost, old holder on the primary only", false, "claim"},
		{"claim lost, multi-host", true, "claim"},
		{"renewal lost, old holder on the primary only", false, "renewal"},
		{"renewals lost for longer than the TTL, multi-host", true, "renewals"},
		{"clean switchover, multi-host", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testFailover(t, c)
		})
	}
}

func testFailover(t *testing.T, c failoverCase) {
	// Where the test waits for renewals, the lease must outlive a loaded
	// machine's stalls (a renewal late by more than about TTL/2 loses it:
	// 10s leases were lost, 1 run in 5, over the 15s of renewals on the
	// old primary with five pairs of servers and two busy loops on 2
	// cores); across a clean switchover it must outlive the switchover;
	// where the old holder must hear of the loss from the new primary
	// (ErrFailover), it must outlive the promotion and one more renewal
	// attempt (10s leases expired first, 1 run in 14). A new holder's
	// lease must outlive the stalls too (a 3s lease lapsed before its
	// generator was built, 1 run in 10). The quarantine is the TTL plus a
	// tenth.
	ttl := 10 * time.Second
	if c.lose == "renewals" || c.lose == "" || c.multiHost && c.lose == "claim" {
		ttl = 20 * time.Second
	}
	pair := pgtest.NewPair(t)
	ctx := ctxOf(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ddl, _ := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl}.SQL()
	if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	settleCreation(t, ctx, pair.Primary.DSN(dbName))
	open := func(dsn string) *sql.DB {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	oldDSN := pair.Primary.DSN(dbName)
	if c.multiHost {
		oldDSN = pair.DSN(dbName)
	}
	oldReg, err := nodeid.New(open(oldDSN), nodeid.WithTTL(ttl), nodeid.WithOwner("old-holder"),
		logOnFailure(t, "the old holder"))
	if err != nil {
		t.Fatal(err)
	}
	defer oldReg.Close()

	if c.lose == "claim" {
		pair.Repl.Cut()
	}
	old, err := oldReg.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := mint(t, old)
	switch c.lose {
	case "renewal":
		if err := pair.WaitReplayed(ctx); err != nil {
			t.Fatal(err)
		}
		pair.Repl.Cut()
		waitRenewed(t, pair.Primary, dbName, old) // one renewal on the old primary only
	case "renewals":
		if err := pair.WaitReplayed(ctx); err != nil {
			t.Fatal(err)
		}
		pair.Repl.Cut()
		cut := time.Now()
		for time.Since(cut) < ttl+ttl/2 { // renewals on the old primary only, for longer than the TTL
			waitRenewed(t, pair.Primary, dbName, old)
		}
	case "":
		waitRenewed(t, pair.Primary, dbName, old)
		if err := pair.WaitReplayed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The failover: the old primary is isolated (stopped at once, as a crash),
	// and the standby promoted.
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	leftAtPromotion := time.Until(old.Deadline())

	newReg, err := nodeid.New(open(pair.DSN(dbName)), nodeid.WithTTL(ttl), nodeid.WithOwner("new-holder"),
		logOnFailure(t, "the new holder"))
	if err != nil {
		t.Fatal(err)
	}
	defer newReg.Close()
	if c.lose == "" {
		// Nothing was lost: the old lease lives on across the switchover and
		// its generator never stops; the node ID is not claimable.
		impatient, err := nodeid.New(open(pair.DSN(dbName)), nodeid.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer impatient.Close()
		if _, err := impatient.TryAcquire(ctx); !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
			t.Fatalf("Acquire while the old lease survives = %v; want ErrNoNodeIDAvailable", err)
		}
		before := a.count()
		waitRenewed(t, pair.Standby, dbName, old) // a renewal on the new primary
		for a.count() == before {
			time.Sleep(time.Millisecond)
		}
		if err := old.Err(); err != nil {
			t.Fatalf("the old lease ended across a clean switchover: %v", err)
		}
		if err := a.errNow(); err != nil {
			t.Fatalf("the old holder stopped minting across a clean switchover: %v", err)
		}
		return
	}

	// The node ID is quarantined on the new primary, and shows so.
	newDB := open(pair.DSN(dbName))
	st, err := admin.New(newDB, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0})
	if err != nil {
		t.Fatal(err)
	}
	rows, now, err := st.List(ctx)
	if err != nil || len(rows) != 1 {
		t.Fatal(rows, err)
	}
	if s := rows[0].State(now); s != admin.Quarantined && s != admin.Held {
		t.Errorf("after the failover, node ID 0 is %s; want quarantined (or held, if the lost lease had not expired there yet)", s)
	}
	nw, err := newReg.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimedAfter := time.Since(promoted)
	if h, err := st.History(ctx, 0, 1); err != nil || len(h) != 1 || h[0].Generation != 2 || h[0].FromMs != nw.PreviousHorizon() {
		t.Errorf("the history of the new claim: %+v, %v; want generation 2, stamps from %d", h, err, nw.PreviousHorizon())
	}
	b := mint(t, nw)
	select { // the old holder learns of the loss at its deadline at the latest
	case <-old.Done():
	case <-time.After(2 * ttl):
		t.Fatal("the old holder's Lost did not close")
	}
	<-a.done
	for b.count() < 1000 {
		time.Sleep(time.Millisecond)
	}
	_ = newReg.Close()
	<-b.done

	if !errors.Is(a.err, nodeid.ErrLeaseLost) {
		t.Errorf("the old holder stopped with %v; want ErrLeaseLost", a.err)
	}
	want := nodeid.ErrExpired // on the old primary only: it hears nothing more
	// On a multi-host DSN it hears from the new primary that its claim is
	// gone, unless its deadline came first: a lease with less than one
	// renewal attempt and one retry left at the promotion may expire before
	// its next statement reaches the new primary.
	if c.multiHost && c.lose == "claim" && (leftAtPromotion > ttl/5+ttl/20 || errors.Is(old.Err(), nodeid.ErrFailover)) {
		want = nodeid.ErrFailover
	}
	if !errors.Is(old.Err(), want) {
		t.Errorf("the old lease ended with %v, with %s of it left at the promotion; want %v", old.Err(), leftAtPromotion.Round(time.Millisecond), want)
	}
	if era, now := nw.Epoch()>>32, time.Now().Unix()-admin.EraOrigin; nw.Epoch() <= old.Epoch() || era <= old.Epoch()>>32 || era > now || era < now-300 {
		t.Errorf("epochs %d then %d (%#x); want strictly increasing, the new one of a new era (the seconds since 2020, about %d)",
			old.Epoch(), nw.Epoch(), nw.Epoch(), now)
	}
	dups := 0
	both := map[uint64]bool{}
	for _, id := range a.ids {
		both[id] = true
	}
	for _, id := range b.ids {
		if both[id] {
			dups++
		}
	}
	lastOld := snowflake.DefaultLayout.Decode(bw.ID(slices.Max(a.ids))).Ms
	firstNew := snowflake.DefaultLayout.Decode(bw.ID(slices.Min(b.ids))).Ms
	t.Logf("old holder: %d IDs, epoch %d, ended with %v; new holder: %d IDs, epoch %#x, claimed %s after the promotion, after horizon %d; duplicates: %d",
		len(a.ids), old.Epoch(), old.Err(), len(b.ids), nw.Epoch(), claimedAfter.Round(time.Millisecond), nw.PreviousHorizon(), dups)
	if dups > 0 || firstNew <= lastOld || nw.PreviousHorizon() < lastOld {
		t.Errorf("%d IDs minted by both holders; the old holder's last stamp %d, the new holder's first %d after horizon %d",
			dups, lastOld, firstNew, nw.PreviousHorizon())
	}
}

func (m *minter) errNow() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// waitRenewed waits until node ID 0's expiry on the server moves: l is
// renewed there.
func waitRenewed(t *testing.T, srv *pgtest.Server, db string, l *nodeid.Lease) {
	t.Helper()
	conn, err := sql.Open("pgx", srv.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := ctxOf(t)
	read := func() string {
		var s string
		if err := conn.QueryRowContext(ctx, `SELECT expires_at::text FROM snowflake_nodes WHERE node_id = 0`).Scan(&s); err != nil {
			t.Fatal(fmt.Errorf("reading the lease on %s: %w", srv.Addr(), err))
		}
		return s
	}
	for last := read(); read() == last; {
		select {
		case <-ctx.Done():
			t.Fatal("no renewal")
		case <-l.Done():
			t.Fatalf("the lease ended before it was renewed on %s: %v", srv.Addr(), l.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
