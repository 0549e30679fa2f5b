package measure

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/internal/store"
)

// herdClaimer claims a node ID for claimer i and returns it, and a function
// that lets it go again (nil when a reset frees it).
type herdClaimer func(ctx context.Context, i int) (node int64, undo func(context.Context) error, err error)

func (r *runner) herd(ctx context.Context) error {
	cfg := r.cfg
	n, ids := cfg.HerdClaimers, cfg.HerdIDs
	mode := cfg.ExecModes[0]
	st, err := r.scratch(ctx, "herd", ids)
	if err != nil {
		return err
	}
	stmts, err := r.captureSQL(ctx, st)
	if err != nil {
		return err
	}
	table := st.Config().Table
	res := &report.HerdResult{Claimers: n, IDs: ids, ExecMode: mode}
	r.res.Herd = res

	r.progress("herd: opening %d connections, one Registry each", n)
	dbs := make([]*sql.DB, n)
	regs := make([]*nodeid.Registry, n)
	defer func() {
		for i := range n {
			if regs[i] != nil {
				_ = regs[i].Close()
			}
			if dbs[i] != nil {
				dbs[i].Close()
			}
		}
	}()
	for i := range n {
		dbs[i] = r.openDB(1, mode, nil)
		regs[i], err = nodeid.New(dbs[i], append(nodeRange(int64(ids)), nodeid.WithTable(table),
			nodeid.WithTTL(benchTTL), nodeid.WithOwner(fmt.Sprintf("bench-herd-%d", i)))...)
		if err != nil {
			return err
		}
	}
	// Connect, run the Registry's one-off set-up, prepare its statements.
	if err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		l, err := regs[i].Acquire(ctx)
		if err != nil {
			return err
		}
		return release(ctx, l)
	}); err != nil {
		return fmt.Errorf("herd warm-up: %w", err)
	}

	args := func(i int) []any {
		return []any{0, ids - 1, fmt.Sprintf("bench-herd-%d", i), benchTTL.Milliseconds(), time.Now().Add(benchTTL).UnixMilli()}
	}
	scan := func(row *sql.Row) (int64, error) {
		// The claim's row: the node ID first, then its other columns; no
		// row when nothing was claimable.
		var node int64
		rest := make([]any, 6)
		for i := range rest {
			rest[i] = new(any)
		}
		err := row.Scan(append([]any{&node}, rest...)...)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, errors.New("no node ID free")
		}
		return node, err
	}
	noSkip := strings.ReplaceAll(stmts.claim, " SKIP LOCKED", "")
	if noSkip == stmts.claim {
		return errors.New("the claim statement has no SKIP LOCKED to take out")
	}
	lockKey := "nodeid-bench:" + table
	claimers := map[string]herdClaimer{
		report.HerdLibrary: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			l, err := regs[i].Acquire(ctx)
			if err != nil {
				return 0, nil, err
			}
			return l.NodeID(), func(ctx context.Context) error { return release(ctx, l) }, nil
		},
		report.HerdSQL: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			node, err := scan(dbs[i].QueryRowContext(ctx, stmts.claim, args(i)...))
			return node, nil, err
		},
		report.HerdNoSkip: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			node, err := scan(dbs[i].QueryRowContext(ctx, noSkip, args(i)...))
			return node, nil, err
		},
		report.HerdAdvisory: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			tx, err := dbs[i].BeginTx(ctx, nil)
			if err != nil {
				return 0, nil, err
			}
			defer tx.Rollback() //nolint:errcheck // a no-op after Commit
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, lockKey); err != nil {
				return 0, nil, err
			}
			node, err := scan(tx.QueryRowContext(ctx, stmts.claim, args(i)...))
			if err != nil {
				return 0, nil, err
			}
			return node, nil, tx.Commit()
		},
	}
	variants := report.HerdVariants
	if len(cfg.HerdVariants) > 0 {
		variants = cfg.HerdVariants
	}
	// The first herd after the connections opened runs markedly slower than
	// the later ones, whatever the variant (the backends' first concurrent
	// work): one untimed herd takes that cost.
	r.progress("herd: one untimed herd of %s first", variants[0])
	if _, err := r.herdOnce(ctx, st, n, claimers[variants[0]]); err != nil {
		return fmt.Errorf("herd %s: %w", variants[0], err)
	}
	for rep := range cfg.Repeat {
		for j := range variants {
			v := variants[(j+rep)%len(variants)]
			r.progress("herd: rep %d, %s", rep+1, v)
			run, err := r.herdOnce(ctx, st, n, claimers[v])
			if err != nil {
				return fmt.Errorf("herd %s: %w", v, err)
			}
			run.Rep, run.Variant = rep+1, v
			res.Runs = append(res.Runs, run)
		}
	}
	return nil
}

// herdOnce warms every claimer's connection with one claim, resets the
// table, then releases all claimers at once and times each claim while
// sampling lock waits.
func (r *runner) herdOnce(ctx context.Context, st *store.Store, n int, claim herdClaimer) (report.HerdRun, error) {
	var run report.HerdRun
	if err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		_, undo, err := claim(ctx, i)
		if err == nil && undo != nil {
			err = undo(ctx)
		}
		return err
	}); err != nil {
		return run, fmt.Errorf("warm-up: %w", err)
	}
	if err := r.reset(ctx, st, false); err != nil {
		return run, err
	}

	// A claimer that waits forever (a bug in a variant) must not hang the run.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var (
		start       = make(chan struct{})
		ready, done sync.WaitGroup
		lat         = make([]time.Duration, n)
		nodes       = make([]int64, n)
		undos       = make([]func(context.Context) error, n)
		errs        = make([]error, n)
		finished    = make([]time.Time, n)
		t0          time.Time
	)
	ready.Add(n)
	for i := range n {
		done.Go(func() {
			ready.Done()
			<-start
			s := time.Now()
			nodes[i], undos[i], errs[i] = claim(cctx, i)
			finished[i] = time.Now()
			lat[i] = finished[i].Sub(s)
		})
	}
	ready.Wait()
	smp, err := startSampler(ctx, r.admin)
	if err != nil {
		close(start)
		done.Wait()
		return run, err
	}
	t0 = time.Now()
	close(start)
	done.Wait()
	var last time.Time
	for _, f := range finished {
		if f.After(last) {
			last = f
		}
	}
	run.Wall = report.Duration(last.Sub(t0))
	run.Start, run.End = t0, last
	run.Waits, err = smp.finish()
	if err != nil {
		return run, fmt.Errorf("sampling pg_stat_activity: %w", err)
	}

	seen := map[int64]bool{}
	var ok []time.Duration
	for i := range n {
		if errs[i] != nil {
			run.Failed++
			if run.Error == "" {
				run.Error = errs[i].Error()
			}
			continue
		}
		run.Succeeded++
		ok = append(ok, lat[i])
		seen[nodes[i]] = true
	}
	run.Distinct = len(seen)
	run.Latency = report.NewDist(ok)
	for _, d := range ok { // sorted by NewDist
		run.Millis = append(run.Millis, math.Round(report.Millis(d)*1000)/1000)
	}

	if err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		if undos[i] != nil {
			return undos[i](ctx)
		}
		return nil
	}); err != nil {
		return run, fmt.Errorf("release: %w", err)
	}
	return run, r.reset(ctx, st, false)
}
