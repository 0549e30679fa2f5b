package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// The demo worker reports to the demo on stdout, one event a line:
//
//	acquired NODE EPOCH
//	minted ID
//	released
//	lost REASON
const (
	evAcquired = "acquired"
	evMinted   = "minted"
	evReleased = "released"
	evLost     = "lost"
)

// demoWorkerCommand is the hidden worker process of "nodeid demo": it
// acquires a node ID, mints an ID every --interval with the fenced
// generator, and releases the node ID on SIGINT or SIGTERM.
func (a *app) demoWorkerCommand() *cobra.Command {
	var (
		ttl, interval time.Duration
		owner         string
		rf            rangeFlags
	)
	cmd := &cobra.Command{
		Use:    "demo-worker",
		Short:  "A worker process of the demo: acquire a node ID and mint IDs until SIGTERM",
		Hidden: true,
		Example: `  DATABASE_URL=postgres://localhost/demo nodeid demo-worker --table nodeid_demo --range 0-2 \
    --owner demo-worker-1 --ttl 5s --interval 200ms`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return usagef("--interval %s: the interval must be positive", interval)
			}
			r, err := rf.resolve()
			if err != nil {
				return err
			}
			ctx, stop := a.interrupted(cmd.Context())
			defer stop()
			db, err := a.openDB()
			if err != nil {
				return err
			}
			opts := []nodeid.Option{nodeid.WithTTL(ttl), nodeid.WithTable(a.table), nodeid.WithNodeRange(r.lo, r.hi), nodeid.WithWait(true)}
			if owner != "" {
				opts = append(opts, nodeid.WithOwner(owner))
			}
			reg, err := nodeid.New(db, opts...)
			if err != nil {
				return err
			}
			defer reg.Close()
			lease, err := reg.Acquire(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil // stopped while waiting for a node ID
				}
				return err
			}
			gen, err := snowflake.New(lease)
			if err != nil {
				_ = lease.Release(context.Background())
				return err
			}
			fmt.Fprintf(a.stdout, "%s %d %d\n", evAcquired, lease.NodeID(), lease.Epoch())
			return a.mintUntilStopped(ctx, lease, gen, interval)
		}),
	}
	cmd.Flags().Var(newDurationValue(&ttl, nodeid.MinTTL), "ttl", "lease TTL")
	cmd.Flags().Var(newDurationValue(&interval, 200*time.Millisecond), "interval", "time between two IDs")
	cmd.Flags().StringVar(&owner, "owner", "", "holder name")
	rf.register(cmd)
	return cmd
}

func (a *app) mintUntilStopped(ctx context.Context, lease *nodeid.Lease, gen *snowflake.Generator, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := lease.Release(context.Background()); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, evReleased)
			return nil
		case <-lease.Lost():
			fmt.Fprintf(a.stdout, "%s %s\n", evLost, oneLine(lease.Err().Error()))
			return lease.Err()
		case <-tick.C:
			id, err := gen.Generate()
			switch {
			case errors.Is(err, nodeid.ErrLeaseLost):
				// Lost closes at once: report it there.
			case err != nil:
				fmt.Fprintln(a.stderr, a.describe(err))
			default:
				fmt.Fprintf(a.stdout, "%s %d\n", evMinted, id)
			}
		}
	}
}
