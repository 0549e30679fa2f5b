// Command quickstart leases a Snowflake node ID from PostgreSQL
// ($DATABASE_URL), mints a few IDs under it, and releases it.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()

	// WithCreateTable makes the tables on first use; in production, make
	// them once with "nodeid init" or a migration (postgres.Schema.SQL).
	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second), nodeid.WithCreateTable(true))
	if err != nil {
		return err
	}
	defer reg.Close() // releases the node ID: free for the next process at once

	lease, err := reg.Acquire(ctx) // the lowest free node ID, renewed in the background
	if err != nil {
		return err
	}
	gen, err := snowflake.New(lease) // bwmarrin's layout: 41 time, 10 node, 12 step bits
	if err != nil {
		return err
	}
	fmt.Printf("node %d, epoch %d\n", lease.NodeID(), lease.Epoch())

	// The lease's context ends when the lease does: taken over, expired,
	// evicted (or released by reg.Close, after the loop). Its cause says why.
	leaseCtx := lease.Context()
	for range 3 { // a service would go on until it is told to stop
		select {
		case <-leaseCtx.Done():
			return fmt.Errorf("stopped minting: %w", context.Cause(leaseCtx))
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		id, err := gen.Generate() // a github.com/bwmarrin/snowflake ID
		if err != nil {
			return err
		}
		fmt.Println(id)
	}
	return nil
}
