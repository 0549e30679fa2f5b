package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/internal/store"
)

func (r *runner) renewal(ctx context.Context) error {
	cfg := r.cfg
	mode := cfg.ExecModes[0]
	st, err := r.scratch(ctx, "renew", cfg.RenewIDs)
	if err != nil {
		return err
	}
	t := st.Config().Table
	res := &report.RenewalResult{IDs: cfg.RenewIDs, Duration: report.Duration(cfg.Duration), ExecMode: mode}
	r.res.Renewal = res
	// Every node ID held by a live lease, as a full fleet holds them.
	if _, err := r.admin.ExecContext(ctx, `UPDATE `+t+` SET owner = 'bench-renew', epoch = epoch + 1, acquired_at = now(),
		expires_at = now() + interval '1 hour'`); err != nil {
		return err
	}
	if _, err := r.admin.ExecContext(ctx, `VACUUM (ANALYZE) `+t); err != nil {
		return err
	}
	keys := make([]store.Key, 0, cfg.RenewIDs)
	rows, err := r.admin.QueryContext(ctx, `SELECT node_id, owner, epoch FROM `+t+` ORDER BY node_id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k store.Key
		if err := rows.Scan(&k.NodeID, &k.Owner, &k.Epoch); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for rep := range cfg.Repeat {
		for j := range cfg.RenewWorkers {
			w := cfg.RenewWorkers[(j+rep)%len(cfg.RenewWorkers)]
			run, err := r.renewRate(ctx, st, keys, mode, w)
			run.Rep, run.Workers = rep+1, w
			if err != nil {
				run.Error = err.Error()
			}
			r.progress("renewal: rep %d, %d workers: %.0f renewals/s, p50 %s, p99 %s", rep+1, w, run.Rate, run.Latency.P50, run.Latency.P99)
			res.Runs = append(res.Runs, run)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// renewRate renews keys in turn from w goroutines, each with a connection
// of its own, for the configured duration after a warm-up.
func (r *runner) renewRate(ctx context.Context, st *store.Store, keys []store.Key, mode string, w int) (report.RenewalRun, error) {
	var run report.RenewalRun
	db := r.openDB(w, mode, nil)
	defer db.Close()
	s, err := store.New(db, st.Config())
	if err != nil {
		return run, err
	}
	if err := warm(ctx, db, w); err != nil {
		return run, err
	}
	loop := func(d time.Duration) (renewed, refused int64, lat []time.Duration, elapsed time.Duration, err error) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		start := time.Now()
		end := start.Add(d)
		for g := range w {
			wg.Go(func() {
				var ok, no int64
				var mine []time.Duration
				var first error
				for i := g; time.Now().Before(end); i = (i + w) % len(keys) {
					t0 := time.Now()
					o, err := s.Renew(ctx, keys[i], time.Hour, t0.Add(time.Hour).UnixMilli())
					if err != nil {
						first = err
						break
					}
					mine = append(mine, time.Since(t0))
					if o.OK {
						ok++
					} else {
						no++
					}
				}
				mu.Lock()
				defer mu.Unlock()
				renewed, refused = renewed+ok, refused+no
				lat = append(lat, mine...)
				if first != nil && err == nil {
					err = first
				}
			})
		}
		wg.Wait()
		return renewed, refused, lat, time.Since(start), err
	}
	if _, _, _, _, err := loop(min(time.Second, r.cfg.Duration/4)); err != nil {
		return run, err
	}
	renewed, refused, lat, elapsed, err := loop(r.cfg.Duration)
	run.Renewed, run.Refused = renewed, refused
	run.Rate = float64(renewed) / elapsed.Seconds()
	run.Latency = report.NewDist(lat)
	if err == nil && refused > 0 {
		err = fmt.Errorf("%d renewals of live leases changed nothing", refused)
	}
	return run, err
}
