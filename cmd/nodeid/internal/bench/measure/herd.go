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
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

// herdClaimer claims a node ID for claimer i and returns it, and a function
// that lets it go again (nil when a reset frees it).
type herdClaimer func(ctx context.Context, i int) (node int64, undo func(context.Context) error, err error)

func (r *runner) herd(ctx context.Context) error {
	cfg := r.cfg
	n, ids := cfg.HerdClaimers, cfg.HerdIDs
	mode := cfg.ExecModes[0]
	st, err := r.Scratch(ctx, "herd", ids)
	if err != nil {
		return err
	}
	stmts, err := r.CaptureSQL(ctx, st)
	if err != nil {
		return err
	}
	table := st.Config().Table
	res := &report.HerdResult{Claimers: n, IDs: ids, ExecMode: mode}
	r.Res.Herd = res

	r.Progressf("herd: opening %d connections, one Registry each", n)
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
		dbs[i] = r.OpenDB(1, mode, nil)
		regs[i], err = nodeid.New(dbs[i], append(session.NodeRange(int64(ids)), nodeid.WithTable(table),
			nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner(fmt.Sprintf("bench-herd-%d", i)))...)
		if err != nil {
			return err
		}
	}
	// Connect, run the Registry's one-off set-up, prepare its statements.
	if err := session.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		l, err := regs[i].Acquire(ctx)
		if err != nil {
			return err
		}
		return session.Release(ctx, l)
	}); err != nil {
		return fmt.Errorf("herd warm-up: %w", err)
	}

	// The claim function's parameters: owner, TTL, horizon, the range and
	// no limit.
	args := func(i int) []any {
		return []any{fmt.Sprintf("bench-herd-%d", i), session.BenchTTL.Milliseconds(), time.Now().Add(session.BenchTTL).UnixMilli(), 0, ids - 1, nil}
	}
	scan := func(rows *sql.Rows, err error) (int64, error) {
		// The claim's row: its status, "ok" when it claimed, and its
		// node_id among the other columns.
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return 0, err
		}
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(any)
		}
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return 0, err
			}
			return 0, errors.New("the claim returned no row")
		}
		if err := rows.Scan(vals...); err != nil {
			return 0, err
		}
		var status any
		var node int64 = -1
		for i, c := range cols {
			switch v := *(vals[i].(*any)); c {
			case "status":
				status = v
			case "node_id":
				switch n := v.(type) {
				case int64:
					node = n
				case int32:
					node = int64(n)
				}
			}
		}
		if status != "ok" || node < 0 {
			return 0, fmt.Errorf("no node ID claimed: status %v", status)
		}
		return node, rows.Close()
	}
	noSkip, dropNoSkip, err := r.noSkipClaim(ctx, table, stmts.Claim)
	if err != nil {
		return err
	}
	defer dropNoSkip()
	lockKey := "nodeid-bench:" + table
	claimers := map[string]herdClaimer{
		report.HerdLibrary: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			l, err := regs[i].Acquire(ctx)
			if err != nil {
				return 0, nil, err
			}
			return l.NodeID(), func(ctx context.Context) error { return session.Release(ctx, l) }, nil
		},
		report.HerdSQL: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			node, err := scan(dbs[i].QueryContext(ctx, stmts.Claim, args(i)...))
			return node, nil, err
		},
		report.HerdNoSkip: func(ctx context.Context, i int) (int64, func(context.Context) error, error) {
			node, err := scan(dbs[i].QueryContext(ctx, noSkip, args(i)...))
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
			node, err := scan(tx.QueryContext(ctx, stmts.Claim, args(i)...))
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
	r.Progressf("herd: one untimed herd of %s first", variants[0])
	if _, err := r.herdOnce(ctx, st, n, claimers[variants[0]]); err != nil {
		return fmt.Errorf("herd %s: %w", variants[0], err)
	}
	for rep := range cfg.Repeat {
		for j := range variants {
			v := variants[(j+rep)%len(variants)]
			r.Progressf("herd: rep %d, %s", rep+1, v)
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
func (r *runner) herdOnce(ctx context.Context, st *admin.Store, n int, claim herdClaimer) (report.HerdRun, error) {
	var run report.HerdRun
	if err := session.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		_, undo, err := claim(ctx, i)
		if err == nil && undo != nil {
			err = undo(ctx)
		}
		return err
	}); err != nil {
		return run, fmt.Errorf("warm-up: %w", err)
	}
	if err := r.Reset(ctx, st, false); err != nil {
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
	smp, err := session.StartSampler(ctx, r.Admin)
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
	run.Waits, err = smp.Finish()
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

	if err := session.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		if undos[i] != nil {
			return undos[i](ctx)
		}
		return nil
	}); err != nil {
		return run, fmt.Errorf("release: %w", err)
	}
	return run, r.Reset(ctx, st, false)
}

// noSkipClaim returns the claim statement with FOR UPDATE instead of FOR
// UPDATE SKIP LOCKED, and what undoes it. The claim is a call of the
// table's claim function, whose body holds the locking clause: the
// variant calls a copy of the function without SKIP LOCKED, created
// beside it (and dropped by the returned func).
func (r *runner) noSkipClaim(ctx context.Context, table, claim string) (string, func(), error) {
	if strings.Contains(claim, " SKIP LOCKED") { // a statement of its own
		return strings.ReplaceAll(claim, " SKIP LOCKED", ""), func() {}, nil
	}
	fn, copyFn := table+"_claim", table+"_claim_noskip"
	if !strings.Contains(claim, fn+"(") {
		return "", nil, fmt.Errorf("the claim statement calls no %s and has no SKIP LOCKED to take out", fn)
	}
	var def string
	if err := r.Admin.QueryRowContext(ctx, `SELECT pg_get_functiondef($1::regproc)`, fn).Scan(&def); err != nil {
		return "", nil, fmt.Errorf("the claim function's definition: %w", err)
	}
	body := strings.ReplaceAll(def, " SKIP LOCKED", "")
	if body == def {
		return "", nil, fmt.Errorf("the claim function %s has no SKIP LOCKED to take out", fn)
	}
	body = strings.Replace(body, fn+"(", copyFn+"(", 1)
	if _, err := r.Admin.ExecContext(ctx, body); err != nil {
		return "", nil, fmt.Errorf("a claim function without SKIP LOCKED: %w", err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = r.Admin.ExecContext(dctx, `DROP FUNCTION IF EXISTS `+copyFn)
	}
	return strings.Replace(claim, fn+"(", copyFn+"(", 1), drop, nil
}
