package nodeid_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// saveOrder writes an order under the lease: Verify first in the
// transaction, then write, then commit. The row is committed only if no
// other holder can have claimed the node ID by then.
func saveOrder(ctx context.Context, db *sql.DB, lease *nodeid.Lease, id int64, item string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	if err := lease.Verify(ctx, tx); err != nil {
		return err // lost: nothing is written
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, item) VALUES ($1, $2)`, id, item); err != nil {
		return err
	}
	return tx.Commit()
}

// Writes keyed by a lease's IDs commit only while the lease is held.
func ExampleLease_Verify() {
	db, done := exampleDB()
	defer done()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id bigint PRIMARY KEY, item text)`); err != nil {
		log.Fatal(err)
	}

	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second), nodeid.WithCreateTable(true))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	lease, err := reg.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	gen, err := snowflake.New(lease)
	if err != nil {
		log.Fatal(err)
	}
	tea, err := gen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	coffee, err := gen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("while held:", saveOrder(ctx, db, lease, tea.Int64(), "tea"))

	if err := lease.Release(ctx); err != nil { // or the lease is lost, however
		log.Fatal(err)
	}
	err = saveOrder(ctx, db, lease, coffee.Int64(), "coffee")
	fmt.Println("after the release:", errors.Is(err, nodeid.ErrLeaseLost), errors.Is(err, nodeid.ErrReleased))

	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders committed:", n)
	// Output:
	// while held: <nil>
	// after the release: false true
	// orders committed: 1
}
