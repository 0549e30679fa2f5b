package measure

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/postgres"
)

func (r *runner) overhead(ctx context.Context) error {
	cfg := r.cfg
	ids := postgres.DefaultMaxNode + 1
	st, err := r.Scratch(ctx, "overhead", ids)
	if err != nil {
		return err
	}
	stmts, err := r.CaptureSQL(ctx, st)
	if err != nil {
		return err
	}
	script, err := claimReleaseScript(stmts)
	if err != nil {
		return err
	}
	table := st.Config().Table
	res := &report.OverheadResult{IDs: ids, Duration: report.Duration(cfg.Duration), Pgbench: r.Res.Env.Pgbench,
		Script: script, Floor: floorScript(table, ids)}
	r.Res.Overhead = res
	havePgbench := r.Res.Env.Pgbench != ""
	if !havePgbench {
		res.Pgbench = fmt.Sprintf("%s not found: the library's rates are measured alone", cfg.Pgbench)
		r.Note("pgbench (%s) was not found: the overhead scenario has no pgbench figures", cfg.Pgbench)
	}
	chunks := max(1, int(cfg.Duration/overheadChunk))
	chunk := cfg.Duration / time.Duration(chunks)
	secs := int((chunk + time.Second - 1) / time.Second)
	res.Chunks, res.Chunk = chunks, report.Duration(chunk)
	vars := []string{"lo=0", fmt.Sprintf("hi=%d", ids-1), "owner=bench-pgbench",
		fmt.Sprintf("ttl=%d", session.BenchTTL.Milliseconds()), fmt.Sprintf("horizon=%d", time.Now().Add(session.BenchTTL).UnixMilli())}
	if havePgbench {
		res.Vars = vars
	}
	for rep := range cfg.Repeat {
		for _, mode := range cfg.ExecModes {
			for _, c := range cfg.Concurrency {
				run := report.OverheadRun{Rep: rep + 1, Mode: mode, PgbenchMode: report.PgbenchMode[mode], Concurrency: c}
				if err := r.overheadRun(ctx, st, &run, chunks, chunk, secs, script, res.Floor, vars, havePgbench); err != nil {
					return err
				}
				r.Progressf("overhead: rep %d, %s, concurrency %d: library %.0f/s (history emptied %.0f/s), store %.0f/s, pgbench %.0f/s, floor %.0f/s",
					rep+1, mode, c, run.Library, run.Emptied, run.Store, run.Pgbench, run.Floor)
				res.Runs = append(res.Runs, run)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return nil
}

// overheadChunk is the length of one turn of each side: the library, the
// Store, pgbench and the floor take turns in chunks of this length, in an
// order that rotates, so that a change in the machine's load falls on all
// of them alike.
const overheadChunk = 2 * time.Second

// tally sums the chunks of one side.
type tally struct {
	ops     float64
	elapsed time.Duration
	cpu     time.Duration
}

func (t tally) rate() float64 {
	if t.elapsed <= 0 {
		return 0
	}
	return t.ops / t.elapsed.Seconds()
}

// cpuPerOp returns the client CPU time per operation in microseconds.
func (t tally) cpuPerOp() float64 {
	if t.ops <= 0 {
		return 0
	}
	return float64(t.cpu.Microseconds()) / t.ops
}

// overheadRun measures one repetition at one exec mode and concurrency:
// every side runs chunks chunks of length chunk (pgbench secs seconds),
// taking turns.
func (r *runner) overheadRun(ctx context.Context, st *admin.Store, run *report.OverheadRun, chunks int, chunk time.Duration,
	secs int, script, floor string, vars []string, havePgbench bool) error {
	c, mode := run.Concurrency, run.Mode
	lib, err := r.libraryLoop(ctx, st, mode, c, chunk)
	if err != nil {
		return err
	}
	defer lib.close()
	store, err := r.storeLoop(ctx, st, mode, c, chunk)
	if err != nil {
		return err
	}
	defer store.close()
	var tl, ts, te, tp, tf tally
	pgbench := func(t *tally, name, script string, vars []string) func() error {
		return func() error {
			p, err := r.pgbench(ctx, name, script, run.PgbenchMode, c, secs, vars)
			if err == nil {
				t.ops += p.tps * float64(secs)
				t.elapsed += time.Duration(secs) * time.Second
				t.cpu += p.cpu
			}
			return err
		}
	}
	parts := []func() error{
		func() error { return lib.run(ctx, chunk, &tl) },
		func() error { return store.run(ctx, chunk, &ts) },
		func() error {
			if err := r.Reset(ctx, st, false); err != nil {
				return err
			}
			return lib.run(ctx, chunk, &te)
		},
	}
	if havePgbench {
		parts = append(parts, pgbench(&tp, "claim_release.sql", script, vars), pgbench(&tf, "floor.sql", floor, nil))
	}
	for k := range chunks {
		for j := range parts {
			if err := r.Reset(ctx, st, true); err != nil {
				return err
			}
			if err := parts[(j+k+run.Rep)%len(parts)](); err != nil && run.Error == "" {
				run.Error = err.Error()
			}
		}
	}
	run.Library, run.LibraryCPU = tl.rate(), tl.cpuPerOp()
	run.Store, run.StoreCPU = ts.rate(), ts.cpuPerOp()
	run.Emptied = te.rate()
	run.Pgbench, run.PgbenchCPU = tp.rate(), tp.cpuPerOp()
	run.Floor = tf.rate()
	return nil
}

// pairLoop calls pair from c goroutines, each on its own connection of db.
type pairLoop struct {
	db    *sql.DB
	c     int
	pair  func(context.Context) error
	close func()
}

// newPairLoop opens the pool's connections and runs pair untimed for a
// while, which prepares the statements on every connection.
func (r *runner) newPairLoop(ctx context.Context, db *sql.DB, c int, warmFor time.Duration, pair func(context.Context) error, closer func()) (*pairLoop, error) {
	p := &pairLoop{db: db, c: c, pair: pair, close: closer}
	if err := session.Warm(ctx, db, c); err != nil {
		closer()
		return nil, err
	}
	var t tally
	if err := p.run(ctx, min(time.Second, warmFor), &t); err != nil {
		closer()
		return nil, err
	}
	return p, nil
}

// run calls pair from c goroutines for d and adds the calls, the time and
// this process's CPU time to t.
func (p *pairLoop) run(ctx context.Context, d time.Duration, t *tally) error {
	var (
		n     atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	cpu0 := session.ProcessCPU()
	start := time.Now()
	end := start.Add(d)
	for range p.c {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := p.pair(ctx); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	t.ops += float64(n.Load())
	t.elapsed += time.Since(start)
	t.cpu += session.ProcessCPU() - cpu0
	return first
}

// libraryLoop returns a loop of Acquire then Release through one Registry
// on a pool of c connections.
func (r *runner) libraryLoop(ctx context.Context, st *admin.Store, mode string, c int, chunk time.Duration) (*pairLoop, error) {
	db := r.OpenDB(c, mode, nil)
	reg, err := nodeid.New(db, append(session.NodeRange(st.Config().MaxNode+1), nodeid.WithTable(st.Config().Table),
		nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner("bench-library"))...)
	if err != nil {
		db.Close()
		return nil, err
	}
	return r.newPairLoop(ctx, db, c, chunk/4, func(ctx context.Context) error {
		l, err := reg.Acquire(ctx)
		if err != nil {
			return err
		}
		return session.Release(ctx, l)
	}, func() {
		_ = reg.Close()
		db.Close()
	})
}

// storeLoop returns the same loop through admin.Store's Claim and
// Release alone.
func (r *runner) storeLoop(ctx context.Context, st *admin.Store, mode string, c int, chunk time.Duration) (*pairLoop, error) {
	db := r.OpenDB(c, mode, nil)
	s, err := admin.New(db, st.Config())
	if err != nil {
		db.Close()
		return nil, err
	}
	return r.newPairLoop(ctx, db, c, chunk/4, func(ctx context.Context) error {
		cl, err := s.Claim(ctx, s.Config().MinNode, s.Config().MaxNode, "bench-store", session.BenchTTL, time.Now().Add(session.BenchTTL).UnixMilli())
		ok := cl.OK
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("no node ID free")
		}
		o, err := s.Release(ctx, cl.Key, cl.PrevHorizon)
		if err == nil && !o.OK {
			err = fmt.Errorf("release of node ID %d changed nothing", cl.NodeID)
		}
		return err
	}, func() { db.Close() })
}
