package measure

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/postgres"
)

// orderBurst is how many Acquires in a row, without releasing, each state
// checks for lowest-free order.
const orderBurst = 10

func (r *runner) scale(ctx context.Context) error {
	cfg := r.cfg
	mode := cfg.ExecModes[0]
	res := &report.ScaleResult{Samples: cfg.Samples, ExecMode: mode}
	r.Res.Scale = res
	type sized struct {
		st  *admin.Store
		reg *nodeid.Registry
		db  *sql.DB
	}
	tables := map[int]sized{}
	defer func() {
		for _, t := range tables {
			_ = t.reg.Close()
			t.db.Close()
		}
	}()
	for _, ids := range cfg.ScaleIDs {
		if _, ok := tables[ids]; ok {
			continue
		}
		st, err := r.Scratch(ctx, fmt.Sprintf("scale%d", ids), ids)
		if err != nil {
			return err
		}
		db := r.OpenDB(1, mode, nil)
		reg, err := nodeid.New(db, append(session.NodeRange(int64(ids)), nodeid.WithTable(st.Config().Table),
			nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner("bench-scale"))...)
		if err != nil {
			db.Close()
			return err
		}
		tables[ids] = sized{st, reg, db}
	}
	largest := slices.Max(cfg.ScaleIDs)
	top := slices.Max(cfg.Held)
	for rep := range cfg.Repeat {
		for _, ids := range cfg.ScaleIDs {
			t := tables[ids]
			fracs := slices.Clone(cfg.Held)
			slices.Sort(fracs)
			if rep%2 == 1 {
				slices.Reverse(fracs)
			}
			type point struct {
				f     float64
				state string
			}
			points := []point{{0, report.StateFresh}}
			for _, f := range fracs {
				points = append(points, point{f, report.StateHeld})
			}
			points = append(points, point{top, report.StateUnvacuumed}, point{top, report.StateLapsed}, point{0, report.StateLapsed})
			for _, p := range points {
				free, held, err := r.setState(ctx, t.st, p.f, p.state, rep)
				if err != nil {
					return err
				}
				sp, err := r.scalePoint(ctx, t.reg, free)
				if err != nil {
					return fmt.Errorf("%d node IDs, %.1f%% held (%s): %w", ids, 100*p.f, p.state, err)
				}
				sp.Rep, sp.IDs, sp.Fraction, sp.State, sp.Held = rep+1, ids, p.f, p.state, held
				res.Points = append(res.Points, sp)
				r.Progressf("scale: rep %d, %d IDs, %5.1f%% held (%s): p50 %s p99 %s, order violations %d",
					rep+1, ids, 100*p.f, p.state, sp.Latency.P50, sp.Latency.P99, sp.OrderViolations)
				if rep == 0 && ids == largest && p.f == top && (p.state == report.StateLapsed || p.state == report.StateHeld) {
					plans, err := r.Explain(ctx, t.st, p.state == report.StateHeld)
					if err != nil {
						return fmt.Errorf("explain: %w", err)
					}
					for _, pl := range plans {
						pl.IDs, pl.Fraction, pl.State = ids, p.f, p.state
						res.Plans = append(res.Plans, pl)
					}
				}
			}
		}
	}
	return nil
}

// remake drops st's tables and makes them again from the DDL of Schema.SQL,
// and returns their node IDs, all claimable.
func (r *runner) remake(ctx context.Context, st *admin.Store) ([]int64, int, error) {
	t := st.Config().Table
	if _, err := r.Admin.ExecContext(ctx, "DROP TABLE "+t+", "+postgres.HistoryTable(t)+", "+postgres.ConfigTable(t)); err != nil {
		return nil, 0, err
	}
	if err := st.Apply(ctx, nodeid.MaxTTL); err != nil {
		return nil, 0, err
	}
	free := make([]int64, st.Config().MaxNode+1)
	for i := range free {
		free[i] = int64(i)
	}
	return free, 0, nil
}

// setState makes a fraction f of st's node IDs, picked at random (seeded by
// rep), held by live leases with open history rows, and the rest free or,
// in StateLapsed, lapsed. It vacuums and analyses the tables unless the
// state is StateUnvacuumed. It returns the claimable node IDs in ascending
// order and how many are held.
func (r *runner) setState(ctx context.Context, st *admin.Store, f float64, state string, rep int) ([]int64, int, error) {
	if state == report.StateFresh {
		return r.remake(ctx, st)
	}
	if err := r.Reset(ctx, st, false); err != nil {
		return nil, 0, err
	}
	ids := int(st.Config().MaxNode + 1)
	held := min(int(math.Round(f*float64(ids))), ids-1)
	t := st.Config().Table
	steps := []struct {
		q    string
		args []any
	}{
		{`WITH pick AS (SELECT node_id FROM ` + t + ` ORDER BY md5(node_id::text || $1::text) LIMIT $2::integer)
		  UPDATE ` + t + ` AS t SET owner = 'bench-holder', epoch = t.epoch + 1, acquired_at = now(),
		    expires_at = now() + interval '1 hour', horizon_ms = (extract(epoch FROM now() + interval '1 hour') * 1000)::bigint
		  FROM pick WHERE t.node_id = pick.node_id`, []any{fmt.Sprint(rep), held}},
	}
	if state == report.StateLapsed {
		steps = append(steps, struct {
			q    string
			args []any
		}{`UPDATE ` + t + ` SET owner = 'bench-lapsed', epoch = epoch + 1, acquired_at = now() - interval '2 hours',
		    expires_at = now() - interval '1 hour', horizon_ms = (extract(epoch FROM now() - interval '1 hour') * 1000)::bigint
		  WHERE expires_at = '-infinity'`, nil})
	}
	steps = append(steps, struct {
		q    string
		args []any
	}{`INSERT INTO ` + t + `_history (node_id, epoch, owner, acquired_at, from_ms, generation)
	   SELECT node_id, epoch, owner, acquired_at, 0, claim_generation FROM ` + t + ` WHERE owner <> ''`, nil})
	if state != report.StateUnvacuumed {
		steps = append(steps, struct {
			q    string
			args []any
		}{`VACUUM (ANALYZE) ` + t + `, ` + t + `_history`, nil})
	}
	for _, s := range steps {
		if _, err := r.Admin.ExecContext(ctx, s.q, s.args...); err != nil {
			return nil, 0, fmt.Errorf("set up %.1f%% held: %w", 100*f, err)
		}
	}
	rows, err := r.Admin.QueryContext(ctx, `SELECT node_id FROM `+t+` WHERE expires_at < now() ORDER BY node_id`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var free []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, 0, err
		}
		free = append(free, n)
	}
	return free, held, rows.Err()
}

// scalePoint checks lowest-free order with a burst of Acquires, then times
// Samples Acquires, each followed by a Release.
func (r *runner) scalePoint(ctx context.Context, reg *nodeid.Registry, free []int64) (report.ScalePoint, error) {
	var sp report.ScalePoint
	check := func(got, want int64) {
		sp.OrderChecked++
		if got != want {
			sp.OrderViolations++
			if sp.Violation == "" {
				sp.Violation = fmt.Sprintf("got node ID %d where the lowest claimable was %d", got, want)
			}
		}
	}
	// Lowest-free order over several claims in a row.
	burst := make([]*nodeid.Lease, 0, orderBurst)
	for i := range min(orderBurst, len(free)) {
		l, err := reg.Acquire(ctx)
		if err != nil {
			return sp, err
		}
		burst = append(burst, l)
		check(l.NodeID(), free[i])
	}
	// Released rows are free again, and still the lowest claimable.
	for _, l := range burst {
		if err := session.Release(ctx, l); err != nil {
			return sp, err
		}
	}
	lat := make([]time.Duration, 0, r.cfg.Samples)
	for i := range session.WarmCycles + r.cfg.Samples {
		t0 := time.Now()
		l, err := reg.Acquire(ctx)
		d := time.Since(t0)
		if err != nil {
			return sp, err
		}
		if i >= session.WarmCycles {
			lat = append(lat, d)
			check(l.NodeID(), free[0])
		}
		if err := session.Release(ctx, l); err != nil {
			return sp, err
		}
	}
	sp.Latency = report.NewDist(lat)
	return sp, nil
}
