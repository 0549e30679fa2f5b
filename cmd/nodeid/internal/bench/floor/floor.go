package floor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/plancheck"
	"github.com/nodeid/nodeid/postgres"
)

// FloorConfig selects how hard RunFloor measures the claim at the floor
// of a durable write. DefaultFloorConfig gives the full settings,
// QuickFloorConfig the smoke run's.
type FloorConfig struct {
	// Iterations is the number of timed turns of the loop in which every
	// item runs once; the stale-statistics claims and a new process's
	// first Acquire are sampled a tenth and a fortieth as often.
	Iterations int
	// LargeIDs is the size of the large range (the small one holds
	// 1,024 node IDs), of the loop and of the stale-statistics claim.
	LargeIDs int
	// Drift is the number of claims of one node ID on one connection
	// whose first and last twelfths are compared.
	Drift int
	// Quick marks the smoke run in the results: its sizes are below the
	// targets' conditions, so nothing is judged.
	Quick bool
	// Progress receives a line per step, or nothing if nil.
	Progress io.Writer
}

// DefaultFloorConfig returns the full settings: 2,000 turns, 1,024
// and 65,536 node IDs, 12,000 claims for the drift.
func DefaultFloorConfig() FloorConfig {
	return FloorConfig{Iterations: 2000, LargeIDs: 65536, Drift: 12000}
}

// QuickFloorConfig returns the smoke run's settings: 300 turns, 1,024 and
// 4,096 node IDs, 480 claims for the drift (windows of 40): every step
// runs, in CI's budget of about a minute on a loaded 2-core machine.
func QuickFloorConfig() FloorConfig {
	return FloorConfig{Iterations: 300, LargeIDs: 4096, Drift: 480, Quick: true}
}

// Limits of a FloorConfig.
const (
	// MinIterations bounds Iterations from below: a p99 needs a hundred.
	MinIterations = 100
	// MinDrift bounds Drift from below: twelve windows of at least ten.
	MinDrift = 120
)

// Fixed sizes of the floor benchmark.
const (
	// floorSmallIDs is the small range: the default 1,024 node IDs.
	floorSmallIDs = postgres.DefaultMaxNode + 1
	// floorFree is how many node IDs of a filled range are left free,
	// spread over it.
	floorFree = 4
	// floorHold is the TTL of the leases that fill a range: they must not
	// lapse during the run (the tables' maximum TTL is nodeid.MaxTTL).
	floorHold = nodeid.MaxTTL - time.Hour
)

// Validate checks every field and returns a *FieldError naming the first
// bad value and the rule it breaks.
func (c FloorConfig) Validate() error {
	maxIDs := int(postgres.MaxNode + 1)
	switch {
	case c.Iterations < MinIterations || c.Iterations > measure.MaxSamples:
		return measure.NewFieldError("Iterations", c.Iterations, "it must be %d to %d", MinIterations, measure.MaxSamples)
	case c.LargeIDs < 4*floorFree || c.LargeIDs > maxIDs:
		return measure.NewFieldError("LargeIDs", c.LargeIDs, "a range must hold %d to %d node IDs", 4*floorFree, maxIDs)
	case c.Drift < MinDrift || c.Drift > measure.MaxSamples:
		return measure.NewFieldError("Drift", c.Drift, "it must be %d to %d", MinDrift, measure.MaxSamples)
	}
	return nil
}

func (c FloorConfig) planSamples() int  { return max(10, c.Iterations/10) }
func (c FloorConfig) firstSamples() int { return max(5, c.Iterations/40) }
func (c FloorConfig) driftWindow() int  { return c.Drift / 12 }

// RunFloor measures the claim at the floor on each target in turn and
// returns the results (Results.Floor; the environment is the client's,
// each server is described in its FloorServer). It works only on scratch
// tables that it creates (nodeid_bench_*) and drops before it moves to
// the next target, also when ctx is cancelled. A server whose measurement
// fails records why and the next still runs; RunFloor returns an error
// only when it cannot start or clean up.
func RunFloor(ctx context.Context, targets []session.Target, cfg FloorConfig) (*report.Results, error) {
	if ctx == nil {
		return nil, errors.New("bench: nil context")
	}
	if len(targets) == 0 {
		return nil, errors.New("bench: no server to measure")
	}
	for _, t := range targets {
		if t.Conn == nil {
			return nil, errors.New("bench: no connection configuration")
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &report.Results{Env: measure.HostEnvironment()}
	f := &report.FloorResult{Quick: cfg.Quick, Iterations: cfg.Iterations, SmallIDs: floorSmallIDs, LargeIDs: cfg.LargeIDs,
		Free: floorFree, PlanSamples: cfg.planSamples(), FirstSamples: cfg.firstSamples(), Drift: cfg.Drift, DriftWindow: cfg.driftWindow()}
	res.Floor = f
	start := time.Now()
	var errs []error
	res.Env.Dropped = true
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		s, tables, err := floorServer(ctx, t, cfg)
		res.Env.Tables = append(res.Env.Tables, tables...)
		f.Servers = append(f.Servers, s)
		if err != nil {
			res.Env.Dropped = false
			errs = append(errs, err)
		}
	}
	res.Env.Elapsed = report.Duration(time.Since(start).Round(time.Second))
	res.Env.LoadEnd = measure.LoadAverage()
	return res, errors.Join(append([]error{ctx.Err()}, errs...)...)
}

// floorServer measures one server and drops its scratch tables. It
// returns the tables it made; the error is the dropping's (or the
// connection's, when it could not start).
func floorServer(ctx context.Context, t session.Target, cfg FloorConfig) (report.FloorServer, []string, error) {
	r := session.New(t, cfg.Progress)
	s := report.FloorServer{Where: t.Where, PoolerSkipped: t.NoPooler}
	if t.Pooler != nil {
		s.Pooler = t.Pooler.Where
	}
	r.Admin = r.OpenDB(4, report.ModeExec, nil)
	defer r.Admin.Close()
	var env report.Environment
	if err := session.ServerEnvironment(ctx, r.Admin, &env); err != nil {
		err = fmt.Errorf("connect to %s: %w", t.Where, err)
		s.Error = err.Error()
		return s, nil, err
	}
	s.Server, s.Settings = env.Server, env.Settings
	if err := r.Admin.QueryRowContext(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('full_page_writes')`).Scan(&s.Fsync, &s.SynchronousCommit, &s.FullPageWrites); err != nil {
		s.Error = err.Error()
		return s, nil, r.DropTables()
	}
	r.Progressf("floor: %s (fsync=%s)", t.Where, s.Fsync)
	start := time.Now()
	fl := &floorRun{r: r, cfg: cfg, s: &s}
	if err := fl.run(ctx); err != nil {
		s.Error = err.Error()
		r.Progressf("floor failed: %v", err)
	}
	fl.close()
	s.Elapsed = report.Duration(time.Since(start).Round(time.Second))
	err := r.DropTables()
	return s, r.Res.Env.Tables, err
}

// floorRun is the measurement on one server.
type floorRun struct {
	r   *session.Session
	cfg FloorConfig
	s   *report.FloorServer

	closers []func()
	floor   string // the floor table
	floorDB *sql.DB
	n       int // the floor's turns, for the node ID it updates
}

func (fl *floorRun) close() {
	for i := len(fl.closers) - 1; i >= 0; i-- {
		fl.closers[i]()
	}
	fl.closers = nil
}

// item is one item of the loop as it is measured.
type item struct {
	res    report.FloorItem
	ctr    *session.Counter
	lat    []time.Duration
	stmts  int64
	writes int64
}

// time times f and counts what it sent (but database/sql's liveness
// pings, which are not the operation's).
func (it *item) time(f func() error) error {
	s0, w0 := it.ctr.Stmts.Load(), it.ctr.Operations()
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	s1, w1 := it.ctr.Stmts.Load(), it.ctr.Operations()
	if err != nil {
		return err
	}
	it.lat = append(it.lat, d)
	it.stmts += s1 - s0
	it.writes += w1 - w0
	return nil
}

// reset forgets what was timed so far: the warm-up.
func (it *item) reset() { it.lat, it.stmts, it.writes = it.lat[:0], 0, 0 }

// result returns the item's figures.
func (it *item) result() report.FloorItem {
	r := it.res
	r.Latency = report.NewDist(it.lat)
	r.Statements, r.RoundTrips = it.stmts, it.writes
	return r
}

// leased is a Registry on a pool of one connection of its own, and the
// counter of that pool.
type leased struct {
	reg *nodeid.Registry
	db  *sql.DB
	ctr *session.Counter
}

// registry opens a pool of one connection in mode and a Registry on st's
// table, closed when the run ends.
func (fl *floorRun) registry(st *admin.Store, mode, owner string) (leased, error) {
	return fl.registryOn(st, func(ctr *session.Counter) *sql.DB { return fl.r.OpenDB(1, mode, ctr) }, owner)
}

// registryOn is registry on the pool of one connection that open returns,
// counting into ctr.
func (fl *floorRun) registryOn(st *admin.Store, open func(ctr *session.Counter) *sql.DB, owner string) (leased, error) {
	ctr := &session.Counter{}
	db := open(ctr)
	reg, err := nodeid.New(db, append(session.NodeRange(st.Config().MaxNode+1), nodeid.WithTable(st.Config().Table),
		nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner(owner))...)
	if err != nil {
		db.Close()
		return leased{}, err
	}
	fl.closers = append(fl.closers, func() {
		_ = reg.Close()
		db.Close()
	})
	return leased{reg, db, ctr}, nil
}

// pair acquires a lease through l and releases it, timing each into acq
// and rel (either may be nil: untimed), and returns the node ID it got.
func pair(ctx context.Context, l leased, acq, rel *item) (int64, error) {
	var lease *nodeid.Lease
	get := func() (err error) {
		lease, err = l.reg.Acquire(ctx)
		return err
	}
	var err error
	if acq != nil {
		err = acq.time(get)
	} else {
		err = get()
	}
	if err != nil {
		return 0, fmt.Errorf("acquire: %w", err)
	}
	// Nothing was stamped: the node ID is claimable again at once.
	if err := nodeid.NewFence(lease).Bind(func() int64 { return 0 }); err != nil {
		return 0, err
	}
	put := func() error { return lease.Release(ctx) }
	if rel != nil {
		err = rel.time(put)
	} else {
		err = put()
	}
	if err != nil {
		return 0, fmt.Errorf("release: %w", err)
	}
	return lease.NodeID(), nil
}

// floorSQL is the floor: one row updated by its primary key, returning as
// a claim does; {t} is the floor table.
const floorSQL = `UPDATE {t} SET epoch = epoch + 1 WHERE node_id = $1 RETURNING node_id, epoch, now()`

// update runs the floor's UPDATE on db, on the next row.
func (fl *floorRun) update(ctx context.Context, db *sql.DB) error {
	var node, epoch int64
	var now time.Time
	fl.n++
	return db.QueryRowContext(ctx, strings.ReplaceAll(floorSQL, "{t}", fl.floor), fl.n%floorSmallIDs).Scan(&node, &epoch, &now)
}

func (fl *floorRun) run(ctx context.Context) error {
	r, cfg := fl.r, fl.cfg
	r.Progressf("floor: the tables: %d and %d node IDs filled with live leases but for %d each, and a copy of the lease table's rows for the floor",
		floorSmallIDs, cfg.LargeIDs, floorFree)
	small, err := r.Scratch(ctx, "small", floorSmallIDs)
	if err != nil {
		return err
	}
	large, err := r.Scratch(ctx, "large", cfg.LargeIDs)
	if err != nil {
		return err
	}
	stale, err := r.Scratch(ctx, "stale", cfg.LargeIDs)
	if err != nil {
		return err
	}
	drift, err := r.Scratch(ctx, "drift", floorSmallIDs)
	if err != nil {
		return err
	}
	for _, st := range []*admin.Store{stale, drift} {
		if err := fl.autovacuumOff(ctx, st); err != nil {
			return err
		}
	}
	plan := &report.FloorPlan{IDs: cfg.LargeIDs}
	fl.s.Plan = plan
	// The claim's plan on the stale table before it is filled; its text
	// and arguments from the wire.
	stmts, err := r.CaptureSQL(ctx, stale)
	if err != nil {
		return err
	}
	fl.check(ctx, plan, plancheck.PlanInitial, stmts, stale)
	// A process that claimed before the fill: its connection keeps the
	// claim prepared, with the plan PostgreSQL cached for it.
	before, err := fl.registry(stale, report.ModeCache, "bench-floor-stale")
	if err != nil {
		return err
	}
	for range session.WarmCycles {
		if _, err := pair(ctx, before, nil, nil); err != nil {
			return err
		}
	}
	for _, st := range []*admin.Store{small, large, stale} {
		t0 := time.Now()
		if err := fl.fill(ctx, st); err != nil {
			return err
		}
		r.Progressf("floor: filled %s in %s", st.Config().Table, time.Since(t0).Round(time.Millisecond))
	}
	for _, st := range []*admin.Store{small, large} {
		t := st.Config().Table
		if _, err := r.Admin.ExecContext(ctx, "VACUUM (ANALYZE) "+t+", "+postgres.HistoryTable(t)); err != nil {
			return err
		}
	}
	if err := fl.makeFloor(ctx, small); err != nil {
		return err
	}
	if err := fl.loop(ctx, small, large); err != nil {
		return err
	}
	// Where the claim's time goes at the large range: its plans, executed
	// in a transaction that is rolled back.
	plans, err := r.Explain(ctx, large, true)
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	for _, pl := range plans {
		pl.IDs, pl.Fraction, pl.State = cfg.LargeIDs, float64(cfg.LargeIDs-floorFree)/float64(cfg.LargeIDs), report.StateHeld
		pl.Text = strings.ReplaceAll(pl.Text, large.Config().Table, "<table>")
		fl.s.Plans = append(fl.s.Plans, pl)
	}
	if err := fl.plan(ctx, plan, before, stale, large, stmts); err != nil {
		return err
	}
	return fl.drift(ctx, drift)
}

// autovacuumOff turns autovacuum off on st's lease and history tables.
func (fl *floorRun) autovacuumOff(ctx context.Context, st *admin.Store) error {
	t := st.Config().Table
	for _, name := range []string{t, postgres.HistoryTable(t)} {
		if _, err := fl.r.Admin.ExecContext(ctx, "ALTER TABLE "+name+" SET (autovacuum_enabled = false)"); err != nil {
			return err
		}
	}
	return nil
}

// fillChunk is how many claims of a fill run on one pool: each chunk opens
// connections of its own, which plan the claim for the table's size at
// their start. A connection that prepared the claim on the empty table
// would keep the plan made for it, which reads every open history row
// while the range fills (see FloorPlan).
const fillChunk = 4096

// fill claims every node ID of st's range through the store, each for an
// owner of its own and with the horizon a holder records (its deadline),
// leaving live leases with open history rows; then it releases floorFree
// of them, spread over the range, so that they are claimable at once. It
// never analyses or vacuums the tables. Each claim is of a range of one
// node ID, its own: on a table that autovacuum leaves alone, a claim of
// the lowest free node ID of the whole range would step over the dead
// index entries of every node ID claimed before it, and the fill would
// take time quadratic in the range.
func (fl *floorRun) fill(ctx context.Context, st *admin.Store) error {
	n := int(st.Config().MaxNode + 1)
	free := map[int64]bool{}
	for k := range floorFree {
		free[int64(n*(2*k+1)/(2*floorFree))] = true
	}
	var mu sync.Mutex
	var keep []admin.ClaimResult
	var s *admin.Store
	for lo := 0; lo < n; lo += fillChunk {
		db := fl.r.OpenDB(8, report.ModeCache, nil)
		var err error
		if s, err = admin.New(db, st.Config()); err != nil {
			db.Close()
			return err
		}
		err = session.Parallel(ctx, min(fillChunk, n-lo), 8, func(ctx context.Context, i int) error {
			node := int64(lo + i)
			c, err := s.Claim(ctx, node, node, fmt.Sprintf("bench-floor-holder-%d", node), floorHold, time.Now().Add(floorHold).UnixMilli())
			if err != nil {
				return err
			}
			if !c.OK {
				return fmt.Errorf("fill %s: node ID %d was not claimable", st.Config().Table, node)
			}
			if free[c.Key.NodeID] {
				mu.Lock()
				keep = append(keep, c)
				mu.Unlock()
			}
			return nil
		})
		db.Close()
		if err != nil {
			return err
		}
	}
	db := fl.r.OpenDB(1, report.ModeCache, nil)
	defer db.Close()
	s, err := admin.New(db, st.Config())
	if err != nil {
		return err
	}
	for _, c := range keep {
		o, err := s.Release(ctx, c.Key, c.PrevHorizon)
		if err != nil {
			return err
		}
		if !o.OK {
			return fmt.Errorf("fill %s: the release of node ID %d changed nothing", st.Config().Table, c.Key.NodeID)
		}
	}
	return nil
}

// makeFloor makes the floor's table: the lease table's columns and rows
// (so its row width), with a primary key on node_id and no other index.
func (fl *floorRun) makeFloor(ctx context.Context, like *admin.Store) error {
	name, err := fl.r.Reserve(ctx, "floor")
	if err != nil {
		return err
	}
	t := like.Config().Table
	for _, q := range []string{
		"CREATE TABLE " + name + " (LIKE " + t + " INCLUDING DEFAULTS)",
		"INSERT INTO " + name + " SELECT * FROM " + t,
		"ALTER TABLE " + name + " ADD PRIMARY KEY (node_id)",
		"VACUUM (ANALYZE) " + name,
	} {
		if _, err := fl.r.Admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("the floor's table: %w", err)
		}
	}
	fl.floor = name
	return nil
}

// loop runs the items in turns: SELECT 1, the floor in both exec modes,
// and Acquire+Release at both range sizes in both exec modes; every
// fortieth turn, a new process's first Acquire too.
func (fl *floorRun) loop(ctx context.Context, small, large *admin.Store) error {
	r, cfg := fl.r, fl.cfg
	type unit struct {
		run   func() error
		items []*item
	}
	var units []unit
	newItem := func(op, mode string, ids int, ctr *session.Counter) *item {
		return &item{res: report.FloorItem{Op: op, Mode: mode, IDs: ids}, ctr: ctr}
	}
	selCtr := &session.Counter{}
	selDB := r.OpenDB(1, report.ModeCache, selCtr)
	fl.closers = append(fl.closers, func() { selDB.Close() })
	sel := newItem(report.FloorSelect1, report.ModeCache, 0, selCtr)
	units = append(units, unit{func() error {
		return sel.time(func() error {
			var one int
			return selDB.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		})
	}, []*item{sel}})
	// With a pooler, the floor's UPDATE also runs through it, and the exec
	// mode's Acquire and Release run only through it: exec mode is the
	// mode for a pooler, and the pooled floor is what they are held to.
	// Without one, they run in exec mode directly, unbound.
	pooler := r.Target.Pooler
	for _, mode := range []string{report.ModeCache, report.ModeExec, report.ModePooled} {
		if mode == report.ModePooled && pooler == nil {
			continue
		}
		// The floor's connections make every commit wait for its WAL
		// flush, whatever the server, database or role set. PgBouncer
		// passes no such parameter on: through it the server's own
		// setting holds (FloorServer.SynchronousCommit).
		ctr := &session.Counter{}
		var db *sql.DB
		if mode == report.ModePooled {
			db = r.OpenPooled(1, ctr)
		} else {
			db = r.OpenDBWith(1, mode, ctr, map[string]string{"synchronous_commit": "on"})
		}
		fl.closers = append(fl.closers, func() { db.Close() })
		if mode == report.ModeCache {
			fl.floorDB = db // also the drift's control
		}
		up := newItem(report.FloorUpdate, mode, 0, ctr)
		units = append(units, unit{func() error { return up.time(func() error { return fl.update(ctx, db) }) }, []*item{up}})
	}
	second := report.ModeExec
	if pooler != nil {
		second = report.ModePooled
	}
	for _, mode := range []string{report.ModeCache, second} {
		for _, st := range []*admin.Store{small, large} {
			ids := int(st.Config().MaxNode + 1)
			open := func(ctr *session.Counter) *sql.DB { return r.OpenDB(1, mode, ctr) }
			if mode == report.ModePooled {
				open = func(ctr *session.Counter) *sql.DB { return r.OpenPooled(1, ctr) }
			}
			l, err := fl.registryOn(st, open, fmt.Sprintf("bench-floor-%d-%s", ids, mode))
			if err != nil {
				return err
			}
			acq, rel := newItem(report.FloorAcquire, mode, ids, l.ctr), newItem(report.FloorRelease, mode, ids, l.ctr)
			units = append(units, unit{func() error {
				_, err := pair(ctx, l, acq, rel)
				return err
			}, []*item{acq, rel}})
		}
	}
	first := &report.FloorFirst{}
	fl.s.First = first
	var setup, firstLat, coldFloor []time.Duration
	samples := cfg.firstSamples()
	stride := cfg.Iterations / samples

	n := 0
	for _, u := range units {
		n += len(u.items)
	}
	r.Progressf("floor: %d turns of %d items, after %d untimed", cfg.Iterations, n, session.WarmCycles)
	for i := range session.WarmCycles + cfg.Iterations {
		if i == session.WarmCycles {
			for _, u := range units {
				for _, it := range u.items {
					it.reset()
				}
			}
		}
		for j := range units {
			if err := units[(i+j)%len(units)].run(); err != nil {
				return err
			}
		}
		if k := i - session.WarmCycles; k >= 0 && k%stride == stride/2 && first.Samples < samples {
			su, fa, err := fl.firstAcquire(ctx, small, first)
			if err != nil {
				return fmt.Errorf("a new process's first Acquire: %w", err)
			}
			cf, err := fl.coldUpdate(ctx)
			if err != nil {
				return fmt.Errorf("a new connection's first UPDATE: %w", err)
			}
			setup, firstLat, coldFloor = append(setup, su), append(firstLat, fa), append(coldFloor, cf)
		}
		if k := i - session.WarmCycles + 1; k > 0 && k%500 == 0 {
			r.Progressf("floor: %d turns", k)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	for _, u := range units {
		for _, it := range u.items {
			fl.s.Items = append(fl.s.Items, it.result())
		}
	}
	first.Setup, first.Acquire, first.ColdFloor = report.NewDist(setup), report.NewDist(firstLat), report.NewDist(coldFloor)
	return nil
}

// coldUpdate is the first Acquire's control: a new pool of one connection,
// opened with PingContext, untimed, then the floor's UPDATE, timed, as the
// connection's first statement. What it takes beyond the floor is what any
// statement pays in a new server process (its catalog caches are empty,
// its statement not yet prepared), which no claim can avoid.
func (fl *floorRun) coldUpdate(ctx context.Context) (time.Duration, error) {
	db := fl.r.OpenDBWith(1, report.ModeCache, &session.Counter{}, map[string]string{"synchronous_commit": "on"})
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return 0, err
	}
	t0 := time.Now()
	err := fl.update(ctx, db)
	return time.Since(t0), err
}

// firstAcquire is one new process: a pool of one connection, opened with
// PingContext (the connection's set-up), then its Registry's first
// Acquire, timed and counted, then Release and Close, untimed.
func (fl *floorRun) firstAcquire(ctx context.Context, st *admin.Store, first *report.FloorFirst) (setup, acquire time.Duration, err error) {
	ctr := &session.Counter{Capture: first.Samples == 0}
	db := fl.r.OpenDB(1, report.ModeCache, ctr)
	defer db.Close()
	reg, err := nodeid.New(db, append(session.NodeRange(st.Config().MaxNode+1), nodeid.WithTable(st.Config().Table),
		nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner("bench-floor-first"))...)
	if err != nil {
		return 0, 0, err
	}
	defer reg.Close()
	t0 := time.Now()
	if err := db.PingContext(ctx); err != nil {
		return 0, 0, err
	}
	setup = time.Since(t0)
	s0, w0 := ctr.Snapshot()
	ctr.ResetCaptured()
	t1 := time.Now()
	l, err := reg.Acquire(ctx)
	acquire = time.Since(t1)
	s1, w1 := ctr.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	if first.Samples == 0 {
		for _, q := range ctr.Captured() {
			first.Sent = append(first.Sent, session.Shorten(q))
		}
	}
	first.Samples++
	first.SetupRoundTrips += w0
	first.RoundTrips += w1 - w0
	first.Statements += s1 - s0
	first.MaxRoundTrips = max(first.MaxRoundTrips, w1-w0)
	if err := session.Release(ctx, l); err != nil {
		return 0, 0, err
	}
	return setup, acquire, nil
}

// plan times claims on the stale table, never analysed since its fill,
// then again after ANALYZE: on before's connection, which claimed before
// the fill, and on one opened after it, each turn with a claim on the
// analysed large table as a control; and inspects the claim's generic plan
// on it after the fill and after ANALYZE.
func (fl *floorRun) plan(ctx context.Context, p *report.FloorPlan, before leased, stale, control *admin.Store, stmts session.Statements) error {
	r, cfg := fl.r, fl.cfg
	after, err := fl.registry(stale, report.ModeCache, "bench-floor-stale-new")
	if err != nil {
		return err
	}
	c, err := fl.registry(control, report.ModeCache, "bench-floor-control")
	if err != nil {
		return err
	}
	fl.check(ctx, p, plancheck.PlanStale, stmts, stale)
	// measure times claims through the three, taking turns, after untimed
	// ones.
	measure := func(state string) (old, young, ctl report.Dist, err error) {
		ls := []leased{before, after, c}
		its := []*item{{ctr: before.ctr}, {ctr: after.ctr}, {ctr: c.ctr}}
		for i := range session.WarmCycles + cfg.planSamples() {
			if i == session.WarmCycles {
				for _, it := range its {
					it.reset()
				}
			}
			for j := range ls {
				k := (i + j) % len(ls)
				if _, err := pair(ctx, ls[k], its[k], nil); err != nil {
					return old, young, ctl, err
				}
			}
		}
		old, young, ctl = report.NewDist(its[0].lat), report.NewDist(its[1].lat), report.NewDist(its[2].lat)
		r.Progressf("floor: %s statistics: claim p50 %s (p99 %s) on a connection from before the fill, %s on one from after, control %s",
			state, old.P50, old.P99, young.P50, ctl.P50)
		return old, young, ctl, nil
	}
	r.Progressf("floor: %d claims on %d node IDs with statistics never gathered after the fill", cfg.planSamples(), cfg.LargeIDs)
	if p.Stale, p.StaleNew, p.ControlStale, err = measure("stale"); err != nil {
		return err
	}
	t := stale.Config().Table
	if _, err := r.Admin.ExecContext(ctx, "ANALYZE "+t+", "+postgres.HistoryTable(t)); err != nil {
		return err
	}
	fl.check(ctx, p, plancheck.PlanFresh, stmts, stale)
	if p.Analyzed, p.AnalyzedNew, p.ControlAnalyzed, err = measure("fresh"); err != nil {
		return err
	}
	return nil
}

// check records the plan inspector's verdict on the claim statement's
// generic plan on st's history; a failed inspection is recorded, not
// returned.
func (fl *floorRun) check(ctx context.Context, p *report.FloorPlan, state string, stmts session.Statements, st *admin.Store) {
	c := report.FloorPlanCheck{State: state}
	// The claim is a call of the table's function: the plans judged are
	// those of the statements it runs.
	in, err := plancheck.InspectNestedPlans(ctx, fl.r.Target.Conn, stmts.Claim, stmts.ClaimArgs, postgres.HistoryTable(st.Config().Table))
	if err == nil {
		// The scratch table's name says nothing: <table> stands for it.
		c.OnlyPrimaryKey, c.Verdict = in.OnlyPrimaryKey, strings.ReplaceAll(in.String(), st.Config().Table, "<table>")
	}
	if err != nil {
		c.Error = err.Error()
	}
	fl.r.Progressf("floor: the claim's generic plan, %s: %s%s", state, c.Verdict, c.Error)
	p.Checks = append(p.Checks, c)
}

// drift claims and releases the same node ID Drift times on one
// connection, on a table with autovacuum off, each turn with the floor's
// UPDATE as a control.
func (fl *floorRun) drift(ctx context.Context, st *admin.Store) error {
	r, cfg := fl.r, fl.cfg
	l, err := fl.registry(st, report.ModeCache, "bench-floor-drift")
	if err != nil {
		return err
	}
	if _, err := pair(ctx, l, nil, nil); err != nil { // the Registry's one-off set-up
		return err
	}
	acq, rel, up := &item{ctr: l.ctr}, &item{ctr: l.ctr}, &item{ctr: &session.Counter{}}
	nodes := map[int64]bool{}
	r.Progressf("floor: drift: %d claims and releases of one node ID on one connection", cfg.Drift)
	for i := range cfg.Drift {
		node, err := pair(ctx, l, acq, rel)
		if err != nil {
			return err
		}
		nodes[node] = true
		if err := up.time(func() error { return fl.update(ctx, fl.floorDB) }); err != nil {
			return err
		}
		if (i+1)%2000 == 0 {
			r.Progressf("floor: drift: %d claims", i+1)
		}
	}
	w := cfg.driftWindow()
	window := func(it *item, last bool) report.Dist {
		lat := it.lat[:w]
		if last {
			lat = it.lat[len(it.lat)-w:]
		}
		return report.NewDist(append([]time.Duration(nil), lat...))
	}
	fl.s.Drift = &report.FloorDrift{IDs: floorSmallIDs, Claims: cfg.Drift, Window: w,
		First: window(acq, false), Last: window(acq, true), ReleaseFirst: window(rel, false), ReleaseLast: window(rel, true),
		FloorFirst: window(up, false), FloorLast: window(up, true), NodeIDs: len(nodes)}
	r.Progressf("floor: drift: claim p50 %s over the first %d, %s over the last", fl.s.Drift.First.P50, w, fl.s.Drift.Last.P50)
	return nil
}
