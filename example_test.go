package nodeid_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

// exampleDB opens a fresh database of the test server; a program opens its
// own with sql.Open("pgx", dsn).
func exampleDB() (*sql.DB, func()) {
	dsn, drop, err := pgtest.ExampleDSN()
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); drop() }
}

// The life cycle of a lease: acquire a node ID, mint under it while the
// lease's Context lives, and release it, which ends the lease and its
// Context too, with ErrReleased as the cause: no failure.
func Example() {
	db, done := exampleDB()
	defer done()
	ctx := context.Background()

	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second), nodeid.WithCreateTable(true))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	lease, err := reg.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("node %d, epoch %d\n", lease.NodeID(), lease.Epoch())

	gen, err := snowflake.New(lease)
	if err != nil {
		log.Fatal(err)
	}
	leaseCtx := lease.Context() // ends when the lease does, with the reason as its cause
	id, err := gen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("minted an ID of node", id.Node(), "while the lease's context lives:", leaseCtx.Err() == nil)

	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	<-leaseCtx.Done()
	fmt.Println("ended by the release:", errors.Is(context.Cause(leaseCtx), nodeid.ErrReleased))
	_, err = gen.Generate()
	fmt.Println("after the release:", errors.Is(err, nodeid.ErrReleased))
	// Output:
	// node 0, epoch 1
	// minted an ID of node 0 while the lease's context lives: true
	// ended by the release: true
	// after the release: true
}

// Least privilege: a migration, run as the table's owner, makes the tables
// and their functions from the DDL of postgres.Schema.SQL and grants the
// service's role what postgres.GrantSQL says (the lease functions, no write
// on the tables); the role creates nothing, and checks at start-up that it
// has them.
func ExampleRegistry_CheckSchema() {
	admin, done := exampleDB()
	defer done()
	ctx := context.Background()

	ddl, err := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 63, MaxTTL: 30 * time.Second}.SQL()
	if err != nil {
		log.Fatal(err)
	}
	role := fmt.Sprintf("svc_%d", time.Now().UnixNano())
	grants, err := postgres.GrantSQL(postgres.DefaultTable, role) // EXECUTE on the lease functions, SELECT on the tables
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{ddl, "CREATE ROLE " + role + " LOGIN", grants} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	defer admin.ExecContext(ctx, "DROP OWNED BY "+role+"; DROP ROLE "+role)
	var dsn string
	if err := admin.QueryRowContext(ctx, `SELECT 'host=' || host(inet_server_addr()) || ' port=' || inet_server_port()
		|| ' dbname=' || current_database() || ' sslmode=disable'`).Scan(&dsn); err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn+" user="+role)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second)) // creates nothing
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	if err := reg.CheckSchema(ctx); err != nil {
		log.Fatal(err) // postgres.Fatal(err): a missing table, column or privilege
	}
	lease, err := reg.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node", lease.NodeID())

	if _, err := admin.ExecContext(ctx, "REVOKE EXECUTE ON FUNCTION snowflake_nodes_claim(text, bigint, bigint, integer, integer, integer) FROM "+role); err != nil {
		log.Fatal(err)
	}
	err = reg.CheckSchema(ctx)
	fmt.Println(postgres.Fatal(err), strings.Contains(err.Error(), "lacks EXECUTE on function snowflake_nodes_claim()"))
	// Output:
	// node 0
	// true true
}

// A generator of a layout of its own (here a toy one: the millisecond above
// 10 node bits, one ID per millisecond) keeps the Fence contract: it binds
// its seal before minting, reads the monotonic clock against Base, stamps
// after the previous horizon, and checks every stamp.
func ExampleFence() {
	db, done := exampleDB()
	defer done()
	ctx := context.Background()
	reg, err := nodeid.New(db, nodeid.WithCreateTable(true))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	lease, err := reg.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}

	m := nodeid.NewFence(lease)
	var (
		mu     sync.Mutex
		last   = lease.PreviousHorizon() // the latest millisecond stamped
		sealed bool
	)
	seal := func() int64 { // Release calls it: stop for good, say what was stamped
		mu.Lock()
		defer mu.Unlock()
		sealed = true
		return last
	}
	if err := m.Bind(seal); err != nil {
		log.Fatal(err)
	}
	mint := func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		d := time.Since(m.Base())
		ms := max(m.Base().Add(d).UnixMilli(), last+1)
		if err := m.Check(d, ms); err != nil {
			return 0, err // lost, past the deadline, or ahead of the horizon
		}
		if sealed {
			return 0, nodeid.ErrReleased
		}
		last = ms
		return ms<<10 | lease.NodeID(), nil
	}

	id, err := mint()
	fmt.Println("minted:", err == nil, "node", id&1023)
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = mint()
	fmt.Println("after the release:", errors.Is(err, nodeid.ErrReleased))
	// Output:
	// minted: true node 0
	// after the release: true
}
