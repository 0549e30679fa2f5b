package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// TestMain runs the tests, or, in a process that TestChaos started with its
// configuration in NODEID_CHAOS_WORKER, one worker: it mints until SIGTERM,
// then releases its lease and exits.
func TestMain(m *testing.M) {
	if js := os.Getenv(envWorker); js != "" {
		if err := worker(js); err != nil {
			fmt.Fprintln(os.Stderr, "chaos worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	pgtest.Main(m)
}

// The knobs of a run.
const (
	envSeed     = "NODEID_CHAOS_SEED"
	envDuration = "NODEID_CHAOS_DURATION"
	envWorker   = "NODEID_CHAOS_WORKER" // set in worker processes only: their WorkerConfig as JSON

	defaultDuration = time.Minute
	shortDuration   = 20 * time.Second

	workers = 6
	minNode = 0
	maxNode = 3 // four node IDs for six workers
	ttl     = nodeid.MinTTL
	table   = "chaos_nodes"

	// The rate cap: each worker mints bursts of batch IDs, one burst per
	// batchEvery, so at most 50,000 IDs a second per worker; with four node
	// IDs at most four workers mint at once: at most 12 million IDs a
	// minute, fewer under faults.
	batch      = 2000
	batchEvery = 40 * time.Millisecond
	maxHold    = 8 * time.Second
	maxOffset  = 2000 // ms
)

// worker runs one worker process of TestChaos on its configuration js.
func worker(js string) error {
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return fmt.Errorf("%s: %w", envWorker, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return RunWorker(ctx, cfg)
}

// settings reads the seed and the duration of a run from the environment;
// d is the default duration.
func settings(t *testing.T, d time.Duration) (seed uint64, dur time.Duration) {
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned decimal integer: %v", envSeed, s, err)
		}
		seed = v
	}
	if s := os.Getenv(envDuration); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v < 10*time.Second {
			t.Fatalf("%s=%q: want a duration of at least 10s, such as 10m", envDuration, s)
		}
		d = v
	}
	return seed, d
}

// needs fails the test unless its deadline leaves d for the run and 3
// minutes for the rest.
func needs(t *testing.T, d time.Duration) {
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d+3*time.Minute {
		t.Fatalf("a %s run needs about %s more than that: run with -timeout %s", d, 3*time.Minute, (d + 5*time.Minute).Round(time.Minute))
	}
}

// TestChaos runs the workers under faults and checks the whole history:
// see the package doc.
func TestChaos(t *testing.T) {
	t.Parallel()
	d := defaultDuration
	if testing.Short() {
		d = shortDuration
	}
	seed, d := settings(t, d)
	needs(t, d)
	start := fmt.Sprintf("chaos: seed %d (replay with %s=%d), duration %s", seed, envSeed, seed, d)
	fmt.Println(start)
	t.Log(start)

	srv := pgtest.NewServer(t)
	ctx := context.Background()
	dbname, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := postgres.Schema{Table: table, MinNode: minNode, MaxNode: maxNode, MaxTTL: postgres.DefaultMaxTTL}.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Exec(ctx, dbname, schema); err != nil {
		t.Fatal(err)
	}
	proxy, err := pgtest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	r := newRun(t, seed, pgtest.WithAddr(srv.DSN(dbname), proxy.Addr()), srv.DSN(dbname))
	r.srv, r.proxy, r.dbname = srv, proxy, dbname
	defer r.killAll() // after a t.Fatal too

	for w := range workers {
		if err := r.startWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	plan := Plan(seed, d, workers, ttl, ServerKinds())
	began := time.Now()
	r.nemesis(plan, began, began.Add(d), nil)
	r.stopAll()
	r.finish(ctx, time.Since(began), ServerKinds())
}

// newRun returns the state of a run of the given seed whose workers connect
// to dsn; the history is read through adminDSN. It draws the workers'
// clock offsets from the seed.
func newRun(t *testing.T, seed uint64, dsn, adminDSN string) *run {
	dir, err := os.MkdirTemp("", "nodeid-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run's worker files and logs, and the history it checked (history.json), are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	rng := rand.New(rand.NewPCG(seed, 0x776f726b657273)) // "workers"
	r := &run{
		t: t, dir: dir, seed: seed, dsn: dsn, adminDSN: adminDSN,
		procs:  make([]*proc, workers),
		incs:   make([]int, workers),
		deaths: map[Incarnation]int64{},
		faults: map[FaultKind]int{},
		stop:   make(chan struct{}),
	}
	for w := range workers {
		// Workers 0 and 1 take the extremes of the offsets, the others any.
		switch w {
		case 0:
			r.offsets = append(r.offsets, -maxOffset)
		case 1:
			r.offsets = append(r.offsets, maxOffset)
		default:
			r.offsets = append(r.offsets, rng.Int64N(2*maxOffset+1)-maxOffset)
		}
	}
	return r
}

// finish reads and checks the history of a run that lasted elapsed, prints
// the summary line (with the counts of the given kinds of fault) and fails
// the test on any duplicate, violation or failure of the run.
func (r *run) finish(ctx context.Context, elapsed time.Duration, kinds []FaultKind) {
	t := r.t
	h, err := r.history(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkStart := time.Now()
	rep := Check(h)
	checkTook := time.Since(checkStart)
	r.checkWho(ctx, &rep, h)

	var ahead, behind int64
	for _, f := range h.Files {
		for _, rec := range f.Records {
			switch v := rec.(type) {
			case Lost:
				ahead, behind = ahead+v.Ahead, behind+v.Behind
			case Released:
				ahead, behind = ahead+v.Ahead, behind+v.Behind
			}
		}
	}
	var fk []string
	for _, k := range kinds {
		fk = append(fk, fmt.Sprintf("%s=%d", k, r.faults[k]))
	}
	var fo string
	if len(h.Failovers) > 0 {
		secs := func(d time.Duration) string {
			if d < 0 {
				return "none"
			}
			return fmt.Sprintf("%.2fs", d.Seconds())
		}
		var firsts []string
		for i, f := range h.Failovers {
			firsts = append(firsts, fmt.Sprintf("%s:%s/%s", f.Kind, secs(rep.FirstClaim[i]), secs(rep.FirstQuarantined[i])))
		}
		fo = fmt.Sprintf(" failovers=%d lost-in-failover=%d first-claim-after(any/quarantined)=[%s]",
			len(h.Failovers), rep.LostInFailover, strings.Join(firsts, " "))
	}
	summary := fmt.Sprintf("chaos: seed=%d duration=%s workers=%d nodes=%d ids=%d faults=[%s]%s duplicates=%d violations=%d"+
		" (leases=%d losses=%d releases=%d claims=%d processes=%d clock-retries ahead=%d behind=%d; late losses excused by the control timer=%d; check took %s)",
		r.seed, elapsed.Round(time.Second), workers, maxNode-minNode+1, rep.IDs, strings.Join(fk, " "), fo,
		rep.Duplicates, rep.Violations, rep.Leases, rep.Losses, rep.Releases, rep.Claims, len(h.Files),
		ahead, behind, rep.LateExcused, checkTook.Round(time.Millisecond))
	fmt.Println(summary)
	t.Log(summary)

	for _, f := range r.failures {
		t.Error(f)
	}
	if rep.Duplicates > 0 || rep.Violations > 0 || len(r.failures) > 0 {
		if err := keep(filepath.Join(r.dir, "history.json"), h); err != nil {
			t.Errorf("keep the history: %v", err)
		}
	}
	if rep.Duplicates > 0 || rep.Violations > 0 {
		t.Errorf("the history breaks the rules (%v); replay with %s=%d:\n%s", rep.ByRule, envSeed, r.seed, strings.Join(rep.Details, "\n"))
	}
	if rep.IDs == 0 || rep.Leases == 0 {
		t.Errorf("the workers minted %d IDs under %d leases: the run proves nothing", rep.IDs, rep.Leases)
	}
}

// keep writes what the history holds besides the worker files, as JSON,
// to path.
func keep(path string, h History) error {
	type death struct {
		Incarnation
		AtNs int64
	}
	var deaths []death
	for inc, at := range h.Deaths {
		deaths = append(deaths, death{inc, at})
	}
	b, err := json.MarshalIndent(struct {
		Claims    []Claim
		Rows      []Row
		Pauses    []Pause
		Deaths    []death
		Failovers []FailoverEvent
		Timeline  int64
		TTL       time.Duration
	}{h.Claims, h.Rows, h.Pauses, deaths, h.Failovers, h.Timeline, h.TTL}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// run is the state of one run of TestChaos or TestChaosFailover.
type run struct {
	t        *testing.T
	srv      *pgtest.Server  // TestChaos
	proxy    *pgtest.Proxy   // TestChaos
	cluster  *pgtest.Cluster // TestChaosFailover
	dbname   string
	dsn      string // the workers': through the proxy, or the cluster's multi-host DSN
	adminDSN string // to read the history: the server's, or the cluster's
	dir      string
	seed     uint64

	// dbFault is held while a fault on the database is under way: such
	// faults come one at a time.
	dbFault sync.Mutex

	offsets []int64

	mu        sync.Mutex
	procs     []*proc // the current process of each worker; nil while down
	incs      []int   // the next incarnation of each worker
	all       []*proc
	pauses    []Pause
	failovers []FailoverEvent
	deaths    map[Incarnation]int64
	faults    map[FaultKind]int
	failures  []string
	stopping  bool

	stop  chan struct{} // closed when the run ends: pending restarts and pauses end
	async sync.WaitGroup
}

// proc is one worker process.
type proc struct {
	worker, inc int
	cmd         *exec.Cmd
	out, log    string        // its record file and its log
	done        chan struct{} // closed when the process has exited
	err         error         // its exit, once done
	paused      bool
	killed      bool // by the test: its exit is expected
}

// termedAtStart reports whether p died of SIGTERM before it created its
// record file: a process started just before the end of the run gets
// SIGTERM before it can handle it, and had nothing to release.
func (p *proc) termedAtStart() bool {
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		return false
	}
	_, err := os.Stat(p.out)
	return errors.Is(err, fs.ErrNotExist)
}

func (r *run) failf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *run) startWorker(w int) error {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return nil
	}
	inc := r.incs[w]
	r.incs[w]++
	r.mu.Unlock()

	cfg := WorkerConfig{
		Worker: w, Incarnation: inc, DSN: r.dsn, Table: table,
		Out:      filepath.Join(r.dir, fmt.Sprintf("w%d.%d.rec", w, inc)),
		LateOut:  filepath.Join(r.dir, fmt.Sprintf("w%d.%d.late", w, inc)),
		OffsetMs: r.offsets[w], TTL: ttl, MinNode: minNode, MaxNode: maxNode,
		Batch: batch, BatchEvery: batchEvery, MaxHold: maxHold, Seed: r.seed,
	}
	if w%2 == 0 {
		cfg.EpochBits = 2 // half the workers embed epoch bits, half do not
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	p := &proc{worker: w, inc: inc, out: cfg.Out, log: filepath.Join(r.dir, fmt.Sprintf("w%d.%d.log", w, inc)), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(os.Environ(), envWorker+"="+string(js))
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start worker %d.%d: %w", w, inc, err)
	}
	r.mu.Lock()
	r.procs[w] = p
	r.all = append(r.all, p)
	r.mu.Unlock()
	go func() {
		p.err = p.cmd.Wait()
		r.mu.Lock()
		expected := p.killed || r.stopping
		if r.procs[w] == p {
			r.procs[w] = nil
		}
		r.mu.Unlock()
		close(p.done)
		if !expected {
			r.failf("worker %d.%d exited by itself (%v):\n%s", w, inc, p.err, tail(p.log))
		}
	}()
	return nil
}

// target returns the running, unpaused process of worker w, or of the next
// worker that has one; nil if none has.
func (r *run) target(w int) *proc {
	for i := range workers {
		if p := r.procs[(w+i)%workers]; p != nil && !p.paused && !p.killed {
			return p
		}
	}
	return nil
}

// nemesis applies the plan until end, or until quit is closed if sooner;
// faults on the database and the network one at a time, kills and pauses
// in the background. It returns with the proxy forwarding and the server
// running. On a cluster, the plan has only kills, pauses and terminations
// (ClusterKinds).
func (r *run) nemesis(plan []Fault, began, end time.Time, quit <-chan struct{}) {
	ctx := context.Background()
	for _, f := range plan {
		if !sleepUntil(began.Add(f.At), quit) || time.Now().After(end) {
			return
		}
		if f.Kind != Kill && f.Kind != Stop {
			r.dbFault.Lock()
		}
		switch f.Kind {
		case Kill:
			r.kill(f)
		case Stop:
			r.pause(f)
		case Terminate:
			r.terminate(ctx, f)
		case RestartFast, RestartImmediate:
			mode := pgtest.Fast
			if f.Kind == RestartImmediate {
				mode = pgtest.Immediate
			}
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := r.srv.Stop(sctx, mode)
			cancel()
			if err != nil {
				r.failf("fault %s: stop: %v", f, err)
			}
			r.count(f.Kind)
			time.Sleep(f.For)
			sctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
			err = r.srv.Start(sctx)
			cancel()
			if err != nil {
				r.failf("fault %s: start: %v", f, err)
				r.dbFault.Unlock()
				return // nothing more to learn without a server
			}
		case Cut, Blackhole:
			if f.Kind == Cut {
				r.proxy.Cut()
			} else {
				r.proxy.Blackhole()
			}
			r.count(f.Kind)
			time.Sleep(f.For)
			r.proxy.Restore()
		}
		if f.Kind != Kill && f.Kind != Stop {
			r.dbFault.Unlock()
		}
	}
	sleepUntil(end, quit)
}

// sleepUntil sleeps until t; it returns false if quit was closed first.
func sleepUntil(t time.Time, quit <-chan struct{}) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-quit:
		return false
	}
}

// terminate ends every connection to the workers' database with
// pg_terminate_backend: on the server, or on the cluster's leader.
func (r *run) terminate(ctx context.Context, f Fault) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	if r.cluster == nil {
		_, err = r.srv.TerminateBackends(ctx, r.dbname)
	} else {
		err = terminateOn(ctx, r.cluster.DSN("postgres"), r.dbname)
	}
	if err != nil {
		r.failf("fault %s: %v", f, err)
		return
	}
	r.count(f.Kind)
}

func (r *run) count(k FaultKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[k]++
}

// kill sends SIGKILL to a worker and starts a new process for it after
// f.For.
func (r *run) kill(f Fault) {
	r.mu.Lock()
	p := r.target(f.Worker)
	if p == nil {
		r.mu.Unlock()
		return
	}
	p.killed = true
	r.deaths[Incarnation{int64(p.worker), int64(p.inc)}] = time.Now().UnixNano()
	r.faults[Kill]++
	r.mu.Unlock()
	_ = p.cmd.Process.Kill()
	r.async.Add(1)
	go func() {
		defer r.async.Done()
		<-p.done
		select {
		case <-r.stop:
			return
		case <-time.After(f.For):
		}
		if err := r.startWorker(p.worker); err != nil {
			r.failf("restart worker %d: %v", p.worker, err)
		}
	}()
}

// pause sends SIGSTOP to a worker and SIGCONT after f.For (or at the end of
// the run, if sooner).
func (r *run) pause(f Fault) {
	r.mu.Lock()
	p := r.target(f.Worker)
	if p == nil {
		r.mu.Unlock()
		return
	}
	p.paused = true
	r.faults[Stop]++
	r.mu.Unlock()
	stopNs := time.Now().UnixNano()
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	r.async.Add(1)
	go func() {
		defer r.async.Done()
		select {
		case <-r.stop:
		case <-time.After(f.For):
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if p.killed {
			return
		}
		contNs := time.Now().UnixNano() // before the signal: the worker may run at once
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
		r.pauses = append(r.pauses, Pause{Worker: int64(p.worker), Incarnation: int64(p.inc), StopNs: stopNs, ContNs: contNs})
	}()
}

// stopAll ends the run: pending pauses end, pending restarts are dropped,
// and every worker gets SIGTERM, which makes it release its lease and exit.
func (r *run) stopAll() {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	close(r.stop)
	r.async.Wait()

	r.mu.Lock()
	live := slices.Clone(r.all)
	r.mu.Unlock()
	for _, p := range live {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range live {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			r.failf("worker %d.%d did not stop within 30s of SIGTERM:\n%s", p.worker, p.inc, tail(p.log))
			r.mu.Lock()
			r.deaths[Incarnation{int64(p.worker), int64(p.inc)}] = time.Now().UnixNano()
			r.mu.Unlock()
			_ = p.cmd.Process.Kill()
			<-p.done
			continue
		}
		if !p.killed && p.err != nil && !p.termedAtStart() {
			r.failf("worker %d.%d failed: %v:\n%s", p.worker, p.inc, p.err, tail(p.log))
		}
	}
	for _, p := range live {
		if b, err := os.ReadFile(p.log); err == nil && strings.Contains(string(b), "DATA RACE") {
			r.failf("worker %d.%d reported a data race:\n%s", p.worker, p.inc, tail(p.log))
		}
	}
}

// killAll kills every worker process still running: the clean-up of a
// failed run. Processes already gone are left alone.
func (r *run) killAll() {
	r.mu.Lock()
	if !r.stopping {
		r.stopping = true
		close(r.stop)
	}
	live := slices.Clone(r.all)
	r.mu.Unlock()
	for _, p := range live {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	r.async.Wait()
}

// history reads the workers' files, the lease and history tables, and the
// server's timeline.
func (r *run) history(ctx context.Context) (History, error) {
	h := History{TTL: ttl, Deaths: r.deaths, Pauses: r.pauses, Failovers: r.failovers}
	paths, err := filepath.Glob(filepath.Join(r.dir, "*.rec"))
	if err != nil {
		return h, err
	}
	for _, path := range paths {
		f, err := ReadFile(path)
		if errors.Is(err, ErrNoHeader) {
			var w, inc int64
			if _, serr := fmt.Sscanf(filepath.Base(path), "w%d.%d.rec", &w, &inc); serr == nil && r.deaths[Incarnation{w, inc}] != 0 {
				continue // killed before it wrote anything
			}
		}
		if err != nil {
			return h, err
		}
		// The control timer's late firings, in a file of their own.
		late, err := ReadFile(strings.TrimSuffix(path, ".rec") + ".late")
		switch {
		case err == nil:
			f.Records = append(f.Records, late.Records...)
		case !errors.Is(err, ErrNoHeader) && !errors.Is(err, fs.ErrNotExist): // none if killed at once
			return h, err
		}
		h.Files = append(h.Files, f)
	}
	db, err := sql.Open("pgx", r.adminDSN)
	if err != nil {
		return h, err
	}
	defer db.Close()
	st, err := admin.New(db, admin.Config{Table: table, MinNode: minNode, MaxNode: maxNode})
	if err != nil {
		return h, err
	}
	rows, _, err := st.List(ctx)
	if err != nil {
		return h, err
	}
	rowTimelines, err := timelines(ctx, db, `SELECT node_id, 0, claim_generation FROM `+table)
	if err != nil {
		return h, err
	}
	claimTimelines, err := timelines(ctx, db, `SELECT node_id, epoch, generation FROM `+postgres.HistoryTable(table))
	if err != nil {
		return h, err
	}
	// The table's generation counts the timelines: it is made on timeline
	// 1, and every failover is seen by a lease statement before the next.
	if err := db.QueryRowContext(ctx, `SELECT generation FROM `+postgres.ConfigTable(table)).Scan(&h.Timeline); err != nil {
		return h, err
	}
	if tl, err := pgtest.Timeline(ctx, r.adminDSN); err != nil || int64(tl) != h.Timeline {
		return h, fmt.Errorf("the table's generation %d is not the server's timeline %d (%v): the checker counts timelines by generations", h.Timeline, tl, err)
	}
	for _, row := range rows {
		rw := Row{Node: row.NodeID, Epoch: row.Epoch, Owner: row.Owner, HorizonMs: row.HorizonMs,
			Timeline: rowTimelines[key{row.NodeID, 0}]}
		if !row.ExpiresAt.IsZero() {
			rw.ExpiresNs = row.ExpiresAt.UnixNano()
		}
		h.Rows = append(h.Rows, rw)
		cs, err := st.History(ctx, row.NodeID, 1<<30)
		if err != nil {
			return h, err
		}
		for _, c := range cs {
			cl := Claim{
				Node: c.NodeID, Epoch: c.Epoch, Owner: c.Owner, AcquiredNs: c.AcquiredAt.UnixNano(),
				FromMs: c.FromMs, HorizonMs: c.HorizonMs, EndReason: string(c.EndReason),
				Timeline: claimTimelines[key{c.NodeID, c.Epoch}],
			}
			if !c.EndedAt.IsZero() {
				cl.EndedNs = c.EndedAt.UnixNano()
			} else if row.Epoch == c.Epoch && !row.ExpiresAt.IsZero() {
				cl.ExpiresNs = row.ExpiresAt.UnixNano()
			}
			h.Claims = append(h.Claims, cl)
		}
	}
	return h, nil
}

// timelines runs query, whose rows are a node ID, an epoch and a
// timeline, and returns the timelines by node ID and epoch.
func timelines(ctx context.Context, db *sql.DB, query string) (map[key]int64, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[key]int64{}
	for rows.Next() {
		var k key
		var tl int64
		if err := rows.Scan(&k.node, &k.epoch, &tl); err != nil {
			return nil, err
		}
		out[k] = tl
	}
	return out, rows.Err()
}

// checkWho asks admin.Store.Who, for the first and the last ID of every
// lease, which claims may have stamped it: the horizons partition each
// node ID's time line, so the answer must be exactly the claim that did;
// for a claim that the history lacks (lost in a failover, which Check
// accepts only after a failover), no claim of a higher epoch.
func (r *run) checkWho(ctx context.Context, rep *Report, h History) {
	db, err := sql.Open("pgx", r.adminDSN)
	if err != nil {
		r.failf("who: %v", err)
		return
	}
	defer db.Close()
	st, err := admin.New(db, admin.Config{Table: table, MinNode: minNode, MaxNode: maxNode})
	if err != nil {
		r.failf("who: %v", err)
		return
	}
	recorded := map[key]bool{}
	for _, c := range h.Claims {
		recorded[key{c.Node, c.Epoch}] = true
	}
	for _, f := range h.Files {
		seen := map[key]bool{}
		var samples []IDs
		for i := len(f.Records) - 1; i >= 0; i-- { // the last ID of each lease
			if b, ok := f.Records[i].(IDs); ok && !seen[key{b.Node, b.Epoch}] {
				seen[key{b.Node, b.Epoch}] = true
				samples = append(samples, IDs{Node: b.Node, Epoch: b.Epoch, IDs: b.IDs[len(b.IDs)-1:]})
			}
		}
		clear(seen)
		for _, rec := range f.Records { // the first
			if b, ok := rec.(IDs); ok && !seen[key{b.Node, b.Epoch}] {
				seen[key{b.Node, b.Epoch}] = true
				samples = append(samples, IDs{Node: b.Node, Epoch: b.Epoch, IDs: b.IDs[:1]})
			}
		}
		for _, s := range samples {
			ms := f.Header.Layout.Decode(bw.ID(s.IDs[0])).Ms
			// The workers' clocks are within maxOffset of the database's.
			cs, err := st.Who(ctx, s.Node, ms, maxOffset*time.Millisecond)
			if err != nil {
				r.failf("who %d %d: %v", s.Node, ms, err)
				return
			}
			var got []int64
			for _, c := range cs {
				got = append(got, c.Epoch)
			}
			switch {
			case !recorded[key{s.Node, s.Epoch}]:
				// A claim lost in a failover: at most the claim before it,
				// whose horizon the quarantine raised, may cover the ID;
				// never a later one.
				if len(cs) > 1 || len(cs) == 1 && cs[0].Epoch >= s.Epoch {
					rep.violate("who", "%s: ID %d minted under node %d epoch %d, a claim lost in a failover: Who(%d, %d) gives epochs %v",
						f.name(), s.IDs[0], s.Node, s.Epoch, s.Node, ms, got)
				}
			case len(cs) != 1 || cs[0].Epoch != s.Epoch:
				rep.violate("who", "%s: ID %d minted under node %d epoch %d: Who(%d, %d) gives epochs %v",
					f.name(), s.IDs[0], s.Node, s.Epoch, s.Node, ms, got)
			}
		}
	}
}

// tail returns the end of a worker's log.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// A worker that dies of SIGTERM before it creates its record file is no
// failure of the run; one that dies of it later, or exits with an error,
// is.
func TestTermedAtStart(t *testing.T) {
	run := func(sig syscall.Signal) error {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep to run: %v", err)
		}
		_ = cmd.Process.Signal(sig)
		return cmd.Wait()
	}
	dir := t.TempDir()
	missing, present := filepath.Join(dir, "missing.rec"), filepath.Join(dir, "present.rec")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	termed, killed := run(syscall.SIGTERM), run(syscall.SIGKILL)
	for _, c := range []struct {
		err  error
		out  string
		want bool
	}{
		{termed, missing, true},
		{termed, present, false},
		{killed, missing, false},
		{errors.New("exit status 1"), missing, false},
	} {
		p := &proc{err: c.err, out: c.out}
		if got := p.termedAtStart(); got != c.want {
			t.Errorf("termedAtStart(%v, %s) = %v, want %v", c.err, filepath.Base(c.out), got, c.want)
		}
	}
}
