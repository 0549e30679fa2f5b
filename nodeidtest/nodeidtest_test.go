package nodeidtest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/nodeidtest"
	"github.com/nodeid/nodeid/snowflake"
)

// Every fault of the table ends a lease the way it would on PostgreSQL,
// with its cause, and a generator on the lease stops minting.
func TestFaultsEndLeases(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(*nodeidtest.Table, int64) error
		want  error
	}{
		{"taken over", (*nodeidtest.Table).TakeOver, nodeid.ErrTakenOver},
		{"evicted", (*nodeidtest.Table).Evict, nodeid.ErrEvicted},
		{"expired", (*nodeidtest.Table).Expire, nodeid.ErrExpired},
		{"lost in a failover", (*nodeidtest.Table).LoseClaim, nodeid.ErrFailover},
		{"an outage", func(tb *nodeidtest.Table, _ int64) error { tb.Fail(io.ErrUnexpectedEOF); return nil }, nodeid.ErrExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				table := nodeidtest.NewTable(0, 3)
				reg, err := table.Registry(nodeid.WithTTL(30 * time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer reg.Close()
				lease, err := reg.Acquire(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				// A bubble's clock starts in 2000, before the default
				// layout's origin.
				layout := snowflake.DefaultLayout
				layout.Origin = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
				gen, err := snowflake.New(lease, snowflake.WithLayout(layout))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := gen.Generate(); err != nil {
					t.Fatalf("Generate under a held lease: %v", err)
				}
				if err := c.fault(table, lease.NodeID()); err != nil {
					t.Fatal(err)
				}
				<-lease.Done()
				if err := lease.Err(); !errors.Is(err, nodeid.ErrLeaseLost) || !errors.Is(err, c.want) {
					t.Errorf("Err = %v, want %v", err, c.want)
				}
				if _, err := gen.Generate(); !errors.Is(err, c.want) {
					t.Errorf("Generate after the lease ended = %v, want %v", err, c.want)
				}
			})
		})
	}
}

// The table claims the lowest claimable node ID, waits for a released node
// ID's horizon only as long as it must, and refuses a full range.
func TestClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		table := nodeidtest.NewTable(5, 6)
		reg, err := table.Registry(nodeid.WithTTL(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close()
		a, err := reg.Acquire(t.Context())
		if err != nil || a.NodeID() != 5 || a.Epoch() != 1 {
			t.Fatalf("first Acquire = %v, %v; want node ID 5, epoch 1", a, err)
		}
		b, err := reg.Acquire(t.Context())
		if err != nil || b.NodeID() != 6 {
			t.Fatalf("second Acquire = %v, %v; want node ID 6", b, err)
		}
		if _, err := reg.TryAcquire(t.Context()); !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
			t.Fatalf("TryAcquire on a full range = %v", err)
		}
		if err := a.ReleaseStamped(t.Context(), a.PreviousHorizon()); err != nil {
			t.Fatal(err)
		}
		c, err := reg.Acquire(t.Context())
		if err != nil || c.NodeID() != 5 || c.Epoch() != 2 {
			t.Fatalf("Acquire after a release = %v, %v; want node ID 5, epoch 2", c, err)
		}
		if row, ok := table.Row(5); !ok || row.Epoch != 2 || row.Owner != reg.Owner() {
			t.Errorf("row 5 = %+v, %v", row, ok)
		}
		if err := table.Evict(3); err == nil {
			t.Error("evicting a node ID outside the table succeeded")
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := reg.Acquire(ctx); !errors.Is(err, nodeid.ErrNoNodeIDAvailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a waiting Acquire on a full range = %v", err)
		}
	})
}
