package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/postgres"
)

// OverheadResult compares Acquire+Release through the library with pgbench
// running the same two statements on the same table, at each concurrency
// and exec mode, and with pgbench's floor of two plain single-row UPDATEs.
type OverheadResult struct {
	IDs      int           `json:"ids"`
	Duration Duration      `json:"duration"`
	Pgbench  string        `json:"pgbench"` // the pgbench version, or why it did not run
	Script   string        `json:"script"`  // claim+release, as pgbench ran it
	Floor    string        `json:"floor"`   // the floor script
	Vars     []string      `json:"vars"`    // pgbench -D definitions
	Runs     []OverheadRun `json:"runs"`
}

// OverheadRun is one repetition at one exec mode and concurrency. Rates are
// per second: Acquire+Release pairs for the library, transactions of the
// script (one claim and one release; two UPDATEs for the floor) for
// pgbench.
type OverheadRun struct {
	Rep         int     `json:"rep"`
	Mode        string  `json:"mode"`
	PgbenchMode string  `json:"pgbench_mode"`
	Concurrency int     `json:"concurrency"`
	Library     float64 `json:"library"`
	// Store is the same pair through postgres.Store alone: the statements
	// with database/sql and pgx, without the lease's renewal goroutine,
	// timer and bookkeeping.
	Store   float64 `json:"store"`
	Pgbench float64 `json:"pgbench"`
	Floor   float64 `json:"floor"`
	// LibraryCPU and PgbenchCPU are the client's CPU time per pair or
	// transaction, in microseconds: this process's, pgbench's. Client and
	// server share the machine, so client CPU is taken from the server.
	LibraryCPU float64 `json:"library_cpu_us"`
	StoreCPU   float64 `json:"store_cpu_us"`
	PgbenchCPU float64 `json:"pgbench_cpu_us"`
	Error      string  `json:"error,omitempty"`
}

func (r *runner) overhead(ctx context.Context) error {
	cfg := r.cfg
	ids := postgres.DefaultMaxNode + 1
	st, err := r.scratch(ctx, "overhead", ids)
	if err != nil {
		return err
	}
	stmts, err := r.captureSQL(ctx, st)
	if err != nil {
		return err
	}
	script, err := claimReleaseScript(stmts)
	if err != nil {
		return err
	}
	table := st.Config().Table
	res := &OverheadResult{IDs: ids, Duration: Duration(cfg.Duration), Pgbench: r.res.Env.Pgbench,
		Script: script, Floor: floorScript(table, ids)}
	r.res.Overhead = res
	havePgbench := r.res.Env.Pgbench != ""
	if !havePgbench {
		res.Pgbench = fmt.Sprintf("%s not found: the library's rates are measured alone", cfg.Pgbench)
		r.note("pgbench (%s) was not found: the overhead scenario has no pgbench figures", cfg.Pgbench)
	}
	secs := int((cfg.Duration + time.Second - 1) / time.Second)
	for rep := range cfg.Repeat {
		for _, mode := range cfg.ExecModes {
			for _, c := range cfg.Concurrency {
				run := OverheadRun{Rep: rep + 1, Mode: mode, PgbenchMode: pgbenchMode[mode], Concurrency: c}
				// The order rotates, so that drift in the machine's load
				// does not favour one side.
				parts := []func() error{
					func() (err error) {
						run.Library, run.LibraryCPU, err = r.libraryRate(ctx, st, mode, c)
						return err
					},
					func() (err error) {
						run.Store, run.StoreCPU, err = r.storeRate(ctx, st, mode, c)
						return err
					},
				}
				if havePgbench {
					vars := []string{"lo=0", fmt.Sprintf("hi=%d", ids-1), "owner=bench-pgbench",
						fmt.Sprintf("ttl=%d", benchTTL.Milliseconds()), fmt.Sprintf("horizon=%d", time.Now().Add(benchTTL).UnixMilli())}
					res.Vars = vars
					parts = append(parts,
						func() error {
							p, err := r.pgbench(ctx, "claim_release.sql", script, run.PgbenchMode, c, secs, vars)
							run.Pgbench = p.tps
							if p.tps > 0 {
								run.PgbenchCPU = float64(p.cpu.Microseconds()) / (p.tps * float64(secs))
							}
							return err
						},
						func() error {
							p, err := r.pgbench(ctx, "floor.sql", res.Floor, run.PgbenchMode, c, secs, nil)
							run.Floor = p.tps
							return err
						})
				}
				for k := range parts {
					if err := r.reset(ctx, st); err != nil {
						return err
					}
					if err := parts[(k+rep)%len(parts)](); err != nil && run.Error == "" {
						run.Error = err.Error()
					}
				}
				r.progress("overhead: rep %d, %s, concurrency %d: library %.0f/s, store %.0f/s, pgbench %.0f/s, floor %.0f/s",
					rep+1, mode, c, run.Library, run.Store, run.Pgbench, run.Floor)
				res.Runs = append(res.Runs, run)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return nil
}

// libraryRate runs c goroutines that Acquire and Release through one
// Registry on a pool of c connections for the configured duration, after a
// warm-up, and returns the pairs per second and this process's CPU time
// per pair in microseconds.
func (r *runner) libraryRate(ctx context.Context, st *postgres.Store, mode string, c int) (rate, cpuUs float64, err error) {
	db := r.openDB(c, mode, nil)
	defer db.Close()
	reg, err := nodeid.New(db, nodeid.WithTable(st.Config().Table), nodeid.WithNodeRange(0, st.Config().MaxNode),
		nodeid.WithTTL(benchTTL), nodeid.WithOwner("bench-library"))
	if err != nil {
		return 0, 0, err
	}
	defer reg.Close()
	return r.pairRate(ctx, db, c, func(ctx context.Context) error {
		l, err := reg.Acquire(ctx)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	})
}

// storeRate is libraryRate through postgres.Store's Claim and Release.
func (r *runner) storeRate(ctx context.Context, st *postgres.Store, mode string, c int) (rate, cpuUs float64, err error) {
	db := r.openDB(c, mode, nil)
	defer db.Close()
	s, err := postgres.NewStore(db, st.Config())
	if err != nil {
		return 0, 0, err
	}
	return r.pairRate(ctx, db, c, func(ctx context.Context) error {
		cl, ok, err := s.Claim(ctx, "bench-store", benchTTL, time.Now().Add(benchTTL).UnixMilli())
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("no node ID free")
		}
		o, err := s.Release(ctx, cl.Key, 0, false)
		if err == nil && !o.OK {
			err = fmt.Errorf("release of node ID %d changed nothing", cl.NodeID)
		}
		return err
	})
}

// pairRate calls pair from c goroutines on db's c connections for the
// configured duration, after a warm-up, and returns the calls per second
// and this process's CPU time per call in microseconds.
func (r *runner) pairRate(ctx context.Context, db *sql.DB, c int, pair func(context.Context) error) (rate, cpuUs float64, err error) {
	if err := warm(ctx, db, c); err != nil {
		return 0, 0, err
	}
	loop := func(d time.Duration) (int64, time.Duration, error) {
		var (
			n     atomic.Int64
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
		)
		start := time.Now()
		end := start.Add(d)
		for range c {
			wg.Go(func() {
				for time.Now().Before(end) {
					if err := pair(ctx); err != nil {
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
		return n.Load(), time.Since(start), first
	}
	// The warm-up prepares the statements on every connection.
	if _, _, err := loop(min(time.Second, r.cfg.Duration/4)); err != nil {
		return 0, 0, err
	}
	cpu0 := processCPU()
	n, elapsed, err := loop(r.cfg.Duration)
	cpu := processCPU() - cpu0
	if err != nil || n == 0 {
		return 0, 0, err
	}
	return float64(n) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(n), nil
}
