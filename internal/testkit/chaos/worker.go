package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

// WorkerConfig is what one worker process is told, as JSON in an
// environment variable.
type WorkerConfig struct {
	Worker, Incarnation int
	DSN                 string // through the fault proxy, or a cluster's multi-host DSN
	Table               string
	Out                 string // the output file; must not exist
	LateOut             string // the control timer's output file; must not exist
	OffsetMs            int64  // the wall-clock offset of the generator's clock
	TTL                 time.Duration
	MinNode, MaxNode    int64
	EpochBits           uint8 // of the layout; the rest is the default layout
	// Rate cap: Batch IDs are minted as fast as the generator allows, then
	// the worker sleeps until BatchEvery has passed since the batch began.
	Batch      int
	BatchEvery time.Duration
	// A lease is released by the worker after a random time of up to
	// MaxHold (zero: held until lost), so that node IDs are also reused
	// right after a release, not only after a loss.
	MaxHold time.Duration
	Seed    uint64
}

// Owner is the holder name of a worker incarnation: unique per process, so
// that the history table tells which process held each claim.
func (c WorkerConfig) Owner(pid int) string {
	return fmt.Sprintf("chaos-w%d.%d-%d", c.Worker, c.Incarnation, pid)
}

// Layout is the bit layout the worker mints in.
func (c WorkerConfig) Layout() snowflake.Layout {
	l := snowflake.DefaultLayout
	l.EpochBits = c.EpochBits
	return l
}

// RunWorker acquires node IDs and mints IDs under them until ctx ends,
// recording every lease, ID, loss and release in cfg.Out, and every late
// firing of a control timer in cfg.LateOut. On a loss it stops
// minting, records the loss and acquires again. When ctx ends it releases
// its lease (Registry.Close) and records the end. It returns an error only
// for failures that are not faults (a bad configuration, a full disk, an ID
// overflow, a fatal database error).
func RunWorker(ctx context.Context, cfg WorkerConfig) (err error) {
	pid := os.Getpid()
	owner := cfg.Owner(pid)
	layout := cfg.Layout()
	hdr := Header{
		Worker: int64(cfg.Worker), Incarnation: int64(cfg.Incarnation), PID: int64(pid),
		Owner: owner, OffsetMs: cfg.OffsetMs, Layout: layout,
	}
	w, err := Create(cfg.Out, hdr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	lw, err := Create(cfg.LateOut, hdr)
	if err != nil {
		return err
	}
	cctx, stopControl := context.WithCancel(ctx)
	controlled := make(chan error, 1)
	go func() { controlled <- control(cctx, lw) }()
	defer func() {
		stopControl()
		if cerr := <-controlled; err == nil {
			err = cerr
		}
	}()

	db, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := nodeid.New(db, nodeid.WithTTL(cfg.TTL), nodeid.WithNodeRange(cfg.MinNode, cfg.MaxNode),
		nodeid.WithTable(cfg.Table), nodeid.WithOwner(owner), nodeid.WithCreateTable(false))
	if err != nil {
		return err
	}
	m := &minter{
		cfg: cfg, w: w, reg: reg, layout: layout,
		rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Worker)<<32|uint64(cfg.Incarnation))),
		offset: time.Duration(cfg.OffsetMs) * time.Millisecond,
		ids:    make([]uint64, 0, cfg.Batch),
	}
	err = m.run(ctx)
	if cerr := reg.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err == nil {
		err = w.End(End{AtNs: wallNs()})
	}
	return err
}

type minter struct {
	cfg    WorkerConfig
	w      *Writer
	reg    *nodeid.Registry
	layout snowflake.Layout
	rng    *rand.Rand
	offset time.Duration
	ids    []uint64

	ahead, behind int64 // clock retries under the lease being minted under
}

// LostWait is how long a worker that finds its generator refusing waits
// for the lease's Done to close before it records that it never did.
const LostWait = 10 * time.Second

// Of the control timer: it is due every ControlEvery; a firing LateMin late
// or more is recorded.
const (
	ControlEvery = 50 * time.Millisecond
	LateMin      = 20 * time.Millisecond
)

// control runs the control timer until ctx ends, and closes w: a timer of
// no lease, due every ControlEvery, whose late firings it records in w at
// once (a worker killed later loses none). They show how late the loaded
// machine made the process's timers fire.
func control(ctx context.Context, w *Writer) (err error) {
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	for {
		due := time.Now().Add(ControlEvery)
		t := time.NewTimer(ControlEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if late := time.Since(due); late >= LateMin {
			fired := wallNs()
			if err := w.Late(Late{DueNs: fired - int64(late), FiredNs: fired}); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

func wallNs() int64 { return time.Now().UnixNano() }

// wallOf converts a monotonic instant (a lease deadline) to wall-clock unix
// nanoseconds.
func wallOf(t time.Time) int64 {
	now := time.Now()
	return now.UnixNano() + int64(t.Sub(now))
}

func causeOf(err error) int64 {
	switch {
	case errors.Is(err, nodeid.ErrExpired):
		return CauseExpired
	case errors.Is(err, nodeid.ErrTakenOver):
		return CauseTakeover
	case errors.Is(err, nodeid.ErrReleased):
		return CauseReleased
	case errors.Is(err, nodeid.ErrEvicted):
		return CauseEvicted
	case errors.Is(err, nodeid.ErrFailover):
		return CauseFailover
	}
	return CauseUnknown
}

func (m *minter) run(ctx context.Context) error {
	for ctx.Err() == nil {
		before := wallNs()
		lease, err := m.reg.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if postgres.Fatal(err) {
				return fmt.Errorf("acquire: %w", err)
			}
			// The database is down or unreachable: a fault, not a failure.
			sleep(ctx, 50*time.Millisecond+time.Duration(m.rng.Int64N(int64(100*time.Millisecond))))
			continue
		}
		if err := m.hold(ctx, lease, before); err != nil {
			return err
		}
	}
	return nil
}

// hold mints under lease until it is lost, released, or ctx ends.
func (m *minter) hold(ctx context.Context, lease *nodeid.Lease, before int64) error {
	at := wallNs()
	node, epoch := lease.NodeID(), lease.Epoch()
	m.ahead, m.behind = 0, 0

	// The moment Done closes, seen by a goroutine that does nothing else.
	var lostAt atomic.Int64
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-lease.Done():
			lostAt.Store(wallNs())
		case <-stopWatch:
		}
	}()
	defer func() { close(stopWatch); <-watched }()

	gen, genErr := snowflake.New(lease,
		snowflake.WithLayout(m.layout),
		snowflake.WithClock(func() time.Time { return time.Now().Add(m.offset) }))
	if err := m.w.Acquired(Acquired{Node: node, Epoch: epoch, PrevHorizon: lease.PreviousHorizon(),
		AtNs: at, DeadlineNs: wallOf(lease.Deadline()), ClaimedBeforeNs: before}); err != nil {
		return err
	}
	if genErr != nil {
		if !errors.Is(genErr, nodeid.ErrLeaseLost) {
			return fmt.Errorf("snowflake.New: %w", genErr)
		}
		return m.lost(lease, nil, &lostAt)
	}
	holdFor := time.Duration(1<<62 - 1)
	if m.cfg.MaxHold > 0 {
		holdFor = m.cfg.MaxHold/10 + time.Duration(m.rng.Int64N(int64(m.cfg.MaxHold)))
	}
	releaseAt := time.Now().Add(holdFor)
	for {
		if lease.Err() != nil {
			return m.lost(lease, gen, &lostAt)
		}
		if ctx.Err() != nil || time.Now().After(releaseAt) {
			started := wallNs()
			err := lease.Release(context.Background())
			failed := int64(0)
			if err != nil {
				failed = 1
			}
			if werr := m.w.Released(Released{Node: node, Epoch: epoch, StartNs: started, AtNs: wallNs(), Failed: failed,
				Ahead: m.ahead, Behind: m.behind}); werr != nil {
				return werr
			}
			return m.w.Flush()
		}
		start := time.Now()
		lostNow, err := m.batch(gen)
		if err != nil {
			return err
		}
		if len(m.ids) > 0 {
			if err := m.w.IDs(node, epoch, m.ids); err != nil {
				return err
			}
			if err := m.w.Flush(); err != nil {
				return err
			}
		}
		if lostNow {
			return m.lost(lease, gen, &lostAt)
		}
		t := time.NewTimer(time.Until(start.Add(m.cfg.BatchEvery)))
		select {
		case <-ctx.Done():
		case <-lease.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// batch mints up to cfg.Batch IDs into m.ids. It reports whether the lease
// was lost; clock errors are retried after a short pause.
func (m *minter) batch(gen *snowflake.Generator) (lost bool, err error) {
	m.ids = m.ids[:0]
	for len(m.ids) < m.cfg.Batch {
		id, err := gen.Generate()
		switch {
		case err == nil:
			m.ids = append(m.ids, uint64(id))
		case errors.Is(err, nodeid.ErrLeaseLost):
			return true, nil
		case errors.Is(err, nodeid.ErrClockAhead):
			// The generator's clock is ahead of the horizon recorded at the
			// last renewal; the next renewal raises it.
			m.ahead++
			time.Sleep(time.Millisecond)
		case errors.Is(err, nodeid.ErrClockBehind):
			m.behind++
			time.Sleep(10 * time.Millisecond)
		default:
			return false, fmt.Errorf("generate: %w", err)
		}
	}
	return false, nil
}

// lost records the loss of lease. gen, if not nil, is probed: it must refuse
// to mint.
func (m *minter) lost(lease *nodeid.Lease, gen *snowflake.Generator, lostAt *atomic.Int64) error {
	noticed := wallNs()
	// Done must close at once, but the minting loop may see the deadline
	// pass before the deadline timer runs, and a loaded machine may delay
	// that timer for seconds: wait for it up to LostWait, and leave the
	// judgment of its lateness to the checker, which knows how late the
	// process's control timer was.
	t := time.NewTimer(LostWait)
	select {
	case <-lease.Done():
	case <-t.C:
	}
	t.Stop()
	at := int64(0)
	select {
	case <-lease.Done():
		at = lostAt.Load()
		if at == 0 { // the watcher has not stored it yet
			at = wallNs()
		}
	default:
	}
	rec := Lost{Node: lease.NodeID(), Epoch: lease.Epoch(), Cause: causeOf(lease.Err()),
		DeadlineNs: wallOf(lease.Deadline()), LostAtNs: at, NoticedNs: noticed, Ahead: m.ahead, Behind: m.behind}
	if gen != nil {
		if id, err := gen.Generate(); err == nil {
			rec.ProbeMinted, rec.ProbeID = 1, uint64(id)
		}
	}
	if err := m.w.Lost(rec); err != nil {
		return err
	}
	if err := m.w.Flush(); err != nil {
		return err
	}
	// Free the row at once if the database still holds it for this lease
	// (a local expiry); after a takeover this changes nothing.
	_ = lease.Release(context.Background())
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
