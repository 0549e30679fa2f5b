//go:build linux

package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/internal/testkit"
)

// countOn returns the rows of table t where v = value on the named node.
func countOn(ctx context.Context, c *Cluster, node, db string, value int) (int, error) {
	dsn, err := c.NodeDSN(node, db)
	if err != nil {
		return 0, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM t WHERE v = $1`, value).Scan(&n)
	return n, err
}

// A write that the leader commits while its replication is stalled is lost
// in the failover that its crash brings about; a write from before the
// stall is kept; the cluster recovers, the old leader streaming from the
// new one.
func TestStallReplication(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := execOnce(ctx, c.DSN(name), `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.nodes { // every standby has the first write
		testkit.Until(t, 2*time.Minute, "the first write on "+c.nodes[i].name, func() error {
			n, err := countOn(ctx, c, c.nodes[i].name, name, 1)
			if err == nil && n != 1 {
				err = fmt.Errorf("%s has %d rows of v = 1", c.nodes[i].name, n)
			}
			return err
		})
	}

	crash, err := c.StallReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldDSN, err := c.NodeDSN(old, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := execOnce(ctx, oldDSN, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatalf("a write on the stalled leader: %v", err)
	}
	if err := crash(); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 2*time.Minute, "a write through the cluster's DSN after the crash", func() error { return execOnce(ctx, c.DSN(name), `INSERT INTO t VALUES (3)`) })
	leader, err := c.Leader(ctx)
	if err != nil || leader == old {
		t.Fatalf("leader %s (%v); want another than %s", leader, err, old)
	}
	if tl, err := c.Timeline(ctx); err != nil || tl != 2 {
		t.Fatalf("timeline = %d, %v; want 2", tl, err)
	}
	for v, want := range map[int]int{1: 1, 2: 0, 3: 1} {
		if n, err := countOn(ctx, c, leader, name, v); err != nil || n != want {
			t.Errorf("the new leader %s has %d rows of v = %d (%v); want %d", leader, n, v, err, want)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	checkStreaming(ctx, t, c, leader)
}
