package nodeid_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"strings"
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

// The life cycle of a lease: acquire a node ID, mint under it, stop minting
// when the lease is lost, and release it, which ends the lease too, with
// ErrReleased: no failure.
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
	failed := make(chan error, 1)
	go func() {
		<-lease.Lost()
		if err := lease.Err(); !errors.Is(err, nodeid.ErrReleased) {
			failed <- err // taken over, expired or evicted: stop minting
		}
		close(failed)
	}()
	id, err := gen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("minted an ID of node", id.Node())

	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("lost:", <-failed)
	_, err = gen.Generate()
	fmt.Println("after the release:", errors.Is(err, nodeid.ErrReleased))
	// Output:
	// node 0, epoch 1
	// minted an ID of node 0
	// lost: <nil>
	// after the release: true
}

// Least privilege: a migration, run as the table's owner, makes the tables
// from the DDL of postgres.SchemaSQL; the service's role has only the
// privileges the leases need, creates nothing, and checks at start-up that
// it has them.
func ExampleRegistry_CheckSchema() {
	admin, done := exampleDB()
	defer done()
	ctx := context.Background()

	ddl, err := postgres.SchemaSQL(postgres.WithNodeRange(0, 63), postgres.WithMaxTTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	role := fmt.Sprintf("svc_%d", time.Now().UnixNano())
	for _, q := range []string{
		ddl,
		"CREATE ROLE " + role + " LOGIN",
		"GRANT SELECT, UPDATE ON snowflake_nodes, snowflake_nodes_config TO " + role,
		"GRANT SELECT, INSERT, UPDATE ON snowflake_nodes_history TO " + role,
	} {
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

	if _, err := admin.ExecContext(ctx, "REVOKE UPDATE ON snowflake_nodes FROM "+role); err != nil {
		log.Fatal(err)
	}
	err = reg.CheckSchema(ctx)
	fmt.Println(postgres.Fatal(err), strings.Contains(err.Error(), "lacks UPDATE on table snowflake_nodes"))
	// Output:
	// node 0
	// true true
}
