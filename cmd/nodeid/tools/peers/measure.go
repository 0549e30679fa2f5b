package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/nodeid/nodeid"
	benchmeasure "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/pgserver"
	"github.com/nodeid/nodeid/postgres"
)

// Results are the raw figures of a run, as --json prints them.
type Results struct {
	Command string `json:"command"`
	// Database says which PostgreSQL served: a throwaway one, or
	// DATABASE_URL's (its user, host, port and database; never a password).
	Database string    `json:"database"`
	Started  time.Time `json:"started"`
	Elapsed  string    `json:"elapsed"`
	Turns    int       `json:"turns"`
	Warmup   int       `json:"warmup"`
	IDs      int       `json:"ids"`
	TTL      string    `json:"ttl"`
	Machine  Machine   `json:"machine"`
	Servers  []Server  `json:"servers"`
	Ops      []Op      `json:"operations"`
	Claims   []Claims  `json:"claims"`
	Ratios   []Ratio   `json:"ratios"`
}

// Machine describes the client machine (the servers run on it too).
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	OS         string `json:"os"`
	Go         string `json:"go"`
	LoadStart  string `json:"load_start"` // 1, 5 and 15 minute load averages
	LoadEnd    string `json:"load_end"`
}

// Server is one server and the client that talks to it.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Where   string `json:"where"`
	Client  string `json:"client"`
	// Settings are those that decide durability, as the server reports
	// them (etcd's cannot be read back: they are its command line's).
	Settings [][2]string `json:"settings"`
}

// Op is the timed runs of one operation.
type Op struct {
	Peer string `json:"peer"`
	Op   string `json:"op"`
	// Trips is the round trips per operation, counted on the client in
	// TripUnit.
	Trips    float64 `json:"trips_per_op"`
	TripUnit string  `json:"trip_unit"`
	P50      int64   `json:"p50_ns"`
	P99      int64   `json:"p99_ns"`
	// Latencies are every timed run, in nanoseconds, in turn order.
	Latencies []int64 `json:"latencies_ns"`
}

// Claims are the node IDs an allocator claimed, in every turn (the untimed
// ones too, and a last one after the timed turns, which shows that the
// last release freed the node ID), and how many it released.
type Claims struct {
	Peer     string        `json:"peer"`
	Nodes    map[int64]int `json:"nodes"` // node ID: claims
	Released int           `json:"released"`
}

// cleanups run, last first, when measure returns.
type cleanups []func() error

func (c *cleanups) add(f func() error) { *c = append(*c, f) }

func (c cleanups) run() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i]())
	}
	return errors.Join(errs...)
}

// measure starts the servers (PostgreSQL unless dsn is given), runs the
// turns and returns the figures. Whatever happens, it stops every server
// it started, removes their directories and drops its scratch tables.
func measure(ctx context.Context, c config, dsn string, progress io.Writer) (res *Results, err error) {
	etcdBin, redisBin, err := lookPrograms(c)
	if err != nil {
		return nil, err
	}
	if dsn == "" {
		if _, err := pgserver.FindBinaries(); err != nil {
			return nil, fmt.Errorf("missing PostgreSQL (Debian package postgresql), and DATABASE_URL is not set: %w", err)
		}
	}
	start := time.Now()
	res = &Results{Command: c.command, Started: start.UTC().Truncate(time.Second), Turns: c.turns, Warmup: warmup,
		IDs: ids, TTL: ttl.String(), Machine: machine()}
	var done cleanups
	defer func() { err = errors.Join(err, done.run()) }()
	say := func(format string, a ...any) { fmt.Fprintf(progress, "peers: "+format+"\n", a...) }

	pg, err := startPostgres(ctx, dsn, &done, res)
	if err != nil {
		return nil, err
	}
	say("PostgreSQL %s (%s): %s", res.server("PostgreSQL").Version, res.Database, settingsText(res.server("PostgreSQL").Settings))
	ep, err := startEtcd(ctx, etcdBin, &done, res)
	if err != nil {
		return nil, err
	}
	say("etcd %s at %s", ep.version, ep.where)
	rp, err := startRedis(ctx, redisBin, &done, res)
	if err != nil {
		return nil, err
	}
	say("Redis %s at %s: %s (not durable)", rp.version, rp.where, settingsText(res.server("Redis").Settings))

	peers := []*peer{pg.nodeid, pg.floor, pg.bare, ep.peer, rp.peer}
	for _, p := range peers {
		p.nodes, p.released = map[int64]int{}, 0
	}
	say("%d untimed turns, %d timed, 1 more untimed; every turn runs each item once, in a rotating order", warmup, c.turns)
	total := warmup + c.turns + 1
	var fsyncs0, fsyncs1 float64 // etcd's WAL fsyncs before and after the timed turns
	for turn := range total {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch turn {
		case warmup:
			fsyncs0, err = ep.fsyncs(ctx)
		case warmup + c.turns:
			fsyncs1, err = ep.fsyncs(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("etcd's metrics: %w", err)
		}
		timed := turn >= warmup && turn < warmup+c.turns
		for _, i := range order(turn, len(peers)) {
			if err := peers[i].turn(ctx, timed); err != nil {
				return nil, fmt.Errorf("%s, turn %d: %w", peers[i].name, turn, err)
			}
		}
		if t := turn - warmup + 1; timed && t%(c.turns/10) == 0 {
			say("%d of %d turns", t, c.turns)
		}
	}
	etcd := res.server("etcd")
	etcd.Settings = append(etcd.Settings,
		[2]string{"WAL fsyncs per timed turn (its metrics)", strconv.FormatFloat((fsyncs1-fsyncs0)/float64(c.turns), 'f', 2, 64)})
	res.Machine.LoadEnd = benchmeasure.LoadAverage()
	res.Elapsed = time.Since(start).Round(time.Second).String()
	summarize(res, pg.nodeid, pg.floor, pg.bare, ep.peer, rp.peer)
	return res, nil
}

// server returns the server of that name.
func (r *Results) server(name string) *Server {
	for i := range r.Servers {
		if r.Servers[i].Name == name {
			return &r.Servers[i]
		}
	}
	return &Server{}
}

// summarize fills in the operations, claims and ratios of res.
func summarize(res *Results, nodeidP, floor, bare, etcd, redis *peer) {
	p50 := func(t timing) time.Duration { return percentile(t.lat, 50) }
	add := func(p *peer, op string, t timing) {
		o := Op{Peer: p.name, Op: op, TripUnit: p.tripUnit, P50: int64(p50(t)), P99: int64(percentile(t.lat, 99))}
		if len(t.lat) > 0 {
			o.Trips = float64(t.trips) / float64(len(t.lat))
		}
		for _, d := range t.lat {
			o.Latencies = append(o.Latencies, int64(d))
		}
		res.Ops = append(res.Ops, o)
	}
	for _, p := range []*peer{nodeidP, floor, bare, etcd, redis} {
		add(p, p.claimOp, p.claimT)
		if p.release != nil {
			add(p, p.freeOp, p.freeT)
			res.Claims = append(res.Claims, Claims{Peer: p.name, Nodes: p.nodes, Released: p.released})
		}
	}
	res.Ratios = []Ratio{
		newRatio("etcd claim p50 / nodeid Acquire p50", p50(etcd.claimT), p50(nodeidP.claimT), ">=", 3),
		newRatio("nodeid Release p50 / etcd Revoke p50", p50(nodeidP.freeT), p50(etcd.freeT), "<=", 1),
		newRatio("nodeid Acquire p50 / Redis claim p50", p50(nodeidP.claimT), p50(redis.claimT), "<=", 5),
	}
	for _, o := range res.Ops {
		if o.Peer != floor.name {
			res.Ratios = append(res.Ratios, newRatio(o.Peer+" "+o.Op+" p50 / floor UPDATE p50", time.Duration(o.P50), p50(floor.claimT), "", 0))
		}
	}
}

// pgItems are the PostgreSQL items.
type pgItems struct{ nodeid, floor, bare *peer }

// startPostgres starts a throwaway PostgreSQL (or connects to dsn), checks
// that it is durable, makes the scratch tables (a 1,024-node-ID lease
// table, with a first claim and release, and copies of its rows for the
// floor and the bare claim) and returns the Registry's, the floor's and
// the bare claim's items.
func startPostgres(ctx context.Context, dsn string, done *cleanups, res *Results) (*pgItems, error) {
	if dsn == "" {
		srv, err := pgserver.StartLocal(ctx, "fsync=on", "full_page_writes=on", "synchronous_commit=on")
		if err != nil {
			return nil, fmt.Errorf("start PostgreSQL: %w", err)
		}
		done.add(srv.Close)
		dsn, res.Database = srv.DSN("postgres"), "throwaway, "+srv.Addr()
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if res.Database == "" {
		res.Database = fmt.Sprintf("DATABASE_URL, user %s at %s:%d, database %s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	admin := stdlib.OpenDB(*cfg)
	done.add(admin.Close)
	srv := Server{Name: "PostgreSQL", Where: res.Database, Client: "pgx " + moduleVersion("github.com/jackc/pgx/v5") +
		" (database/sql, " + cfg.DefaultQueryExecMode.String() + ", one connection)"}
	var fsync, syncCommit, fpw string
	if err := admin.QueryRowContext(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit'), current_setting('full_page_writes')`).Scan(&srv.Version, &fsync, &syncCommit, &fpw); err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	srv.Settings = [][2]string{{"fsync", fsync}, {"synchronous_commit", syncCommit}, {"full_page_writes", fpw}}
	res.Servers = append(res.Servers, srv)
	if fsync != "on" || syncCommit != "on" {
		return nil, fmt.Errorf("PostgreSQL has fsync=%s, synchronous_commit=%s: the benchmark compares durable writes, and needs both on", fsync, syncCommit)
	}

	table := "nodeid_peers_" + randomHex(6)
	floor, bare := table+"_floor", table+"_bare"
	for _, n := range []string{floor, bare} {
		if err := postgres.ValidateTable(n); err != nil {
			return nil, err
		}
	}
	names := []string{table, postgres.HistoryTable(table), postgres.ConfigTable(table), floor, bare}
	for _, n := range names {
		var exists bool
		if err := admin.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, n).Scan(&exists); err != nil {
			return nil, err
		}
		if exists {
			return nil, fmt.Errorf("table %s exists already: the benchmark works only on tables it creates", n)
		}
	}
	done.add(func() error { // the names passed postgres.ValidateTable: no quoting needed
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
			return fmt.Errorf("drop the scratch tables %s: %w", strings.Join(names, ", "), err)
		}
		return nil
	})

	var regCtr benchmeasure.RoundTrips
	pool := openPool(cfg, &regCtr)
	done.add(pool.Close)
	reg, err := nodeid.New(pool, nodeid.WithTable(table), nodeid.WithCreateTable(true), nodeid.WithNodeRange(0, ids-1),
		nodeid.WithTTL(ttl), nodeid.WithOwner("nodeid-peers"))
	if err != nil {
		return nil, err
	}
	done.add(reg.Close)
	items := &pgItems{nodeid: nodeidPeer(reg, &regCtr)}
	items.nodeid.nodes = map[int64]int{}                  // measure counts afresh
	if err := items.nodeid.turn(ctx, false); err != nil { // creates the tables
		return nil, fmt.Errorf("nodeid's first claim: %w", err)
	}
	for _, q := range []string{
		"CREATE TABLE " + floor + " (LIKE " + table + " INCLUDING DEFAULTS)",
		"INSERT INTO " + floor + " SELECT * FROM " + table,
		"ALTER TABLE " + floor + " ADD PRIMARY KEY (node_id)",
		"VACUUM (ANALYZE) " + floor,
		// The bare claim's table: the rows free, the primary key and the
		// lease table's index of free rows.
		"CREATE TABLE " + bare + " (LIKE " + table + " INCLUDING DEFAULTS)",
		"INSERT INTO " + bare + " SELECT * FROM " + table,
		"UPDATE " + bare + " SET owner = '', expires_at = '-infinity'",
		"ALTER TABLE " + bare + " ADD PRIMARY KEY (node_id)",
		"CREATE INDEX ON " + bare + " ((node_id + 0)) WHERE expires_at = '-infinity'",
		"VACUUM (ANALYZE) " + bare,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("the floor's and the bare claim's tables: %w", err)
		}
	}
	var floorCtr benchmeasure.RoundTrips
	floorDB := openPool(cfg, &floorCtr)
	done.add(floorDB.Close)
	items.floor = floorPeer(floorDB, floor, &floorCtr)
	var bareCtr benchmeasure.RoundTrips
	bareDB := openPool(cfg, &bareCtr)
	done.add(bareDB.Close)
	items.bare = barePeer(bareDB, bare, &bareCtr)
	return items, nil
}

// started is a server started, with its item.
type started struct {
	peer           *peer
	version, where string
	// fsyncs, for etcd, returns how many times it has fsynced its WAL.
	fsyncs func(context.Context) (float64, error)
}

// startEtcd starts etcd with its default durability (its WAL fsynced at
// every write) on free loopback ports, and returns its item.
func startEtcd(ctx context.Context, bin string, done *cleanups, res *Results) (*started, error) {
	clientPort, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	ch, err := startChild("etcd", bin, func(dir string) []string {
		return []string{"--name", "peers", "--data-dir", dir + "/data",
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "peers=" + peerURL, "--initial-cluster-state", "new",
			"--logger", "zap", "--log-outputs", "stderr"}
	})
	if err != nil {
		return nil, err
	}
	done.add(ch.stop)
	var rpcs rpcCounter
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(rpcs.interceptor)},
	})
	if err != nil {
		return nil, err
	}
	done.add(cli.Close)
	s := &started{where: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	if err := ch.waitReady(ctx, func(ctx context.Context) error {
		st, err := cli.Status(ctx, client)
		if err == nil {
			s.version = st.Version
		}
		return err
	}); err != nil {
		return nil, err
	}
	res.Servers = append(res.Servers, Server{Name: "etcd", Version: s.version, Where: s.where,
		Client:   "go.etcd.io/etcd/client/v3 " + moduleVersion("go.etcd.io/etcd/client/v3") + " (one gRPC connection)",
		Settings: [][2]string{{"unsafe-no-fsync", "false (the default: the WAL is fsynced at every write)"}, {"members", "1"}}})
	s.fsyncs = func(ctx context.Context) (float64, error) { return walFsyncs(ctx, client+"/metrics") }
	a := &etcdAllocator{cli: cli, owner: newOwner()}
	s.peer = etcdPeer(a, &rpcs)
	return s, nil
}

// startRedis starts redis-server on a free loopback port, in memory only
// (--save "" --appendonly no), loads the scripts and returns its item.
func startRedis(ctx context.Context, bin string, done *cleanups, res *Results) (*started, error) {
	port, err := pgserver.FreePort()
	if err != nil {
		return nil, err
	}
	ch, err := startChild("redis", bin, func(dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no"}
	})
	if err != nil {
		return nil, err
	}
	done.add(ch.stop)
	s := &started{where: fmt.Sprintf("127.0.0.1:%d", port)}
	var cmds cmdCounter
	rdb := redis.NewClient(&redis.Options{Addr: s.where, PoolSize: 1})
	rdb.AddHook(&cmds)
	done.add(rdb.Close)
	if err := ch.waitReady(ctx, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }); err != nil {
		return nil, err
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}
	s.version = infoField(info, "redis_version")
	srv := Server{Name: "Redis", Version: s.version, Where: s.where,
		Client: "github.com/redis/go-redis/v9 " + moduleVersion("github.com/redis/go-redis/v9") + " (a pool of one connection)"}
	for _, name := range []string{"save", "appendonly"} {
		v, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil {
			return nil, err
		}
		srv.Settings = append(srv.Settings, [2]string{name, fmt.Sprintf("%q", v[name])})
	}
	res.Servers = append(res.Servers, srv)
	a := &redisAllocator{rdb: rdb, owner: newOwner()}
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	s.peer = redisPeer(a, &cmds)
	return s, nil
}

// walFsyncs reads from etcd's metrics how many times it has fsynced its
// WAL.
func walFsyncs(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Close = true // keeps no idle connection (nor its goroutines)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_disk_wal_fsync_duration_seconds_count "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no etcd_disk_wal_fsync_duration_seconds_count in " + url)
}

// newOwner returns a function that names a new owner for every claim.
func newOwner() func() string {
	var seq atomic.Int64
	return func() string { return fmt.Sprintf("peers-%d-%d", os.Getpid(), seq.Add(1)) }
}

// infoField returns the value of field in the output of Redis's INFO.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

func settingsText(s [][2]string) string {
	parts := make([]string, len(s))
	for i, kv := range s {
		parts[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(parts, ", ")
}

// moduleVersion returns the version of module path in this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func machine() Machine {
	return Machine{CPU: benchmeasure.CPUModel(), Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), LoadStart: benchmeasure.LoadAverage()}
}
