package javatest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/snowflake"

	bw "github.com/bwmarrin/snowflake"
)

// chaosTTL is the lease length of every holder of the chaos test: the
// shortest a table allows, so that lapses and takeovers come within seconds.
const chaosTTL = 3 * time.Second

// chaosLayout is the layout every holder mints with: js53's 4 IDs per
// millisecond keep "as fast as allowed" to files of a few megabytes.
var chaosLayout = snowflake.JS53

// chaos is one run of the chaos test on one table: JVM Mint processes and
// Go holders leasing node IDs of it, with faults.
type chaos struct {
	t      *testing.T
	k      javaKit
	srv    *pgtest.Server
	admin  *sql.DB // direct, for the operator's steps and the checks
	db     *sql.DB // the Go holders', through the run's endpoint
	jdbc   string  // the Java holders', through the run's endpoint
	table  string
	dir    string
	ctx    context.Context
	mu     sync.Mutex
	javas  []*javaHolder
	gos    []*goHolder
	faults map[string]int
}

// javaHolder is a Mint process.
type javaHolder struct {
	name, out   string
	cmd         *exec.Cmd
	leased      chan struct{} // closed when its lease is held
	node, epoch int64         // its lease, once leased
	exited      chan struct{}
	code        int    // its exit status, once exited (-1 for a signal)
	end         string // its "ended:" line
	refused     int64
	mu          sync.Mutex
	stderr      bytes.Buffer
}

// goHolder is a lease of the Go library minting in this process.
type goHolder struct {
	name        string
	reg         *nodeid.Registry
	lease       *nodeid.Lease
	leased      chan struct{}
	node, epoch int64
	stop        chan struct{}
	done        chan struct{}
	mu          sync.Mutex
	ids         []int64
	refused     int
	err         error
}

var (
	leasedLine = regexp.MustCompile(`^nodeid-mint: leased node (\d+) epoch (\d+) `)
	endedLine  = regexp.MustCompile(`^nodeid-mint: ended: (\w+); minted (\d+), refused (\d+)$`)
)

func (c *chaos) fault(name string) {
	c.mu.Lock()
	c.faults[name]++
	c.mu.Unlock()
}

// startJava starts a Mint process on the table.
func (c *chaos) startJava() *javaHolder {
	c.mu.Lock()
	name := fmt.Sprintf("j%d", len(c.javas)+1)
	c.mu.Unlock()
	h := &javaHolder{name: name, out: filepath.Join(c.dir, name+".ids"), leased: make(chan struct{}), exited: make(chan struct{})}
	cmd := c.k.command(c.ctx, "dev.nodeid.Mint", "--table", c.table, "--dsn", c.jdbc, "--ttl", "3s",
		"--layout", "js53", "--out", h.out, "--owner", "java-"+name, "--wait", "2m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	h.cmd = cmd
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			h.stderr.WriteString(line + "\n")
			if m := leasedLine.FindStringSubmatch(line); m != nil {
				h.node, _ = strconv.ParseInt(m[1], 10, 64)
				h.epoch, _ = strconv.ParseInt(m[2], 10, 64)
				close(h.leased)
			}
			if m := endedLine.FindStringSubmatch(line); m != nil {
				h.end = m[1]
				h.refused, _ = strconv.ParseInt(m[3], 10, 64)
			}
			h.mu.Unlock()
		}
		err := cmd.Wait()
		h.mu.Lock()
		h.code = cmd.ProcessState.ExitCode()
		if err != nil && h.code == 0 {
			h.code = -1
		}
		h.mu.Unlock()
		close(h.exited)
	}()
	c.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.exited
	})
	c.mu.Lock()
	c.javas = append(c.javas, h)
	c.mu.Unlock()
	return h
}

func (h *javaHolder) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.String()
}

// startGo starts a Go holder: it leases a node ID of the table, mints with
// the snowflake package until stopped or its lease ends, then releases.
func (c *chaos) startGo() *goHolder {
	c.mu.Lock()
	name := fmt.Sprintf("g%d", len(c.gos)+1)
	c.mu.Unlock()
	reg, err := nodeid.New(c.db, nodeid.WithTable(c.table), nodeid.WithTTL(chaosTTL), nodeid.WithOwner("go-"+name))
	if err != nil {
		c.t.Fatal(err)
	}
	h := &goHolder{name: name, reg: reg, leased: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	c.t.Cleanup(func() {
		h.halt()
		<-h.done
		_ = reg.Close()
	})
	go func() {
		defer close(h.done)
		var l *nodeid.Lease
		for l == nil {
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
			l, err = reg.Acquire(ctx)
			cancel()
			if err != nil {
				select { // the database restarting: try again, until stopped
				case <-h.stop:
					h.err = err
					return
				case <-c.ctx.Done():
					h.err = err
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		gen, err := snowflake.New(l, snowflake.WithLayout(chaosLayout))
		if err != nil {
			h.err = err
			_ = l.Release(context.Background())
			return
		}
		h.lease, h.node, h.epoch = l, l.NodeID(), l.Epoch()
		close(h.leased)
		for n := 0; ; n++ {
			select {
			case <-h.stop:
				_ = l.Release(context.Background())
				return
			default:
			}
			id, err := gen.Generate()
			if err != nil {
				h.mu.Lock()
				h.refused++
				h.mu.Unlock()
				if errors.Is(err, nodeid.ErrLeaseLost) || errors.Is(err, nodeid.ErrReleased) {
					_ = l.Release(context.Background())
					return
				}
				time.Sleep(time.Millisecond) // ErrClockAhead clears at the next renewal
				continue
			}
			h.mu.Lock()
			h.ids = append(h.ids, int64(id))
			h.mu.Unlock()
			if n%4 == 3 {
				time.Sleep(time.Millisecond) // pace: the layout's 4 a millisecond without spinning
			}
		}
	}()
	c.mu.Lock()
	c.gos = append(c.gos, h)
	c.mu.Unlock()
	return h
}

var haltMu sync.Mutex

func (h *goHolder) halt() {
	haltMu.Lock()
	defer haltMu.Unlock()
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
}

func (h *goHolder) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// waitFor polls cond until it holds, failing the test after within.
func (c *chaos) waitFor(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %s\n%s", what, within, c.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *chaos) logs() string {
	var b strings.Builder
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.javas {
		fmt.Fprintf(&b, "--- %s ---\n%s", h.name, h.log())
	}
	for _, h := range c.gos {
		fmt.Fprintf(&b, "--- %s: node %d epoch %d, %d IDs, err %v\n", h.name, h.node, h.epoch, h.count(), h.err)
	}
	return b.String()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fileIDs reads the complete lines of a Mint's output: a line cut by a
// SIGKILL is no ID.
func fileIDs(t *testing.T, path string) []int64 {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	} else {
		return nil
	}
	var ids []int64
	for _, l := range strings.Split(string(data), "\n") {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatalf("%s: line %q is not a decimal ID", path, l)
		}
		ids = append(ids, v)
	}
	return ids
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// adminRow runs a one-row query on the direct connection, trying again
// while the server restarts (its pooled connections are then terminated).
func (c *chaos) adminRow(query string, args []any, dest ...any) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = c.admin.QueryRow(query, args...).Scan(dest...); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// rowEpoch reads the epoch of node's row.
func (c *chaos) rowEpoch(node int64) int64 {
	var e int64
	if err := c.adminRow("SELECT epoch FROM "+c.table+" WHERE node_id = $1", []any{node}, &e); err != nil {
		c.t.Fatal(err)
	}
	return e
}

// round runs one round of faults on a table full of holders: a SIGKILL, a
// SIGSTOP resumed after a takeover, an eviction, a handover by release, a
// server restart, with new holders taking every freed node ID.
func (c *chaos) round(live []any, restart bool) []any {
	t := c.t
	for _, h := range live {
		switch h := h.(type) {
		case *javaHolder:
			c.waitFor(h.name+" leased", 90*time.Second, func() bool { return isClosed(h.leased) || isClosed(h.exited) })
			c.waitFor(h.name+" minted", 30*time.Second, func() bool { return fileSize(h.out) > 0 || isClosed(h.exited) })
		case *goHolder:
			c.waitFor(h.name+" leased", 90*time.Second, func() bool { return isClosed(h.leased) || isClosed(h.done) })
			c.waitFor(h.name+" minted", 30*time.Second, func() bool { return h.count() > 0 || isClosed(h.done) })
		}
	}
	var javas []*javaHolder
	var gos []*goHolder
	for _, h := range live {
		switch h := h.(type) {
		case *javaHolder:
			if !isClosed(h.exited) {
				javas = append(javas, h)
			}
		case *goHolder:
			if !isClosed(h.done) {
				gos = append(gos, h)
			}
		}
	}
	if len(javas) < 3 || len(gos) < 1 {
		t.Fatalf("a round needs 3 Java holders and a Go one holding leases; %d and %d are\n%s", len(javas), len(gos), c.logs())
	}
	killed, stopped, evicted := javas[0], javas[1], javas[2]
	handover := gos[0]

	// The faults, at once.
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.fault("SIGKILL")
	if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.fault("SIGSTOP")
	var status string
	if err := c.adminRow("SELECT status FROM "+c.table+"_evict(node_id => $1, epoch => $2)", []any{evicted.node, evicted.epoch}, &status); err != nil || status != "ok" {
		t.Fatalf("evicting %s's lease: %q %v", evicted.name, status, err)
	}
	c.fault("evictions")
	handover.halt()
	c.fault("handovers")

	// New holders take the four node IDs freed: at once (the handover),
	// after the eviction's expiry, and after the lapses.
	next := []any{c.startJava(), c.startJava(), c.startJava(), c.startGo()}
	for _, h := range javas[3:] {
		next = append(next, h)
	}
	for _, h := range gos[1:] {
		next = append(next, h)
	}

	// The SIGSTOPped holder resumes once its node ID has a later holder,
	// and must mint nothing more: its lease ended while it slept. A new
	// holder whose lease ended meanwhile (its renewals late on a loaded
	// machine) is replaced, so that some holder is left to take it.
	c.waitFor(stopped.name+"'s node taken over", 60*time.Second, func() bool {
		c.replaceEnded(next)
		return c.rowEpoch(stopped.node) > stopped.epoch
	})
	if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s, resumed after a takeover, did not exit\n%s", stopped.name, stopped.log())
	}
	stopped.mu.Lock()
	code, end, refused := stopped.code, stopped.end, stopped.refused
	stopped.mu.Unlock()
	if code != 5 || refused < 1 || (end != "expired" && end != "taken_over") {
		t.Fatalf("%s, resumed after a takeover: exit %d, end %q, %d refused; want exit 5, expired or taken_over, a refusal\n%s",
			stopped.name, code, end, refused, stopped.log())
	}
	c.fault("zombies resumed and refused")

	select {
	case <-evicted.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s, evicted, did not exit\n%s", evicted.name, evicted.log())
	}
	// Evicted, it ends so at its next renewal; expired if its deadline
	// passed first (its renewals late on a loaded machine). Either way it
	// refuses to mint and exits 5.
	evicted.mu.Lock()
	code, end, refused = evicted.code, evicted.end, evicted.refused
	evicted.mu.Unlock()
	if code != 5 || refused < 1 || (end != "evicted" && end != "expired") {
		t.Fatalf("%s, evicted: exit %d, end %q, %d refused; want exit 5, evicted (or expired), a refusal\n%s",
			evicted.name, code, end, refused, evicted.log())
	}
	c.fault("evicted holders refused")
	<-handover.done
	c.waitFor(killed.name+"'s node taken over", 60*time.Second, func() bool {
		c.replaceEnded(next)
		return c.rowEpoch(killed.node) > killed.epoch
	})

	if restart {
		for _, h := range next {
			switch h := h.(type) {
			case *javaHolder:
				c.waitFor(h.name+" leased", 90*time.Second, func() bool { return isClosed(h.leased) || isClosed(h.exited) })
			case *goHolder:
				c.waitFor(h.name+" leased", 90*time.Second, func() bool { return isClosed(h.leased) || isClosed(h.done) })
			}
		}
		before := map[any]int64{}
		for _, h := range next {
			switch h := h.(type) {
			case *javaHolder:
				before[h] = fileSize(h.out)
			case *goHolder:
				before[h] = int64(h.count())
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
		if err := c.srv.Restart(ctx, pgtest.Fast); err != nil {
			cancel()
			t.Fatalf("restarting the server: %v", err)
		}
		cancel()
		c.fault("server restarts")
		// Every holder mints again after the restart, or its lease ended
		// (one whose renewals failed for longer than its deadline allowed).
		for _, h := range next {
			switch h := h.(type) {
			case *javaHolder:
				c.waitFor(h.name+" minting after the restart", 60*time.Second, func() bool {
					return fileSize(h.out) > before[h]+64 || isClosed(h.exited)
				})
			case *goHolder:
				c.waitFor(h.name+" minting after the restart", 60*time.Second, func() bool {
					return int64(h.count()) > before[h]+4 || isClosed(h.done)
				})
			}
		}
	}
	// A holder whose lease ended is replaced, so that the next round has a
	// full table.
	var live2 []any
	for _, h := range next {
		switch h := h.(type) {
		case *javaHolder:
			if isClosed(h.exited) {
				live2 = append(live2, c.startJava())
				continue
			}
		case *goHolder:
			if isClosed(h.done) {
				live2 = append(live2, c.startGo())
				continue
			}
		}
		live2 = append(live2, h)
	}
	return live2
}

// replaceEnded starts a new holder of the same kind for each holder of hs
// whose lease ended, in its place.
func (c *chaos) replaceEnded(hs []any) {
	for i, h := range hs {
		switch h := h.(type) {
		case *javaHolder:
			if isClosed(h.exited) {
				hs[i] = c.startJava()
			}
		case *goHolder:
			if isClosed(h.done) {
				hs[i] = c.startGo()
			}
		}
	}
}

// stopAll stops every holder: Mint on SIGTERM releases with its last stamp.
func (c *chaos) stopAll() {
	c.mu.Lock()
	javas, gos := append([]*javaHolder(nil), c.javas...), append([]*goHolder(nil), c.gos...)
	c.mu.Unlock()
	for _, h := range javas {
		if !isClosed(h.exited) {
			_ = h.cmd.Process.Signal(syscall.SIGCONT)
			_ = h.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, h := range gos {
		h.halt()
	}
	for _, h := range javas {
		select {
		case <-h.exited:
		case <-time.After(60 * time.Second):
			c.t.Fatalf("%s did not exit on SIGTERM\n%s", h.name, h.log())
		}
	}
	for _, h := range gos {
		<-h.done
	}
}

// claim is a claim of the table's history: its node ID and epoch, the
// horizon it stamped after (from_ms) and the one it ended with.
type claim struct {
	node, epoch      int64
	fromMs, endMs    int64
	ended            bool
	reason           string
	nextFrom         int64 // the next claim of the node ID's from_ms, or -1
	nextEpochPresent bool
}

// verify counts every ID minted and checks them: none twice, each of its
// lease's node ID, stamped after its claim's horizon and at or below the
// next holder's. It returns the figures of the run.
func (c *chaos) verify() (ids, holders int, takeovers int, refused int64) {
	t := c.t
	hist := map[[2]int64]*claim{}
	var one int
	if err := c.adminRow("SELECT 1", nil, &one); err != nil { // past connections the restarts ended
		t.Fatal(err)
	}
	c.admin.SetMaxIdleConns(0) // and no other pooled one
	rows, err := c.admin.Query(`SELECT node_id, epoch, from_ms, COALESCE(horizon_ms, 0), ended_at IS NOT NULL, COALESCE(end_reason, ''),
		COALESCE(lead(from_ms) OVER (PARTITION BY node_id ORDER BY epoch), -1)
		FROM ` + c.table + `_history ORDER BY node_id, epoch`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var cl claim
		if err := rows.Scan(&cl.node, &cl.epoch, &cl.fromMs, &cl.endMs, &cl.ended, &cl.reason, &cl.nextFrom); err != nil {
			t.Fatal(err)
		}
		hist[[2]int64{cl.node, cl.epoch}] = &cl
		if (cl.reason == "expired" || cl.reason == "evicted") && cl.nextFrom >= 0 {
			takeovers++
		}
	}
	rows.Close()

	type lease struct {
		who         string
		node, epoch int64
		ids         []int64
		java        bool
	}
	var leases []lease
	c.mu.Lock()
	for _, h := range c.javas {
		if isClosed(h.leased) {
			leases = append(leases, lease{h.name, h.node, h.epoch, fileIDs(t, h.out), true})
			holders++
		}
		refused += h.refused
	}
	for _, h := range c.gos {
		if isClosed(h.leased) {
			h.mu.Lock()
			leases = append(leases, lease{h.name, h.node, h.epoch, append([]int64(nil), h.ids...), false})
			refused += int64(h.refused)
			h.mu.Unlock()
			holders++
		}
	}
	c.mu.Unlock()

	seen := make(map[int64]string)
	var dups, early, late, wrongNode int
	var examples []string
	for _, l := range leases {
		cl := hist[[2]int64{l.node, l.epoch}]
		if cl == nil {
			t.Fatalf("%s's lease, node %d epoch %d, is not in the history", l.who, l.node, l.epoch)
		}
		for _, id := range l.ids {
			ids++
			p := chaosLayout.Decode(bw.ID(id))
			if prev, ok := seen[id]; ok {
				dups++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("ID %d minted by %s and %s", id, prev, l.who))
				}
			}
			seen[id] = l.who
			switch {
			case p.Node != l.node:
				wrongNode++
			case p.Ms <= cl.fromMs:
				early++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("%s's ID %d stamped %d, at or before its claim's horizon %d", l.who, id, p.Ms, cl.fromMs))
				}
			case cl.nextFrom >= 0 && p.Ms > cl.nextFrom:
				late++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("%s's ID %d stamped %d, after the next holder's horizon %d", l.who, id, p.Ms, cl.nextFrom))
				}
			}
		}
	}
	if dups+early+late+wrongNode > 0 {
		t.Errorf("%d IDs minted twice, %d stamped at or before their claim's horizon, %d after a later holder's, %d of another node ID:\n%s",
			dups, early, late, wrongNode, strings.Join(examples, "\n"))
	}
	// The Java client's IDs trace to their lease as nodeid who traces them
	// (admin's Who, on the history): the first, a middle and the last of
	// each lease.
	cfg := admin.DefaultConfig()
	cfg.Table, cfg.MinNode, cfg.MaxNode = c.table, 0, 3
	st, err := admin.New(c.admin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	traced := 0
	for _, l := range leases {
		if !l.java || len(l.ids) == 0 {
			continue
		}
		for _, id := range []int64{l.ids[0], l.ids[len(l.ids)/2], l.ids[len(l.ids)-1]} {
			p := chaosLayout.Decode(bw.ID(id))
			rows, err := st.Who(c.ctx, p.Node, p.Ms, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].NodeID != l.node || rows[0].Epoch != l.epoch {
				t.Errorf("who of %s's ID %d (node %d, ms %d): %+v; want its lease, node %d epoch %d", l.who, id, p.Node, p.Ms, rows, l.node, l.epoch)
			}
			traced++
		}
	}
	if traced == 0 {
		t.Error("no ID of the Java client was traced with who")
	}
	return ids, holders, takeovers, refused
}

// TestChaos runs JVM Mint processes and Go holders on one table, directly
// and through PgBouncer in transaction mode, through SIGKILLs, SIGSTOPped
// holders resumed after a takeover, evictions, handovers and a server
// restart, and counts every ID minted: none twice, none stamped before its
// claim's horizon or after a later holder's. The positive controls
// (takeovers, resumed holders refused, refused mints) must happen in every
// run. -java.long runs more rounds.
func TestChaos(t *testing.T) {
	pgtest.SkipShort(t)
	k := compile(t)
	srv := pgtest.NewServer(t)
	rounds := 1
	if *javaLong {
		rounds = 8
	}
	start := time.Now()
	for _, via := range []string{"direct", "pgbouncer"} {
		t.Run(via, func(t *testing.T) {
			began := time.Now()
			admin, dsn := srv.NewDB(t)
			table := "chaos_" + via
			createTable(t, admin, table, 0, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &chaos{t: t, k: k, srv: srv, admin: admin, db: admin, jdbc: jdbcURL(t, dsn), table: table, dir: t.TempDir(),
				ctx: ctx, faults: map[string]int{}}
			if via == "pgbouncer" {
				b := srv.NewPgBouncer(t)
				var name string
				if err := admin.QueryRow("SELECT current_database()").Scan(&name); err != nil {
					t.Fatal(err)
				}
				db, err := sql.Open("pgx", b.DSN(name, "default_query_exec_mode=exec"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				c.db = db
				c.jdbc = jdbcURL(t, b.DSN(name))
			}
			live := []any{c.startJava(), c.startJava(), c.startJava(), c.startGo()}
			for r := 0; r < rounds; r++ {
				live = c.round(live, r == 0 || r%3 == 2)
			}
			c.stopAll()
			ids, holders, takeovers, refused := c.verify()
			t.Logf("%s: %d IDs from %d leases (%d JVM processes, %d Go holders) in %s; faults %v; %d takeovers; %d refused mints; 0 duplicates",
				via, ids, holders, len(c.javas), len(c.gos), time.Since(began).Round(time.Millisecond), c.faults, takeovers, refused)
			if takeovers < rounds || refused < int64(rounds) || c.faults["zombies resumed and refused"] < rounds || ids == 0 {
				t.Errorf("the positive controls did not all happen: %d takeovers, %d refused mints, %d zombies refused, %d IDs (want each > 0 per round)",
					takeovers, refused, c.faults["zombies resumed and refused"], ids)
			}
		})
	}
	t.Logf("chaos, both runs: %s", time.Since(start).Round(time.Millisecond))
}

// TestChaosControlUnfenced is the control without nodeid: two processes
// with the same fixed worker ID, as a static configuration gives them, mint
// the same IDs. It shows that the chaos test's counting can see duplicates.
func TestChaosControlUnfenced(t *testing.T) {
	pgtest.SkipShort(t) // a control of TestChaos, which -short skips
	k := compile(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var outs []string
	var exited []chan struct{}
	for i := 0; i < 2; i++ {
		out := filepath.Join(dir, fmt.Sprintf("fixed%d.ids", i))
		cmd := k.command(ctx, "dev.nodeid.Mint", "--unfenced-node", "7", "--layout", "js53", "--out", out)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
		outs, exited = append(outs, out), append(exited, done)
	}
	// Both mint at once for a while: each has written some IDs after the
	// other began.
	deadline := time.Now().Add(60 * time.Second)
	for fileSize(outs[0]) < 1<<13 || fileSize(outs[1]) < 1<<13 {
		if time.Now().After(deadline) {
			t.Fatalf("the unfenced processes did not mint 8 KiB of IDs each in 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel() // SIGKILL
	for _, d := range exited {
		<-d
	}
	seen := map[int64]bool{}
	dups, total := 0, 0
	for _, o := range outs {
		ids := fileIDs(t, o)
		total += len(ids)
		perFile := map[int64]bool{}
		for _, id := range ids {
			if perFile[id] {
				t.Fatalf("one unfenced process minted %d twice: the control is broken", id)
			}
			perFile[id] = true
			if seen[id] {
				dups++
			}
		}
		for id := range perFile {
			seen[id] = true
		}
	}
	t.Logf("control without nodeid: 2 processes with worker ID 7 minted %d IDs, %d of them twice", total, dups)
	if dups == 0 {
		t.Fatal("two processes with one fixed worker ID minted no duplicate: the control cannot show what the chaos test counts")
	}
}
