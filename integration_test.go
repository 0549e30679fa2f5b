package nodeid

// End-to-end tests of the root package against a real PostgreSQL from
// internal/testkit/pgtest. Each test gets a fresh database; tests that stop or
// restart the server get a server of their own.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// endpoint is where a test's clients connect: the server itself, or a real
// PgBouncer in transaction pooling mode in front of it.
type endpoint struct {
	db   *sql.DB
	dsn  string
	addr string // host:port, for a proxy in front of it
}

// vias are the ways the acquire, renew, takeover and release tests reach
// the database.
var vias = []string{"direct", "pgbouncer"}

func connect(t *testing.T, via string) endpoint {
	t.Helper()
	srv := pgtest.Shared(t)
	db, dsn := srv.NewDB(t)
	if via == "direct" {
		return endpoint{db: db, dsn: dsn, addr: srv.Addr()}
	}
	b := srv.NewPgBouncer(t)
	bdsn := b.DSN(currentDB(t, db), "default_query_exec_mode=exec")
	bdb, err := sql.Open("pgx", bdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	return endpoint{db: bdb, dsn: bdsn, addr: b.Addr()}
}

// newTestRegistry returns a Registry that creates its table if missing,
// unless opts say otherwise, closed when the test ends.
func newTestRegistry(t *testing.T, db *sql.DB, opts ...Option) *Registry {
	t.Helper()
	r, err := New(db, append([]Option{WithCreateTable(true)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func acquire(t *testing.T, r *Registry) *Lease {
	t.Helper()
	l, err := r.Acquire(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dbRow is a lease row as the database sees it at its now().
type dbRow struct {
	owner   string
	epoch   int64
	free    bool // expires_at = -infinity
	expired bool // expires_at < now()
	horizon int64
	expires string // text form, to compare exactly
}

func readRow(t *testing.T, db *sql.DB, node int64) dbRow {
	t.Helper()
	var r dbRow
	err := db.QueryRowContext(testContext(t), `SELECT owner, epoch, expires_at = '-infinity',
		expires_at < now(), horizon_ms, expires_at::text FROM snowflake_nodes WHERE node_id = $1`, node).
		Scan(&r.owner, &r.epoch, &r.free, &r.expired, &r.horizon, &r.expires)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func waitLost(t *testing.T, l *Lease, within time.Duration) time.Time {
	t.Helper()
	select {
	case <-l.Done():
		return time.Now()
	case <-time.After(within):
		t.Fatalf("Lost did not close within %s", within)
	}
	panic("unreachable")
}

func TestConcurrentAcquireDistinctLowestFirst(t *testing.T) {
	t.Parallel()
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			db := connect(t, via).db
			db.SetMaxOpenConns(200)
			// Leases that renew every few minutes: the test is of the claims,
			// and 1,024 leases renewing every 20 s under the race detector,
			// on a loaded machine, let one lapse before the range was full.
			r := newTestRegistry(t, db, WithTTL(10*time.Minute))
			ctx := testContext(t)
			// Create the table first, so that the 200 claims race each other and
			// not the set-up.
			if err := r.ensure(ctx); err != nil {
				t.Fatal(err)
			}

			const n = 200
			start := make(chan struct{})
			leases := make([]*Lease, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					leases[i], errs[i] = r.Acquire(ctx)
				})
			}
			close(start)
			wg.Wait()
			var ids []int64
			for i, err := range errs {
				if err != nil {
					t.Fatalf("Acquire %d: %v", i, err)
				}
				ids = append(ids, leases[i].NodeID())
			}
			slices.Sort(ids)
			for i, id := range ids {
				if id != int64(i) {
					t.Fatalf("the %d concurrent claims got node IDs %v...; want exactly 0-%d", n, ids[:min(len(ids), 20)], n-1)
				}
			}
			var conns int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&conns); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d claims on %d connections", n, conns)

			// Lowest-free order, one at a time: a released ID is the next claimed.
			byNode := map[int64]*Lease{}
			for _, l := range leases {
				byNode[l.NodeID()] = l
			}
			for _, node := range []int64{57, 3, 150} {
				unused(t, byNode[node])
				if err := byNode[node].Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range []int64{3, 57, 150, 200, 201} {
				if got := acquire(t, r).NodeID(); got != want {
					t.Fatalf("Acquire got node ID %d, want the lowest free, %d", got, want)
				}
			}

			// Fill the range; the 1025th claim finds nothing. Each step has a
			// deadline of its own: the 822 claims, beside 1,024 leases that
			// renew, outran one for the whole test under the race detector
			// on a loaded machine.
			for range 1024 - 202 {
				acquire(t, r)
			}
			extra, err := r.TryAcquire(testContext(t))
			if !errors.Is(err, ErrNoNodeIDAvailable) {
				lost, node := 0, int64(-1)
				if extra != nil {
					node = extra.NodeID()
				}
				for _, l := range leases {
					if l.Err() != nil {
						lost++
					}
				}
				t.Fatalf("Acquire on a full range: %v (node %d), want ErrNoNodeIDAvailable; %d of the first %d leases had ended", err, node, lost, n)
			}
			if !strings.Contains(err.Error(), "0-1023") {
				t.Errorf("error %q does not name the range", err)
			}
		})
	}
}

func TestReleaseFreesAtOnceAndKeepsEpoch(t *testing.T) {
	t.Parallel()
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			db := connect(t, via).db
			r := newTestRegistry(t, db, WithNodeRange(7, 7))
			l := acquire(t, r)
			if l.NodeID() != 7 || l.Epoch() != 1 {
				t.Fatalf("first claim: node %d epoch %d, want node 7 epoch 1", l.NodeID(), l.Epoch())
			}
			unused(t, l)
			if err := l.Release(testContext(t)); err != nil {
				t.Fatal(err)
			}
			row := readRow(t, db, 7)
			if !row.free || row.epoch != 1 || row.owner != "" {
				t.Fatalf("released row = %+v, want free with epoch 1 kept", row)
			}
			if !errors.Is(l.Err(), ErrReleased) {
				t.Errorf("Err after Release = %v, want ErrReleased", l.Err())
			}
			select {
			case <-l.Done():
			default:
				t.Error("Lost is open after Release")
			}
			if err := l.Release(testContext(t)); err != nil {
				t.Errorf("second Release = %v, want the first result (nil)", err)
			}
			l2 := acquire(t, r) // immediately: no wait for any TTL
			if l2.NodeID() != 7 || l2.Epoch() != 2 {
				t.Fatalf("claim after release: node %d epoch %d, want node 7 epoch 2", l2.NodeID(), l2.Epoch())
			}
		})
	}
}

// TestEpochStrictlyIncreases claims one node ID again and again across every
// way a claim can end, and a server restart.
func TestEpochStrictlyIncreases(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	db, _ := srv.NewDB(t)
	ctx := testContext(t)
	// 6 s leases: a claim on a fresh server of a loaded machine took most
	// of a 3 s lease's 2.7 s to its deadline (1 run in 3 with two CPU-bound
	// loops beside the suite), leaving none to bind a generator.
	r := newTestRegistry(t, db, WithNodeRange(0, 0), WithTTL(6*time.Second))
	st := r.st.(*admin.Store)
	var epochs []int64
	claim := func(how string) *Lease {
		t.Helper()
		l, err := r.Acquire(ctx)
		if err != nil {
			t.Fatalf("claim after %s: %v", how, err)
		}
		epochs = append(epochs, l.Epoch())
		return l
	}

	l := claim("nothing")
	unused(t, l)
	if err := l.Release(ctx); err != nil { // release
		t.Fatal(err)
	}
	claim("release")

	// Lapse: the holder's renewals stop (the lease is abandoned by stopping
	// its loop as a dead process would), and the row expires.
	abandoned := r.leasesNow()[0]
	abandoned.cancel()
	<-abandoned.done
	waitLost(t, abandoned, 2*r.TTL())
	waitExpiredWithin(t, db, 0, 2*r.TTL())
	claim("lapse")

	// Takeover: the row's expiry is moved into the past, as a server clock
	// jump would; another registry claims it while the holder still runs.
	if _, err := db.ExecContext(ctx, `UPDATE snowflake_nodes SET `+clockJump); err != nil {
		t.Fatal(err)
	}
	// This lease must outlive the restart below, recovery included, however
	// loaded the machine: a TTL well above the restart's time.
	r2 := newTestRegistry(t, db, WithNodeRange(0, 0), WithTTL(30*time.Second))
	l2, err := r2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	epochs = append(epochs, l2.Epoch())

	if err := srv.Restart(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	unused(t, l2)
	if err := l2.Release(ctx); err != nil {
		t.Fatalf("release after restart: %v", err)
	}
	c, err := st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "after-restart", MinTTL, 0)
	ok := c.OK
	if err != nil || !ok {
		t.Fatalf("claim after restart: ok=%v err=%v", ok, err)
	}
	epochs = append(epochs, c.Epoch)

	for i := 1; i < len(epochs); i++ {
		if epochs[i] <= epochs[i-1] {
			t.Fatalf("epochs %v do not strictly increase", epochs)
		}
	}
	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(epochs, want) {
		t.Errorf("epochs = %v, want %v (+1 per claim)", epochs, want)
	}
}

func (r *Registry) leasesNow() []*Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Lease
	for l := range r.leases {
		out = append(out, l)
	}
	return out
}

// waitExpired waits until the database considers node's lease, of the
// shortest TTL, expired.
func waitExpired(t *testing.T, db *sql.DB, node int64) {
	t.Helper()
	waitExpiredWithin(t, db, node, 2*MinTTL)
}

// waitExpiredWithin waits up to within until the database considers node's
// lease expired.
func waitExpiredWithin(t *testing.T, db *sql.DB, node int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !readRow(t, db, node).expired {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not expire", node)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clockJump is the change a forward step of the server's clock makes to a
// held lease, seen from the row: its expiry, and the horizon that the
// database's clock bounds, fall a second into the past.
const clockJump = `horizon_ms = horizon_ms - (extract(epoch FROM expires_at - now()) * 1000)::bigint - 1000,
	expires_at = now() - interval '1 second'`

// unused declares that nothing was minted under l, so that its Release
// leaves the node ID claimable at once, as a generator that stamped nothing
// would.
func unused(t *testing.T, l *Lease) {
	t.Helper()
	if err := NewFence(l).Bind(func() int64 { return 0 }); err != nil {
		t.Fatal(err)
	}
}

// A lease's Context ends when Release ends the lease, with the *EndError
// as its cause, and the next holder's Context is another.
func TestContextOfReleasedLease(t *testing.T) {
	t.Parallel()
	ep := connect(t, "direct")
	r := newTestRegistry(t, ep.db, WithNodeRange(5, 5))
	l := acquire(t, r)
	ctx := l.Context()
	if err := ctx.Err(); err != nil {
		t.Fatalf("Context of a held lease ended: %v", context.Cause(ctx))
	}
	if err := l.ReleaseStamped(testContext(t), l.PreviousHorizon()); err != nil { // nothing minted: claimable again at once
		t.Fatal(err)
	}
	var le *EndError
	if cause := context.Cause(ctx); !errors.As(cause, &le) || le.NodeID != 5 || le.Epoch != l.Epoch() ||
		errors.Is(cause, ErrLeaseLost) || !errors.Is(cause, ErrReleased) || errors.Is(cause, ErrExpired) {
		t.Fatalf("Context's cause after Release = %v, want the *EndError of node ID 5 matching ErrReleased, not ErrLeaseLost", cause)
	}
	if !readRow(t, ep.db, 5).free {
		t.Error("the row is not free after Release")
	}
	next := acquire(t, r)
	if next.Context() == ctx || next.Context().Err() != nil {
		t.Errorf("the next lease's Context is the released one's, or ended: %v", context.Cause(next.Context()))
	}
}

func TestTakeoverEndsOldLease(t *testing.T) {
	t.Parallel()
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			ep := connect(t, via)
			db, dsn := ep.db, ep.dsn
			ctx := testContext(t)
			// The old holder reaches the database through a proxy, so that the
			// takeover cannot race its renewals.
			proxy, err := pgtest.NewProxy(ep.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			oldDB, err := sql.Open("pgx", pgtest.WithAddr(dsn, proxy.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer oldDB.Close()
			// A TTL long enough that, on a loaded machine too, the old holder
			// learns of the takeover at its next renewal (after TTL/3) well
			// before its own deadline would end the lease as expired.
			const ttl = 15 * time.Second
			old := newTestRegistry(t, oldDB, WithNodeRange(3, 3), WithTTL(ttl), WithOwner("old-holder"))
			lo := acquire(t, old)
			loCtx := lo.Context()
			newer := newTestRegistry(t, db, WithNodeRange(3, 3), WithTTL(ttl), WithOwner("new-holder"))
			if err := newer.ensure(ctx); err != nil {
				t.Fatal(err)
			}

			// The database expires the lease before the holder's deadline (a server
			// clock jump), and another holder takes the node ID over.
			proxy.Blackhole()
			if _, err := db.ExecContext(ctx, `UPDATE snowflake_nodes SET `+clockJump+` WHERE node_id = 3`); err != nil {
				t.Fatal(err)
			}
			ln := acquire(t, newer)
			proxy.Restore()
			if ln.Epoch() != lo.Epoch()+1 {
				t.Fatalf("takeover epoch %d, want %d", ln.Epoch(), lo.Epoch()+1)
			}
			before := readRow(t, db, 3)

			// At the old holder's next renewal: its cause below says so (at
			// its deadline it would be expired); the wait's bound only keeps
			// a hang from passing, and a loaded machine's timers from failing.
			waitLost(t, lo, 2*ttl)
			if !errors.Is(lo.Err(), ErrLeaseLost) || !errors.Is(lo.Err(), ErrTakenOver) {
				t.Fatalf("old lease Err = %v, want ErrLeaseLost and ErrTakenOver", lo.Err())
			}
			if err := check(lo, time.Now(), 0); !errors.Is(err, ErrTakenOver) {
				t.Errorf("Check after takeover = %v", err)
			}
			select {
			case <-loCtx.Done():
				if cause := context.Cause(loCtx); cause != lo.Err() {
					t.Errorf("old lease's Context ended with %v, want its Err %v", cause, lo.Err())
				}
			default:
				t.Error("the old lease's Context did not end with it")
			}

			// The old holder's renew and release change nothing.
			st := old.st.(*admin.Store)
			o, err := st.Renew(ctx, lo.key, MinTTL, 1<<50)
			if err != nil || o.OK {
				t.Fatalf("renew with the old key: ok=%v err=%v", o.OK, err)
			}
			if err := lo.Release(ctx); !errors.Is(err, ErrTakenOver) {
				t.Errorf("old Release = %v, want ErrTakenOver", err)
			}
			o, err = st.Release(ctx, lo.key, 0)
			if err != nil || o.OK {
				t.Fatalf("release with the old key: ok=%v err=%v", o.OK, err)
			}
			// The new holder renews meanwhile, which moves its expiry and raises
			// its horizon; the old holder's renewal would have raised the
			// horizon to 2^50, and its release would have freed the row and
			// set the horizon to 0.
			after := readRow(t, db, 3)
			if after.owner != "new-holder" || after.epoch != ln.Epoch() || after.free ||
				after.horizon < before.horizon || after.horizon >= 1<<50 {
				t.Fatalf("row changed by the old holder: before %+v, after %+v", before, after)
			}
			select {
			case <-ln.Done():
				t.Fatalf("the new lease was lost: %v", ln.Err())
			default:
			}
			// The history ended the old claim as expired; pruning keeps it
			// while it is recent, and never prunes the open claim.
			if n, err := st.PruneHistory(ctx, time.Hour); err != nil || n != 0 {
				t.Errorf("PruneHistory(1h) = %d, %v; want 0 deleted", n, err)
			}
			var reason string
			if err := db.QueryRowContext(ctx, `SELECT end_reason FROM snowflake_nodes_history WHERE node_id = 3 AND epoch = $1`, lo.Epoch()).Scan(&reason); err != nil || reason != "expired" {
				t.Errorf("history of the old claim: %q, %v; want expired", reason, err)
			}
		})
	}
}

func TestDatabaseStoppedLostAtDeadline(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	db, _ := srv.NewDB(t)
	ctx := testContext(t)
	r := newTestRegistry(t, db, WithTTL(MinTTL))
	l := acquire(t, r)
	if err := srv.Stop(ctx, pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	// A control timer for the deadline, waited on as Lost is, measures how
	// late this machine, however loaded, wakes a goroutine at that instant.
	d1 := l.Deadline()
	fired, woke := make(chan struct{}), make(chan time.Time, 1)
	control := time.AfterFunc(time.Until(d1), func() { close(fired) })
	defer control.Stop()
	go func() {
		select {
		case <-fired:
			woke <- time.Now()
		case <-ctx.Done():
		}
	}()
	lostAt := waitLost(t, l, 2*MinTTL)
	deadline := l.Deadline()
	var wake time.Duration
	select {
	case at := <-woke:
		wake = max(at.Sub(d1), 0)
	case <-time.After(2 * MinTTL):
		t.Fatal("the control timer did not fire")
	}
	const slack = 250 * time.Millisecond // beyond the control's lateness
	if lostAt.Before(deadline) {
		t.Errorf("Lost closed %s before the deadline", deadline.Sub(lostAt))
	}
	if late := lostAt.Sub(deadline); late > slack+wake {
		t.Errorf("Lost closed %s after the deadline; a control timer for it woke %s late", late, wake)
	}
	if !errors.Is(l.Err(), ErrExpired) {
		t.Errorf("Err = %v, want ErrExpired", l.Err())
	}
	if err := check(l, time.Now(), 0); !errors.Is(err, ErrExpired) {
		t.Errorf("Check after the deadline = %v", err)
	}

	// The lapsed lease is never revived: with the server back, the renewal
	// loop has stopped and the row stays as the last renewal left it.
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitExpired(t, db, l.NodeID())
	if err := l.Release(ctx); !errors.Is(err, ErrExpired) {
		t.Errorf("Release of a lapsed lease = %v, want ErrExpired", err)
	}
	if row := readRow(t, db, l.NodeID()); !row.expired || row.free || row.epoch != l.Epoch() {
		t.Errorf("lapsed row = %+v, want expired, not freed, epoch %d", row, l.Epoch())
	}
}

func TestDatabaseRestartedBeforeDeadlineLeaseSurvives(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	db, _ := srv.NewDB(t)
	ctx := testContext(t)
	// Long enough for two restarts on a loaded machine.
	ttl := 20 * time.Second
	r := newTestRegistry(t, db, WithTTL(ttl))
	l := acquire(t, r)
	for _, mode := range []pgtest.StopMode{pgtest.Fast, pgtest.Immediate} {
		if err := srv.Restart(ctx, mode); err != nil {
			t.Fatal(err)
		}
	}
	// The lease renews through the restarts: its deadline moves past
	// where a renewal before them could have put it.
	restarted := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !l.Deadline().After(restarted.Add(ttl / 2)) {
		select {
		case <-l.Done():
			t.Fatalf("lease lost across a restart: %v", l.Err())
		case <-ctx.Done():
			t.Fatalf("no renewal after the restarts: deadline %s", l.Deadline())
		case <-tick.C:
		}
	}
	// The restarts ended the connections the pool keeps idle: drop them.
	db.SetMaxIdleConns(0)
	db.SetMaxIdleConns(2)
	row := readRow(t, db, l.NodeID())
	if row.expired || row.free || row.epoch != l.Epoch() || row.owner != r.Owner() {
		t.Fatalf("row after restarts = %+v", row)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRenewalNeverExtendsLapsedLease(t *testing.T) {
	t.Parallel()
	for _, via := range vias {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			db := connect(t, via).db
			ctx := testContext(t)
			r := newTestRegistry(t, db, WithNodeRange(0, 0), WithTTL(MinTTL))
			if err := r.ensure(ctx); err != nil {
				t.Fatal(err)
			}
			st := r.st.(*admin.Store)
			c, err := st.Claim(ctx, st.Config().MinNode, st.Config().MaxNode, "x", MinTTL, 0)
			ok := c.OK
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			waitExpired(t, db, 0)
			before := readRow(t, db, 0)
			o, err := st.Renew(ctx, c.Key, MinTTL, 1<<50)
			if err != nil || o.OK {
				t.Fatalf("renewal of a lapsed lease: ok=%v err=%v", o.OK, err)
			}
			if after := readRow(t, db, 0); after != before {
				t.Fatalf("renewal changed a lapsed row: %+v -> %+v", before, after)
			}
			if o.Epoch != c.Epoch || o.Owner != "x" {
				t.Errorf("renewal reported the row as %d/%q", o.Epoch, o.Owner)
			}
		})
	}
}

// TestConcurrentTableCreation starts processes that create the table on
// one fresh database at the same moment, and hold their leases until all
// have claimed.
func TestConcurrentTableCreation(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	const procs = 8
	type proc struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Scanner
		trace strings.Builder
	}
	ps := make([]*proc, procs)
	// expect reads lines until one starts with prefix, and returns the rest.
	expect := func(p *proc, prefix string) string {
		for p.out.Scan() {
			line := p.out.Text()
			p.trace.WriteString(line + "\n")
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest
			}
		}
		p.cmd.Wait()
		t.Fatalf("helper process ended before %q:\n%s", prefix, p.trace.String())
		return ""
	}
	for i := range ps {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envHelperDSN+"="+dsn)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps[i] = &proc{cmd: cmd, in: in, out: bufio.NewScanner(out)}
		defer cmd.Process.Kill()
	}
	for _, p := range ps {
		expect(p, "READY")
	}
	for _, p := range ps { // the common start line
		io.WriteString(p.in, "GO\n")
	}
	seen := map[string]bool{}
	for i, p := range ps {
		node := expect(p, "ACQUIRED ")
		if seen[node] {
			t.Fatalf("process %d got node ID %s, already held by another", i, node)
		}
		seen[node] = true
	}
	for i, p := range ps {
		p.in.Close()
		expect(p, "RELEASED")
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, p.trace.String())
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, distinct, lo, hi int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT node_id), min(node_id), max(node_id) FROM snowflake_nodes`).
		Scan(&rows, &distinct, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if rows != 1024 || distinct != 1024 || lo != 0 || hi != 1023 {
		t.Fatalf("table holds %d rows (%d distinct, %d-%d); want exactly one per node ID 0-1023", rows, distinct, lo, hi)
	}
}

// createTableHelper is the body of one process of
// TestConcurrentTableCreation, run from TestMain when envHelperDSN is set.
// It says READY, waits for GO on stdin, acquires with table creation on,
// says ACQUIRED n, and holds the lease until stdin closes.
func createTableHelper(dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := New(db, WithCreateTable(true))
	if err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("READY")
	in.Scan()
	l, err := r.Acquire(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("ACQUIRED %d\n", l.NodeID())
	for in.Scan() {
	}
	if err := r.Close(); err != nil {
		return err
	}
	fmt.Println("RELEASED")
	return nil
}
