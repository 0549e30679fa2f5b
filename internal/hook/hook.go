// Package hook lets package nodeidtest run a nodeid.Registry on a lease
// table of its own, held in memory, without making that a part of package
// nodeid's API.
package hook

import (
	"context"
	"time"

	"github.com/nodeid/nodeid/internal/store"
)

// Store is the SQL a Registry runs: *store.Store implements it, and so does
// nodeidtest's table.
type Store interface {
	Create(ctx context.Context, maxTTL time.Duration) (bool, error)
	ReadConfig(ctx context.Context) (store.TableConfig, error)
	CheckSchema(ctx context.Context) error
	Claim(ctx context.Context, lo, hi int64, owner string, ttl time.Duration, horizonMs int64) (store.ClaimResult, error)
	Renew(ctx context.Context, k store.Key, ttl time.Duration, horizonMs int64) (store.Outcome, error)
	CheckReplication(ctx context.Context) error
	Release(ctx context.Context, k store.Key, exactMs int64) (store.Outcome, error)
}

// NewRegistry returns a *nodeid.Registry on st, configured by opts, each a
// nodeid.Option. Package nodeid sets it.
var NewRegistry func(st Store, opts []any) (any, error)
