package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// The knobs of a failover run.
const (
	envFailovers = "NODEID_CHAOS_FAILOVERS"

	defaultFailovers = 1
	failoverDuration = 30 * time.Second // the least a failover run lasts, by default
	clusterNodes     = 3
	// afterLast is how long the run goes on after the last failover's
	// recovery, at the least: leases of the new primary mint, end and are
	// claimed again.
	afterLast = 3 * time.Second
	// recoverWithin bounds each wait of a failover: for the new primary,
	// for a healthy cluster, for the first claim on the new primary.
	recoverWithin = 3 * time.Minute
	// perFailover is a generous estimate of what each failover adds to a
	// run: the failover, the cluster's recovery, the first claim on the
	// new primary and the pause before the next.
	perFailover = 40 * time.Second
)

// TestChaosFailover runs the workers on a Patroni cluster of three nodes,
// with failovers on top of the faults of workers: see the package doc.
func TestChaosFailover(t *testing.T) {
	t.Parallel()
	n := defaultFailovers
	if s := os.Getenv(envFailovers); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a whole number of failovers, at least 1", envFailovers, s)
		}
		n = v
	}
	seed, d := settings(t, failoverDuration)
	needs(t, d+time.Duration(n)*perFailover)
	steps := FailoverPlan(seed, n)
	start := fmt.Sprintf("chaos: seed %d (replay with %s=%d), duration %s at least, %d failovers %v on a %d-node Patroni cluster",
		seed, envSeed, seed, d, n, steps, clusterNodes)
	fmt.Println(start)
	t.Log(start)

	c := pgtest.NewCluster(t, clusterNodes)
	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	dbname, err := c.CreateDatabase(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := provision(sctx, c, dbname); err != nil {
		t.Fatal(err)
	}

	r := newRun(t, seed, c.DSN(dbname), c.DSN(dbname))
	r.cluster, r.dbname = c, dbname
	defer r.killAll() // after a t.Fatal too
	for w := range workers {
		if err := r.startWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	// The faults of workers go on until the failovers are over.
	planned := d + time.Duration(n)*perFailover
	plan := Plan(seed, planned, workers, ttl, ClusterKinds())
	began := time.Now()
	quit := make(chan struct{})
	var faults sync.WaitGroup
	faults.Go(func() { r.nemesis(plan, began, began.Add(planned), quit) })
	r.runFailovers(ctx, steps, began)
	end := began.Add(d)
	if later := time.Now().Add(afterLast); later.After(end) {
		end = later
	}
	sleepUntil(end, nil)
	close(quit)
	faults.Wait()
	r.stopAll()
	r.checkTimeline(ctx)
	r.finish(ctx, time.Since(began), append(ClusterKinds(), FailoverKinds()...))
}

// provision creates the lease table on the cluster's leader, with the
// workers' TTL as its maximum TTL, so that a failover's quarantine lasts
// Quarantine(ttl), and waits until every node has it: a standby promoted
// without it would fail every worker.
func provision(ctx context.Context, c *pgtest.Cluster, dbname string) error {
	schema, err := postgres.Schema{Table: table, MinNode: minNode, MaxNode: maxNode, MaxTTL: ttl}.SQL()
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", c.DSN(dbname))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("provision the lease table: %w", err)
	}
	for i := range clusterNodes {
		dsn, err := c.NodeDSN(fmt.Sprintf("node%d", i), dbname)
		if err != nil {
			return err
		}
		query := fmt.Sprintf(`SELECT count(*) FROM %s`, postgres.ConfigTable(table))
		if err := countReaches(ctx, dsn, query, 1); err != nil {
			return fmt.Errorf("the lease table did not reach node%d: %w", i, err)
		}
	}
	return nil
}

// countReaches runs query, which returns a count, on dsn until the count
// is at least want or ctx ends.
func countReaches(ctx context.Context, dsn, query string, want int64, args ...any) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return testkit.Wait(ctx, func() error {
		var got int64
		if err := db.QueryRowContext(ctx, query, args...).Scan(&got); err != nil {
			return err
		}
		if got < want {
			return fmt.Errorf("%d rows, want %d", got, want)
		}
		return nil
	})
}

// terminateOn ends every client connection to database db on the server
// that dsn connects to.
func terminateOn(ctx context.Context, dsn, db string) error {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	var n int
	return admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND datname = $1`, db).Scan(&n)
}

// runFailovers applies the failover plan: each failover after its pause,
// the first once every node ID has been claimed. It returns after the
// last failover's recovery, or after a failover that failed (the run
// fails then).
func (r *run) runFailovers(ctx context.Context, steps []FailoverStep, began time.Time) {
	last := began
	for i, s := range steps {
		sleepUntil(last.Add(s.After), nil)
		if i == 0 {
			wctx, cancel := context.WithTimeout(ctx, recoverWithin)
			err := countReaches(wctx, r.cluster.DSN(r.dbname), `SELECT count(DISTINCT node_id) FROM `+postgres.HistoryTable(table),
				maxNode-minNode+1)
			cancel()
			if err != nil {
				r.failf("before failover 1: not every node ID was claimed: %v", err)
				return
			}
		}
		if err := r.failover(ctx, s); err != nil {
			r.failf("failover %d of %d (%s): %v", i+1, len(steps), s.Kind, err)
			return
		}
		last = time.Now()
	}
}

// failover carries out one failover, records it, and returns once the
// cluster has recovered: a new primary on a later timeline, every standby
// streaming from it, and a claim made on it. No other fault on the
// database runs meanwhile.
func (r *run) failover(ctx context.Context, s FailoverStep) error {
	r.dbFault.Lock()
	defer r.dbFault.Unlock()
	ctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	before, err := r.cluster.Timeline(ctx)
	if err != nil {
		return err
	}
	if err := r.plannedTimeline(int64(before)); err != nil {
		return err
	}
	startNs := time.Now().UnixNano()
	switch s.Kind {
	case KillLeader:
		err = r.cluster.KillLeader(ctx)
	case KillLaggingLeader:
		var crash func() error
		if crash, err = r.cluster.StallReplication(ctx); err != nil {
			break
		}
		// The failover starts with the crash: the stall alone is none,
		// and the commits it loses come before.
		sleepUntil(time.Now().Add(s.Lag), nil)
		startNs = time.Now().UnixNano()
		err = crash()
	case Switchover:
		err = r.cluster.Switchover(ctx)
	case Failover:
		err = r.cluster.Failover(ctx)
	default:
		err = fmt.Errorf("%s is not a kind of failover", s.Kind)
	}
	if err != nil {
		return err
	}
	var tl int
	for {
		tl, err = r.cluster.Timeline(ctx)
		if err == nil && tl > before {
			break
		}
		if !sleepUntil(time.Now().Add(20*time.Millisecond), ctx.Done()) {
			return fmt.Errorf("no new primary on a timeline after %d: %v (%w)", before, err, ctx.Err())
		}
	}
	r.mu.Lock()
	r.failovers = append(r.failovers, FailoverEvent{Kind: s.Kind, StartNs: startNs, PromotedNs: time.Now().UnixNano(), Timeline: int64(tl)})
	r.faults[s.Kind]++
	r.mu.Unlock()
	if err := r.cluster.WaitHealthy(ctx); err != nil {
		return err
	}
	// The table's generation counts the timelines (see Check).
	if err := countReaches(ctx, r.cluster.DSN(r.dbname), `SELECT count(*) FROM `+postgres.HistoryTable(table)+` WHERE generation >= $1`, 1, tl); err != nil {
		return fmt.Errorf("no claim on the new primary of timeline %d: %w", tl, err)
	}
	return nil
}

// plannedTimeline returns an error unless tl is the timeline that the
// recorded failovers lead to: another failover would break the check,
// which accepts a lost claim only after a failover it knows of.
func (r *run) plannedTimeline(tl int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := int64(1)
	if len(r.failovers) > 0 {
		want = r.failovers[len(r.failovers)-1].Timeline
	}
	if tl != want {
		return fmt.Errorf("the cluster is on timeline %d, but the failovers of the run lead to %d: a failover the nemesis did not cause", tl, want)
	}
	return nil
}

// checkTimeline fails the run if the cluster failed over by itself.
func (r *run) checkTimeline(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	tl, err := r.cluster.Timeline(ctx)
	if err == nil {
		err = r.plannedTimeline(int64(tl))
	}
	if err != nil {
		r.failf("after the run: %v", err)
	}
}
