//go:build linux

package pgtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/internal/testkit"
)

func TestStartClusterRejectsSize(t *testing.T) {
	for _, n := range []int{-1, 0, MaxClusterNodes + 1} {
		c, err := StartCluster(context.Background(), n)
		if err == nil {
			c.Close()
			t.Fatalf("StartCluster(%d) started a cluster", n)
		}
		if msg := err.Error(); !strings.Contains(msg, "not "+strconv.Itoa(n)) || !strings.Contains(msg, "1 to "+strconv.Itoa(MaxClusterNodes)) {
			t.Errorf("StartCluster(%d) = %v; want the value and the rule", n, err)
		}
	}
}

// execOnce runs query on a new connection through dsn.
func execOnce(ctx context.Context, dsn, query string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, query)
	return err
}

// queryNode scans the one row of query on the named node into dst.
func queryNode(ctx context.Context, c *Cluster, node, query string, dst ...any) error {
	dsn, err := c.NodeDSN(node, "postgres")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, query).Scan(dst...)
}

// checkStreaming fails the test unless every node but leader is a standby
// streaming from it.
func checkStreaming(ctx context.Context, t *testing.T, c *Cluster, leader string) {
	t.Helper()
	l, err := c.node(leader)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if n.name == leader {
			continue
		}
		// A receiver that has just (re)connected reports "waiting" for a
		// moment before it streams.
		testkit.Until(t, 2*time.Minute, leader+" streaming to "+n.name, func() error {
			var status string
			var port int
			if err := queryNode(ctx, c, n.name, `SELECT status, sender_port FROM pg_stat_wal_receiver`, &status, &port); err != nil {
				return fmt.Errorf("%s's WAL receiver: %w", n.name, err)
			}
			if status != "streaming" || port != l.pgPort {
				return fmt.Errorf("%s's WAL receiver is %s from port %d, want streaming from leader %s's %d", n.name, status, port, leader, l.pgPort)
			}
			return nil
		})
	}
}

// TestClusterFailovers drives one real three-node cluster through a
// switchover, a crash of the leader and a failover. After each, a write
// through the same multi-host DSN succeeds again, another node leads, the
// old leader follows as a standby, and the timeline has grown by one.
func TestClusterFailovers(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkStreaming(ctx, t, c, leader)
	name, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dsn := c.DSN(name)
	if err := execOnce(ctx, dsn, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatalf("write through the cluster's DSN: %v", err)
	}
	if tl, err := c.Timeline(ctx); err != nil || tl != 1 {
		t.Fatalf("timeline = %d, %v; want 1", tl, err)
	}

	for i, step := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"switchover", c.Switchover},
		{"leader killed", c.KillLeader},
		{"failover", c.Failover},
	} {
		old := leader
		start := time.Now()
		if err := step.do(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		// Measured here: about a second after a kill, a few after a
		// switchover or failover; the bound is generous for a loaded
		// machine.
		testkit.Until(t, 2*time.Minute, step.name+": a write through the cluster's DSN", func() error {
			return execOnce(ctx, dsn, fmt.Sprintf(`INSERT INTO t VALUES (%d)`, i+2))
		})
		t.Logf("%s: a write went through %v after it began", step.name, time.Since(start).Round(time.Millisecond))
		if leader, err = c.Leader(ctx); err != nil || leader == old {
			t.Fatalf("%s: leader %s (%v); want another than %s", step.name, leader, err, old)
		}
		if tl, err := c.Timeline(ctx); err != nil || tl != i+2 {
			t.Fatalf("%s: timeline = %d, %v; want %d", step.name, tl, err, i+2)
		}
		if err := c.WaitHealthy(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		checkStreaming(ctx, t, c, leader)
	}

	// Close leaves no process of the cluster behind: not Patroni, not the
	// PostgreSQL servers it detached from itself, not etcd.
	procs := []int{c.etcd.Cmd.Process.Pid}
	for _, n := range c.nodes {
		init, err := childOf(n.proc.Cmd.Process.Pid)
		if err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
		pm, err := n.postmaster()
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, n.proc.Cmd.Process.Pid, init, pm)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range procs {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("process %d outlived Close", pid)
		}
	}
	if _, err := os.Stat(c.root); err == nil {
		t.Errorf("Close left %s", c.root)
	}
}

// BenchmarkCluster measures, for a three-node cluster on this machine, the
// time StartCluster takes, and the time from the start of a switchover,
// and of a crash of the leader (KillLeader), until a write through DSN
// goes through. Run it with -benchtime=Nx: each round starts a cluster.
func BenchmarkCluster(b *testing.B) {
	var start, switchover, kill time.Duration
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	writeAfter := func(c *Cluster, do func(context.Context) error) time.Duration {
		t0 := time.Now()
		if err := do(ctx); err != nil {
			b.Fatal(err)
		}
		testkit.Until(b, 5*time.Minute, "a write through the cluster's DSN", func() error { return execOnce(ctx, c.DSN("postgres"), `SELECT txid_current()`) })
		return time.Since(t0)
	}
	for b.Loop() {
		t0 := time.Now()
		c := NewCluster(b, 3)
		start += time.Since(t0)
		switchover += writeAfter(c, c.Switchover)
		if err := c.WaitHealthy(ctx); err != nil {
			b.Fatal(err)
		}
		kill += writeAfter(c, c.KillLeader)
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(start.Seconds()/n, "start-s/op")
	b.ReportMetric(switchover.Seconds()/n, "switchover-s/op")
	b.ReportMetric(kill.Seconds()/n, "kill-to-write-s/op")
}
