package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
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

// WorkerOptions are the flags of demo-worker.
type WorkerOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	TTL, Interval time.Duration
	Owner         string
	Range         cli.RangeFlags

	nodes cli.NodeRange // resolved by Validate
}

// Validate checks the interval and resolves the node range.
func (o *WorkerOptions) Validate() error {
	if o.Interval <= 0 {
		return cli.Usagef("--interval %s: the interval must be positive", o.Interval)
	}
	var err error
	o.nodes, err = o.Range.Resolve()
	return err
}

// NewCmdWorker returns the hidden worker process of "nodeid demo": it
// acquires a node ID, mints an ID every --interval with the fenced
// generator, and releases the node ID on SIGINT or SIGTERM.
func NewCmdWorker(env *cli.Env) *cobra.Command {
	o := &WorkerOptions{Env: env}
	cmd := &cobra.Command{
		Use:    "demo-worker",
		Short:  "A worker process of the demo: acquire a node ID and mint IDs until SIGTERM",
		Hidden: true,
		Example: `  DATABASE_URL=postgres://localhost/demo nodeid demo-worker --table nodeid_demo --range 0-2 \
    --owner demo-worker-1 --ttl 5s --interval 200ms`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			if err := o.Validate(); err != nil {
				return err
			}
			return workerRun(cmd.Context(), o)
		}),
	}
	cmd.Flags().Var(cli.NewDurationValue(&o.TTL, nodeid.MinTTL), "ttl", "lease TTL")
	cmd.Flags().Var(cli.NewDurationValue(&o.Interval, 200*time.Millisecond), "interval", "time between two IDs")
	cmd.Flags().StringVar(&o.Owner, "owner", "", "holder name")
	o.Range.Register(cmd)
	return cmd
}

func workerRun(ctx context.Context, o *WorkerOptions) error {
	c, r := o.Conn, o.nodes
	ctx, stop := o.Env.Interrupted(ctx)
	defer stop()
	db, err := c.DB()
	if err != nil {
		return err
	}
	opts := []nodeid.Option{nodeid.WithTTL(o.TTL), nodeid.WithTable(c.Table()), nodeid.WithNodeRange(r.Lo, r.Hi)}
	if o.Owner != "" {
		opts = append(opts, nodeid.WithOwner(o.Owner))
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
	fmt.Fprintf(o.Env.Out, "%s %d %d\n", evAcquired, lease.NodeID(), lease.Epoch())
	return mintUntilStopped(ctx, o.Env, c, lease, gen, o.Interval)
}

func mintUntilStopped(ctx context.Context, env *cli.Env, c *cli.Conn, lease *nodeid.Lease, gen *snowflake.Generator, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := lease.Release(context.Background()); err != nil {
				return err
			}
			fmt.Fprintln(env.Out, evReleased)
			return nil
		case <-lease.Done():
			fmt.Fprintf(env.Out, "%s %s\n", evLost, cli.OneLine(lease.Err().Error()))
			return lease.Err()
		case <-tick.C:
			id, err := gen.Generate()
			switch {
			case errors.Is(err, nodeid.ErrLeaseLost):
				// Done closes at once: report it there.
			case err != nil:
				fmt.Fprintln(env.Err, c.Describe(err))
			default:
				fmt.Fprintf(env.Out, "%s %d\n", evMinted, id)
			}
		}
	}
}
