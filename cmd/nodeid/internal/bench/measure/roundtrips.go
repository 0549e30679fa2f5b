package measure

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
	"github.com/nodeid/nodeid/postgres"
)

// idleLeases and idleTTL set the renewals on idle connections: single
// leases renewing every idleTTL/3 on a connection of their own, as one
// process with one lease does.
const (
	idleLeases = 8
	idleTTL    = 6 * time.Second
	idleRounds = 3
)

// busyTTL is the TTL of n leases renewing on one pool of 4 connections:
// at least nodeid.MinTTL, and long enough that they ask at most 100
// renewals a second (each renews every third of its TTL, and must within
// it), which a loaded 2-core machine running the race detector serves
// with room to spare. At 3 s, 1,000 leases asked 1,000 a second, and one
// lapsed on such a machine. The count per renewal does not depend on the
// TTL; only the wall time of the measurement does.
func busyTTL(n int) time.Duration {
	return max(nodeid.MinTTL, time.Duration(n)*10*time.Millisecond)
}

func (r *runner) roundTrips(ctx context.Context) error {
	cfg := r.cfg
	mode := cfg.ExecModes[0]
	ids := max(postgres.DefaultMaxNode+1, cfg.Ops)
	res := &report.RoundTripResult{ExecMode: mode, IDs: ids}
	r.Res.RoundTrips = res
	res.ServerNote = r.EnableStatements(ctx)
	res.Server = res.ServerNote == ""
	if !res.Server {
		r.Note("round trips: no server-side counts: %s", res.ServerNote)
	}
	table, err := r.Reserve(ctx, "rt")
	if err != nil {
		return err
	}
	ctr := &session.Counter{}
	db := r.OpenDB(4, mode, ctr)
	defer db.Close()
	reg, err := nodeid.New(db, append(session.NodeRange(int64(ids)), nodeid.WithCreateTable(true), nodeid.WithTable(table),
		nodeid.WithTTL(session.BenchTTL), nodeid.WithOwner("bench-rt"))...)
	if err != nil {
		return err
	}
	defer reg.Close()
	if err := session.Warm(ctx, db, 4); err != nil {
		return err
	}

	r.Progressf("round trips: first Acquire of a new Registry on a new table")
	var first *nodeid.Lease
	res.First, res.FirstStatements, err = r.measure(ctx, ctr, res.Server, "", func() (int64, error) {
		first, err = reg.Acquire(ctx)
		return 1, err
	})
	if err != nil {
		return err
	}
	res.First.Op = "first acquire"
	if err := session.Release(ctx, first); err != nil { // nothing was stamped: the node ID keeps no horizon of its own
		return err
	}
	for i := range res.FirstStatements {
		res.FirstStatements[i].Query = session.Shorten(res.FirstStatements[i].Query)
	}
	st, err := admin.New(r.Admin, admin.Config{Table: table, MinNode: 0, MaxNode: int64(ids) - 1})
	if err != nil {
		return err
	}
	stmts, err := r.CaptureSQL(ctx, st)
	if err != nil {
		return err
	}

	r.Progressf("round trips: %d Acquires, then %d Releases", cfg.Ops, cfg.Ops)
	leases := make([]*nodeid.Lease, cfg.Ops)
	acq, _, err := r.measure(ctx, ctr, res.Server, stmts.Claim, func() (int64, error) {
		return int64(cfg.Ops), session.Parallel(ctx, cfg.Ops, 4, func(ctx context.Context, i int) (err error) {
			leases[i], err = reg.Acquire(ctx)
			return err
		})
	})
	if err != nil {
		return err
	}
	acq.Op = "acquire"
	rel, _, err := r.measure(ctx, ctr, res.Server, stmts.Release, func() (int64, error) {
		return int64(cfg.Ops), session.Parallel(ctx, cfg.Ops, 4, func(ctx context.Context, i int) error {
			return session.Release(ctx, leases[i])
		})
	})
	if err != nil {
		return err
	}
	rel.Op = "release"
	res.Ops = append(res.Ops, acq, rel)

	busy := min(cfg.Ops, 1000)
	ttl := busyTTL(busy)
	r.Progressf("round trips: %d renewals of %d leases with TTL %s on a pool of 4 connections", cfg.Ops, busy, ttl)
	ren, err := r.renewals(ctx, table, ids, mode, stmts.Renew, 1, busy, ttl, int64(cfg.Ops))
	if err != nil {
		return err
	}
	ren.Op = "renewal"
	ren.Note = fmt.Sprintf("%d leases, TTL %s, on one pool of 4 connections", busy, ttl)
	res.Ops = append(res.Ops, ren)
	if cfg.Ops >= 1000 {
		r.Progressf("round trips: renewals of %d single leases, each on a connection of its own, TTL %s", idleLeases, idleTTL)
		idle, err := r.renewals(ctx, table, ids, mode, stmts.Renew, idleLeases, 1, idleTTL, idleLeases*idleRounds)
		if err != nil {
			return err
		}
		idle.Op = "renewal (idle connection)"
		idle.Note = fmt.Sprintf("%d processes' worth of one lease each, TTL %s, each on a connection of its own that idles %s between renewals",
			idleLeases, idleTTL, idleTTL/3)
		res.Ops = append(res.Ops, idle)
	}

	if res.Server {
		all, err := r.StatSnapshot(ctx)
		if err != nil {
			return err
		}
		for _, c := range all {
			if session.SameStatement(c.Query, stmts.Claim) {
				res.Claims += c.Calls
			}
		}
	}
	return r.Admin.QueryRowContext(ctx, `SELECT count(*) FROM `+table+`_history`).Scan(&res.HistoryRows)
}

// measure runs op, which returns how many operations it made, and counts
// what they cost: on the client through ctr, and on the server, if
// server, the executions of the statement own and of any other.
func (r *runner) measure(ctx context.Context, ctr *session.Counter, server bool, own string, op func() (int64, error)) (report.OpCount, []report.StmtCalls, error) {
	var c report.OpCount
	var before session.StatSnapshot
	var err error
	if server {
		if before, err = r.StatSnapshot(ctx); err != nil {
			return c, nil, err
		}
	}
	s0, w0 := ctr.Stmts.Load(), ctr.Operations()
	if c.N, err = op(); err != nil {
		return c, nil, err
	}
	s1, w1 := ctr.Stmts.Load(), ctr.Operations()
	c.Client, c.Writes = s1-s0, w1-w0
	if !server {
		return c, nil, nil
	}
	after, err := r.StatSnapshot(ctx)
	if err != nil {
		return c, nil, err
	}
	delta := after.Since(before)
	for _, d := range delta {
		if own != "" && session.SameStatement(d.Query, own) {
			c.OwnStatement += d.Calls
		} else {
			c.Other += d.Calls
		}
	}
	return c, delta, nil
}

// renewals acquires perReg leases with the given TTL in each of regs
// Registries, each on a pool of its own (4 connections if perReg > 1, else
// 1), and counts the cost of the renewals until want were seen. The
// window is closed before the leases are released.
func (r *runner) renewals(ctx context.Context, table string, ids int, mode, renewSQL string, regs, perReg int, ttl time.Duration, want int64) (report.OpCount, error) {
	ctr := &session.Counter{}
	conns := 1
	if perReg > 1 {
		conns = 4
	}
	var held []*nodeid.Lease
	for i := range regs {
		db := r.OpenDB(conns, mode, ctr)
		defer db.Close()
		reg, err := nodeid.New(db, append(session.NodeRange(int64(ids)), nodeid.WithCreateTable(true), nodeid.WithTable(table),
			nodeid.WithTTL(ttl), nodeid.WithOwner(fmt.Sprintf("bench-rt-renew-%d", i)))...)
		if err != nil {
			return report.OpCount{}, err
		}
		defer reg.Close()
		ls := make([]*nodeid.Lease, perReg)
		if err := session.Parallel(ctx, perReg, conns, func(ctx context.Context, i int) (err error) {
			ls[i], err = reg.Acquire(ctx)
			return err
		}); err != nil {
			return report.OpCount{}, err
		}
		held = append(held, ls...)
	}
	timeout := 30*time.Second + time.Duration(want/int64(len(held))+1)*ttl
	c, _, err := r.measure(ctx, ctr, r.Res.RoundTrips.Server, renewSQL, func() (int64, error) {
		return watchRenewals(ctx, held, want, timeout)
	})
	if err != nil {
		return c, err
	}
	for _, l := range held {
		if err := session.Release(ctx, l); err != nil {
			return c, err
		}
	}
	return c, nil
}

// watchRenewals polls the deadlines of leases until want renewals were seen
// or timeout passed, and returns the renewals seen: each moves its lease's
// deadline. A lease lost is an error.
func watchRenewals(ctx context.Context, leases []*nodeid.Lease, want int64, timeout time.Duration) (int64, error) {
	last := make([]time.Time, len(leases))
	for i, l := range leases {
		last[i] = l.Deadline()
	}
	var seen int64
	end := time.Now().Add(timeout)
	for seen < want {
		if time.Now().After(end) {
			return seen, fmt.Errorf("saw %d renewals in %s, wanted %d", seen, timeout, want)
		}
		select {
		case <-ctx.Done():
			return seen, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		for i, l := range leases {
			if err := l.Err(); err != nil {
				return seen, fmt.Errorf("a lease was lost while renewing: %w", err)
			}
			if d := l.Deadline(); !d.Equal(last[i]) {
				last[i] = d
				seen++
			}
		}
	}
	return seen, nil
}
