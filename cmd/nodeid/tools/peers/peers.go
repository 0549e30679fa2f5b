package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/nodeid/nodeid"
	benchmeasure "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
)

// ttl is the lease TTL of all three allocators: nodeid's default.
const ttl = nodeid.DefaultTTL

// ids is the size of every range: node IDs 0 to ids-1.
const ids = 1024

// peer is one item of the loop: an operation that claims, and one that
// releases what it claimed (none for the floor, a single operation).
type peer struct {
	name     string // "nodeid", "floor", "bare", "etcd", "redis"
	claimOp  string // names of the operations, for the report
	freeOp   string
	tripUnit string // what trips counts: "round trips" or "RPCs"

	claim   func(context.Context) (node int64, err error)
	release func(context.Context) error // nil: the peer only claims
	trips   func() int64                // round trips sent so far

	claimT, freeT timing
	nodes         map[int64]int // node IDs claimed, in every turn
	released      int
}

// timing is the timed runs of one operation.
type timing struct {
	lat   []time.Duration
	trips int64
}

// turn runs the peer once: claim, then release; timed says whether to
// record the latencies and round trips.
func (p *peer) turn(ctx context.Context, timed bool) error {
	var node int64
	err := p.timeOp(timed, &p.claimT, func() (err error) {
		node, err = p.claim(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", p.claimOp, err)
	}
	if p.release == nil {
		return nil
	}
	p.nodes[node]++
	if err := p.timeOp(timed, &p.freeT, func() error { return p.release(ctx) }); err != nil {
		return fmt.Errorf("%s: %w", p.freeOp, err)
	}
	p.released++
	return nil
}

// timeOp runs op, and if timed and op succeeds records into t how long it
// took and the round trips it sent.
func (p *peer) timeOp(timed bool, t *timing, op func() error) error {
	n0 := p.trips()
	t0 := time.Now()
	err := op()
	d := time.Since(t0)
	if err == nil && timed {
		t.lat = append(t.lat, d)
		t.trips += p.trips() - n0
	}
	return err
}

// openPool opens a pool of one connection with pgx's default exec mode
// (the statement cache), counting into c.
func openPool(cfg *pgx.ConnConfig, c *benchmeasure.RoundTrips) *sql.DB {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = "nodeid-peers"
	cfg.DialFunc = c.Dial(cfg.DialFunc)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db
}

// nodeidPeer returns the nodeid item: Acquire then Release through reg,
// whose pool counts into c.
func nodeidPeer(reg *nodeid.Registry, c *benchmeasure.RoundTrips) *peer {
	var lease *nodeid.Lease
	return &peer{
		name: "nodeid", claimOp: "Acquire", freeOp: "Release", tripUnit: "round trips", trips: c.Operations,
		claim: func(ctx context.Context) (int64, error) {
			var err error
			lease, err = reg.Acquire(ctx)
			if err != nil {
				return 0, err
			}
			return lease.NodeID(), nil
		},
		// Nothing is stamped under the lease: its release records the
		// previous horizon, and the node ID is claimable again at once.
		release: func(ctx context.Context) error { return lease.ReleaseStamped(ctx, lease.PreviousHorizon()) },
	}
}

// floorSQL is the durable floor: one row updated by its primary key,
// returning as a claim does; %s is the floor's table.
const floorSQL = `UPDATE %s SET epoch = epoch + 1 WHERE node_id = $1 RETURNING node_id, epoch, now()`

// floorPeer returns the floor item: the UPDATE of node 0 (the row the
// claims take) on table, through db, which counts into c.
func floorPeer(db *sql.DB, table string, c *benchmeasure.RoundTrips) *peer {
	q := fmt.Sprintf(floorSQL, table)
	return &peer{
		name: "floor", claimOp: "UPDATE", tripUnit: "round trips", trips: c.Operations,
		claim: func(ctx context.Context) (int64, error) {
			var node, epoch int64
			var now time.Time
			err := db.QueryRowContext(ctx, q, 0).Scan(&node, &epoch, &now)
			return node, err
		},
	}
}

// bareClaimSQL is the least a claim of the lowest free node ID can be in
// PostgreSQL: one UPDATE of the lowest free row, found through a partial
// index and locked with FOR UPDATE SKIP LOCKED, a new epoch and an expiry,
// and nothing else (no history row, no configuration, generation or
// horizon); %s is its table. bareReleaseSQL frees the row for its epoch.
const (
	bareClaimSQL = `UPDATE %[1]s SET owner = $1, epoch = epoch + 1, expires_at = now() + $2::bigint * interval '1 millisecond'
WHERE node_id = (SELECT node_id FROM %[1]s WHERE expires_at = '-infinity' ORDER BY node_id + 0 LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING node_id, epoch, now()`
	bareReleaseSQL = `UPDATE %s SET owner = '', expires_at = '-infinity' WHERE node_id = $1 AND epoch = $2`
)

// barePeer returns the bare claim's item (bareClaimSQL, then
// bareReleaseSQL) on table, through db, which counts into c: a control of
// how far ahead of etcd, or behind Redis, any one-statement claim of
// PostgreSQL can be on this machine.
func barePeer(db *sql.DB, table string, c *benchmeasure.RoundTrips) *peer {
	claim, release := fmt.Sprintf(bareClaimSQL, table), fmt.Sprintf(bareReleaseSQL, table)
	var node, epoch int64
	return &peer{
		name: "bare", claimOp: "claim (UPDATE, SKIP LOCKED)", freeOp: "release (UPDATE)", tripUnit: "round trips", trips: c.Operations,
		claim: func(ctx context.Context) (int64, error) {
			var now time.Time
			err := db.QueryRowContext(ctx, claim, "nodeid-peers-bare", ttl.Milliseconds()).Scan(&node, &epoch, &now)
			return node, err
		},
		release: func(ctx context.Context) error {
			r, err := db.ExecContext(ctx, release, node, epoch)
			if err != nil {
				return err
			}
			if n, err := r.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("released %d rows of node %d, epoch %d (%v), want 1", n, node, epoch, err)
			}
			return nil
		},
	}
}

// rpcCounter counts etcd's unary RPCs, each a request and its response.
type rpcCounter struct{ n atomic.Int64 }

// interceptor counts every RPC attempt (it runs inside the client's
// retries).
func (c *rpcCounter) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.n.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

// etcdPrefix is where the etcd allocator keeps its keys, one per held
// node ID: etcdPrefix + the node ID in decimal.
const etcdPrefix = "/nodeid-peers/node/"

// etcdAllocator is the lowest-free allocator as people write it on etcd:
// a lease, a look at the keys held, and a transaction that creates the
// first free one attached to the lease.
type etcdAllocator struct {
	cli   *clientv3.Client
	owner func() string
	lease clientv3.LeaseID
}

// claim grants a lease, finds the lowest node ID without a key, and
// creates its key if nobody did meanwhile (else it tries the next free
// one): 3 RPCs when it wins the first race.
func (a *etcdAllocator) claim(ctx context.Context) (int64, error) {
	g, err := a.cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return 0, err
	}
	held, err := a.cli.Get(ctx, etcdPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	used := map[int64]bool{}
	for _, kv := range held.Kvs {
		if n, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), etcdPrefix), 10, 64); err == nil {
			used[n] = true
		}
	}
	for n := range int64(ids) {
		if used[n] {
			continue
		}
		key := etcdPrefix + strconv.FormatInt(n, 10)
		r, err := a.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, a.owner(), clientv3.WithLease(g.ID))).
			Commit()
		if err != nil {
			return 0, err
		}
		if r.Succeeded {
			a.lease = g.ID
			return n, nil
		}
	}
	_, _ = a.cli.Revoke(ctx, g.ID)
	return 0, errors.New("no free node ID")
}

// release revokes the lease, which deletes its key: 1 RPC.
func (a *etcdAllocator) release(ctx context.Context) error {
	_, err := a.cli.Revoke(ctx, a.lease)
	return err
}

func etcdPeer(a *etcdAllocator, c *rpcCounter) *peer {
	return &peer{
		name: "etcd", claimOp: "claim (Grant, Get, Txn)", freeOp: "Revoke", tripUnit: "RPCs", trips: c.n.Load,
		claim: a.claim, release: a.release,
	}
}

// redisPrefix is where the Redis allocator keeps its keys.
const redisPrefix = "nodeid-peers:node:"

// redisClaim takes the first free key of the range in one script:
// ARGV = prefix, lowest, highest node ID, owner, TTL in ms. It returns
// the node ID, or -1 if all are held.
const redisClaim = `
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  if redis.call('SET', ARGV[1] .. i, ARGV[4], 'NX', 'PX', ARGV[5]) then
    return i
  end
end
return -1
`

// redisRelease deletes KEYS[1] if it holds the owner's value ARGV[1],
// and returns how many keys it deleted.
const redisRelease = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

// cmdCounter counts the commands (and pipelines) go-redis sends, each a
// round trip.
type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// redisAllocator is the Redis worker-ID lease of the worker-ID
// distributors: one EVALSHA claims, one releases.
type redisAllocator struct {
	rdb                *redis.Client
	claimSHA, freeSHA  string
	owner              func() string
	heldKey, heldOwner string
}

// load loads the two scripts.
func (a *redisAllocator) load(ctx context.Context) (err error) {
	if a.claimSHA, err = a.rdb.ScriptLoad(ctx, redisClaim).Result(); err != nil {
		return err
	}
	a.freeSHA, err = a.rdb.ScriptLoad(ctx, redisRelease).Result()
	return err
}

func (a *redisAllocator) claim(ctx context.Context) (int64, error) {
	owner := a.owner()
	n, err := a.rdb.EvalSha(ctx, a.claimSHA, nil, redisPrefix, 0, ids-1, owner, ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errors.New("no free node ID")
	}
	a.heldKey, a.heldOwner = redisPrefix+strconv.FormatInt(n, 10), owner
	return n, nil
}

func (a *redisAllocator) release(ctx context.Context) error {
	n, err := a.rdb.EvalSha(ctx, a.freeSHA, []string{a.heldKey}, a.heldOwner).Int64()
	if err == nil && n != 1 {
		err = fmt.Errorf("%s was not held by %s", a.heldKey, a.heldOwner)
	}
	return err
}

func redisPeer(a *redisAllocator, c *cmdCounter) *peer {
	return &peer{
		name: "redis", claimOp: "claim (EVALSHA)", freeOp: "release (EVALSHA)", tripUnit: "round trips", trips: c.n.Load,
		claim: a.claim, release: a.release,
	}
}
