package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

// stamps is what a checker knows of the IDs holders minted: each holder's
// IDs, compared for duplicates and for milliseconds that two holders of one
// node ID both stamped.
type stamps struct{ holders [][]uint64 }

func (s *stamps) add(ids []uint64) { s.holders = append(s.holders, ids) }

// check returns the number of IDs minted twice and the milliseconds of one
// node ID stamped by more than one holder.
func (s *stamps) check() (dups, sharedMs int) {
	seen := map[uint64]int{}
	byMs := map[[2]int64]int{} // node, ms -> the first holder that stamped it
	for h, ids := range s.holders {
		for _, id := range ids {
			if _, ok := seen[id]; ok {
				dups++
			}
			seen[id] = h
			d := snowflake.DefaultLayout.Decode(bw.ID(id))
			k := [2]int64{d.Node, d.Ms}
			if first, ok := byMs[k]; !ok {
				byMs[k] = h
			} else if first != h {
				sharedMs++
				byMs[k] = -1 // count each millisecond once
			}
		}
	}
	return dups, sharedMs
}

// auxWriters returns the processes of a server that write and flush WAL on
// their own (the WAL writer, the background writer, the checkpointer, the
// autovacuum launcher), and its postmaster, read through su (a superuser).
func auxWriters(t *testing.T, su *sql.DB) (aux []int, postmaster int) {
	t.Helper()
	ctx := ctxOf(t)
	rows, err := su.QueryContext(ctx, `SELECT pid FROM pg_stat_activity
		WHERE backend_type IN ('walwriter', 'background writer', 'checkpointer', 'autovacuum launcher')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		aux = append(aux, pid)
	}
	var backend int
	if err := su.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	if postmaster = parentOf(backend); postmaster <= 1 || len(aux) < 3 {
		t.Fatalf("the server's processes: postmaster %d, WAL writers %v", postmaster, aux)
	}
	return aux, postmaster
}

// parentOf returns the parent process of pid, from /proc.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// childrenOf returns the processes whose parent is pid.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if parentOf(child) == pid {
			out = append(out, child)
		}
	}
	return out
}

// gone reports whether pid has exited (or is a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// crash kills the postmaster and every process of the server at once, as a
// power cut would, and starts the server again: it recovers from its WAL
// files. With its WAL writers stopped beforehand, an asynchronous commit
// that no later synchronous commit flushed is lost.
func crash(t *testing.T, srv *pgtest.Server, postmaster int) {
	t.Helper()
	procs := append(childrenOf(postmaster), postmaster)
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ctx := ctxOf(t)
	for _, pid := range procs {
		for !gone(pid) {
			select {
			case <-ctx.Done():
				t.Fatalf("process %d of the server outlived SIGKILL", pid)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if err := srv.Stop(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// A server, database or role whose synchronous_commit is off loses the
// commits the WAL writer has not flushed when it crashes. A claim is
// durable whatever it says: after the crash its holder still holds the node
// ID, at the same epoch, and nobody else can claim it; a plain INSERT of the
// same session before the crash is lost, which shows that the crash lost
// what was not flushed.
func TestClaimSurvivesACrashWithAsynchronousCommit(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"database", "role"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			srv := pgtest.NewServer(t, "wal_writer_delay=10s")
			su, _ := srv.NewDB(t)
			ctx := ctxOf(t)
			var name string
			if err := su.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil {
				t.Fatal(err)
			}
			ddl, _ := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: postgres.DefaultMaxTTL}.SQL()
			execSQL(t, su, ddl)
			execSQL(t, su, `CREATE TABLE control (n integer)`)
			dsn := srv.DSN(name)
			if where == "database" {
				execSQL(t, su, `ALTER DATABASE `+name+` SET synchronous_commit = off`)
			} else {
				execSQL(t, su, `CREATE ROLE app LOGIN`)
				grants, err := postgres.GrantSQL(postgres.DefaultTable, "app")
				if err != nil {
					t.Fatal(err)
				}
				execSQL(t, su, grants+`GRANT INSERT, SELECT ON control TO app`)
				execSQL(t, su, `ALTER ROLE app SET synchronous_commit = off`)
				dsn = strings.Replace(dsn, "postgres://postgres@", "postgres://app@", 1)
			}
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var setting string
			if err := db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&setting); err != nil || setting != "off" {
				t.Fatalf("synchronous_commit of the application's sessions: %q, %v; want off", setting, err)
			}
			aux, postmaster := auxWriters(t, su)
			for _, pid := range aux {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}

			adb, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer adb.Close()
			adb.SetMaxIdleConns(1) // one connection for the crash to break
			a, err := nodeid.New(adb, nodeid.WithTTL(time.Minute), nodeid.WithOwner("holder-a"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			la, err := a.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ma := mint(t, la)
			// After the claim's commit, so that its flush cannot carry it.
			if _, err := db.ExecContext(ctx, `INSERT INTO control VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			for ma.count() < 100 {
				time.Sleep(time.Millisecond)
			}
			crash(t, srv, postmaster)
			after, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer after.Close()

			var lost bool
			if err := after.QueryRowContext(ctx, `SELECT count(*) = 0 FROM control`).Scan(&lost); err != nil {
				t.Fatal(err)
			}
			if !lost {
				t.Fatal("the INSERT committed asynchronously before the crash survived it: the crash lost nothing, and proves nothing")
			}
			row := struct {
				owner string
				epoch int64
			}{}
			if err := after.QueryRowContext(ctx, `SELECT owner, epoch FROM snowflake_nodes WHERE node_id = 0`).Scan(&row.owner, &row.epoch); err != nil {
				t.Fatal(err)
			}
			if row.owner != "holder-a" || row.epoch != la.Epoch() {
				t.Fatalf("after the crash node ID 0 has owner %q, epoch %d; want holder-a's claim at epoch %d: the claim was lost",
					row.owner, row.epoch, la.Epoch())
			}
			b, err := nodeid.New(after, nodeid.WithTTL(time.Minute), nodeid.WithOwner("holder-b"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if l, err := b.TryAcquire(ctx); !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
				t.Fatalf("a second holder's Acquire after the crash = %v, %v; want ErrNoNodeIDAvailable: node ID 0 is still held", l, err)
			}
			// The holder goes on, then hands the node ID over.
			for n := ma.count() + 100; ma.count() < n; {
				time.Sleep(time.Millisecond)
			}
			if err := la.Release(ctx); err != nil {
				t.Fatal(err)
			}
			<-ma.done
			lb, err := b.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if lb.Epoch() <= la.Epoch() {
				t.Errorf("the next holder's epoch %d is not above the crashed-through holder's %d", lb.Epoch(), la.Epoch())
			}
			mb := mint(t, lb)
			for mb.count() < 100 {
				time.Sleep(time.Millisecond)
			}
			_ = lb.Release(ctx)
			<-mb.done
			var s stamps
			s.add(ma.ids)
			s.add(mb.ids)
			if dups, shared := s.check(); dups != 0 || shared != 0 {
				t.Errorf("%d IDs minted twice, %d ms of node ID 0 stamped by both holders", dups, shared)
			}
		})
	}
}

// A lease table, history or configuration made UNLOGGED (which a crash
// empties) is refused by CheckSchema and by the Registry's first Acquire,
// with a Fatal error naming it.
func TestUnloggedTablesAreRefused(t *testing.T) {
	t.Parallel()
	for _, table := range []string{"snowflake_nodes", "snowflake_nodes_history", "snowflake_nodes_config"} {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			su, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 3, MaxTTL: postgres.DefaultMaxTTL})
			execSQL(t, su, `ALTER TABLE `+table+` SET UNLOGGED`)
			r, err := nodeid.New(db)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := ctxOf(t)
			for name, err := range map[string]error{"CheckSchema": r.CheckSchema(ctx), "Acquire": func() error {
				_, err := r.Acquire(ctx)
				return err
			}()} {
				if err == nil || !postgres.Fatal(err) || !strings.Contains(err.Error(), table+" is UNLOGGED") {
					t.Errorf("%s on an unlogged %s: %v; want a Fatal error naming it", name, table, err)
				}
			}
			execSQL(t, su, `ALTER TABLE `+table+` SET LOGGED`)
			if _, err := r.Acquire(ctx); err != nil {
				t.Errorf("Acquire once the table is logged again: %v", err)
			}
		})
	}
}

// pgTool returns the path of a PostgreSQL client program (pg_dump, psql).
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(dirs) == 0 {
		pgtest.Unavailable(t, fmt.Errorf("no %s on PATH or under /usr/lib/postgresql", name))
	}
	slices.Sort(dirs)
	return dirs[len(dirs)-1]
}

// holder claims node IDs with its own Registry and mints under each lease,
// keeping every ID and epoch.
type holder struct {
	reg    *nodeid.Registry
	epochs []int64
	ids    []uint64
}

func newHolder(t *testing.T, dsn, owner string, ttl time.Duration) *holder {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := nodeid.New(db, nodeid.WithTTL(ttl), nodeid.WithOwner(owner), logOnFailure(t, owner))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &holder{reg: r}
}

// claim acquires a lease and mints n IDs under it; with release it then
// releases the lease, else it leaves the minter running.
func (h *holder) claim(t *testing.T, n int, release bool) (*nodeid.Lease, *minter) {
	t.Helper()
	ctx := ctxOf(t)
	l, err := h.reg.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.epochs = append(h.epochs, l.Epoch())
	m := mint(t, l)
	for m.count() < n {
		select {
		case <-m.done:
			t.Fatalf("the generator stopped after %d IDs: %v", m.count(), m.errNow())
		case <-time.After(time.Millisecond):
		}
	}
	if release {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		<-m.done
		h.ids = append(h.ids, m.ids...)
	}
	return l, m
}

// A lease table moved into another cluster (pg_dump | psql, as a move or a
// major upgrade by dump does) after its rows were last written on timeline
// 2 of its old cluster, then a failover of the new cluster (to its timeline
// 2) that loses the claims made since the move: the new primary is not the
// server the table records, so the node ID is quarantined, and its next
// claim takes an epoch above every epoch the lost claims held. No
// millisecond is stamped by both holders.
func TestMoveThenFailover(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	ctx := ctxOf(t)
	src, srcDSN := pgtest.NewDB(t)
	execSQL(t, src, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl}))
	old := newHolder(t, srcDSN, "old-cluster", ttl)
	for range 3 {
		old.claim(t, 10, true)
	}
	// As after a promotion of the old cluster: its rows and its
	// configuration were last written on its timeline 2.
	execSQL(t, src, `UPDATE snowflake_nodes_config SET wal_timeline = 2`)

	pair := pgtest.NewPair(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dump := exec.CommandContext(ctx, pgTool(t, "pg_dump"), "--no-owner", "-t", "snowflake_nodes", "-t", "snowflake_nodes_history",
		"-t", "snowflake_nodes_config", srcDSN)
	sqlText, err := dump.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	restore := exec.CommandContext(ctx, pgTool(t, "psql"), "-v", "ON_ERROR_STOP=1", "-q", pair.Primary.DSN(dbName))
	restore.Stdin = strings.NewReader(string(sqlText))
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	// Another system identifier: the operator declares the move.
	moved, err := admin.New(openDB(t, pair.Primary.DSN(dbName)), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// As nodeid init --restored does: the DDL first (a dump of the tables
	// alone lacks their functions), then the declaration.
	if err := moved.Apply(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	if _, _, err := moved.Restored(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut() // from here on the standby receives nothing

	a := newHolder(t, pair.Primary.DSN(dbName), "holder-a", ttl)
	for range 3 {
		a.claim(t, 50, true)
	}
	la, ma := a.claim(t, 50, false)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	b := newHolder(t, pair.Standby.DSN(dbName), "holder-b", ttl)
	lb, mb := b.claim(t, 50, false)
	claimedAfter := time.Since(promoted)
	t.Logf("holder A's epochs %#x; holder B's epoch %#x, claimed %s after the promotion",
		a.epochs, lb.Epoch(), claimedAfter.Round(time.Millisecond))
	handedOver(t, ttl, la, ma, lb, mb, old.ids, a.ids)
	if claimedAfter < ttl {
		t.Errorf("holder B claimed %s after the promotion, before the quarantine of a maximum TTL (%s) and a tenth", claimedAfter, ttl)
	}
}

func mustSchema(t *testing.T, s postgres.Schema) string {
	t.Helper()
	ddl, err := s.SQL()
	if err != nil {
		t.Fatal(err)
	}
	return ddl
}

// A table that records synchronous replication needs none of the WAL
// functions: on a database that refuses them to everyone, the default
// (asynchronous) table is refused with an error naming the functions and
// the option, and a synchronous one is made, leased from, listed and
// released. A failover of it then quarantines nothing: the standby's first
// claim comes at once, at the next epoch.
func TestSynchronousReplicationNeedsNoWALFunctions(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	su, dsn := srv.NewDB(t)
	ctx := ctxOf(t)
	role := fmt.Sprintf("app_%d", time.Now().UnixNano())
	execSQL(t, su, `REVOKE EXECUTE ON FUNCTION pg_current_wal_lsn(), pg_walfile_name(pg_lsn), pg_control_checkpoint(), pg_control_system() FROM PUBLIC`)
	execSQL(t, su, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() { _ = srv.Exec(context.Background(), "postgres", `DROP ROLE IF EXISTS `+role) })
	execSQL(t, su, `CREATE SCHEMA ids AUTHORIZATION `+role)
	appDSN := strings.Replace(dsn, "postgres://postgres@", "postgres://"+role+"@", 1)
	db, err := sql.Open("pgx", appDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := admin.New(db, admin.Config{Table: "ids.nodes", MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Apply(ctx, time.Minute)
	if !postgres.Fatal(err) || !strings.Contains(err.Error(), "pg_control_system") || !strings.Contains(err.Error(), "Replication = postgres.Sync") {
		t.Fatalf("an asynchronous table on a server that refuses the WAL functions: %v; want a Fatal error naming them and the option", err)
	}
	if err := st.ApplyMode(ctx, time.Minute, admin.Sync); err != nil {
		t.Fatalf("a synchronous table: %v", err)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := nodeid.New(db, nodeid.WithTable("ids.nodes"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := st.List(ctx)
	if err != nil || len(rows) != 4 || rows[l.NodeID()].Owner != r.Owner() || st.Replication() != admin.Sync {
		t.Fatalf("list: %+v, %v (replication %q)", rows, err, st.Replication())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Made asynchronous, the same table is refused, naming the functions.
	if err := st.ApplyMode(ctx, time.Minute, admin.Async); !errors.As(err, new(*admin.WALError)) {
		t.Errorf("switching to asynchronous replication on this server: %v; want a WALError", err)
	}
	// An asynchronous table made by a role that may call them (here the
	// superuser) serves a client that may not: the table's functions run
	// as their owner, and the client needs only their grants.
	execSQL(t, su, mustSchema(t, postgres.Schema{Table: "ids.other", MinNode: 0, MaxNode: 3, MaxTTL: postgres.DefaultMaxTTL}))
	grants, err := postgres.GrantSQL("ids.other", role)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, su, grants)
	other, err := nodeid.New(db, nodeid.WithTable("ids.other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema on an asynchronous table whose owner may call the WAL functions, by a client that may not: %v", err)
	}
	ol, err := other.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire on an asynchronous table whose owner may call the WAL functions, by a client that may not: %v", err)
	}
	if err := ol.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Owned by the client, the table's functions are refused them, and the
	// first Acquire of a new process says so.
	execSQL(t, su, `ALTER FUNCTION ids.other_claim(text, bigint, bigint, integer, integer, integer) OWNER TO `+role+`;
		ALTER FUNCTION ids.other_server() OWNER TO `+role)
	refused, err := nodeid.New(db, nodeid.WithTable("ids.other"))
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if _, err := refused.Acquire(ctx); !postgres.Fatal(err) || !strings.Contains(fmt.Sprint(err), "pg_") || !strings.Contains(fmt.Sprint(err), "Replication = postgres.Sync") {
		t.Errorf("Acquire on an asynchronous table whose functions' owner may not call the WAL functions: %v; want a Fatal error naming them and the option", err)
	}
}

// promoteClean stops the primary cleanly once its standby has replayed
// everything, and promotes the standby: a switchover that loses nothing.
func promoteClean(t *testing.T, pair *pgtest.Pair) time.Time {
	t.Helper()
	ctx := ctxOf(t)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pair.Primary.Stop(ctx, pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	if err := pair.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// After a switchover, a trusted table (sync on a server that refuses the
// WAL functions, whose configuration the test stands in for) quarantines
// nothing: the new primary's first claim comes at once, at the next epoch.
// A watched table, async or sync where the functions answer, makes every
// node ID wait for the quarantine: nothing tells a switchover from a
// failover that lost a commit, a synchronous one's included.
func TestSwitchoverQuarantineByReplicationMode(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	for _, kind := range []string{"trusted", "sync", "async"} {
		mode := map[string]string{"trusted": "sync", "sync": "sync", "async": "async"}[kind]
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			pair := pgtest.NewPair(t)
			ctx := ctxOf(t)
			dbName, err := pair.Primary.CreateDatabase(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ddl := mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 7, MaxTTL: ttl, Replication: postgres.Replication(mode)})
			if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
				t.Fatal(err)
			}
			if kind == "trusted" {
				if err := pair.Primary.Exec(ctx, dbName, `UPDATE snowflake_nodes_config SET server_id = NULL, wal_timeline = NULL, creation_pending = NULL`); err != nil {
					t.Fatal(err)
				}
			}
			a := newHolder(t, pair.Primary.DSN(dbName), "holder-a", ttl)
			a.claim(t, 10, true)
			promoted := promoteClean(t, pair)
			db, err := sql.Open("pgx", pair.Standby.DSN(dbName))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			r, err := nodeid.New(db, nodeid.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			l, err := r.TryAcquire(ctx)
			switch {
			case kind == "trusted" && err != nil:
				t.Fatalf("the first claim after a switchover of a trusted table: %v; want a node ID at once", err)
			case kind == "trusted" && (l.NodeID() != 0 || l.Epoch() != a.epochs[0]+1):
				t.Errorf("the first claim after the switchover: node %d, epoch %d; want node 0 at epoch %d", l.NodeID(), l.Epoch(), a.epochs[0]+1)
			case kind != "trusted" && (!errors.Is(err, nodeid.ErrNoNodeIDAvailable) || !strings.Contains(fmt.Sprint(err), "quarantine")):
				t.Errorf("a claim right after a switchover of a watched %s table: %v; want every node ID quarantined", mode, err)
			}
			t.Logf("%s: first claim %s after the promotion: %v", kind, time.Since(promoted).Round(time.Millisecond), err)
		})
	}
}

// After a restore that nothing inside the database can tell (here: a base
// backup taken before holder A's claim, brought up as the new primary of a
// trusted table: sync on a server that refuses the WAL functions, whose
// configuration the test stands in for), the restored table shows
// node ID 0 free at A's epoch less one. "nodeid init --restored"
// (Store.Restored) quarantines every node ID and moves its next epoch to a
// new era: holder B then claims after the quarantine, at an epoch above
// A's, and no millisecond is stamped by both.
func TestRestoredQuarantinesAndMovesEpochs(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	pair := pgtest.NewPair(t)
	ctx := ctxOf(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ddl := mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl, Replication: postgres.Sync})
	if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
		t.Fatal(err)
	}
	if err := pair.Primary.Exec(ctx, dbName, `UPDATE snowflake_nodes_config SET server_id = NULL, wal_timeline = NULL, creation_pending = NULL`); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Cut() // the standby is the backup: it has nothing of A
	a := newHolder(t, pair.Primary.DSN(dbName), "holder-a", ttl)
	la, ma := a.claim(t, 100, false)
	if err := pair.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", pair.Standby.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := admin.New(db, admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rows, now, err := st.List(ctx)
	if err != nil || len(rows) != 1 || rows[0].State(now) != admin.Free || rows[0].Epoch != la.Epoch()-1 {
		t.Fatalf("the restored table: %+v, %v; want node ID 0 free at epoch %d, as before A's claim", rows, err, la.Epoch()-1)
	}
	gen, until, err := st.Restored(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	restoredAt := time.Now()
	b := newHolder(t, pair.Standby.DSN(dbName), "holder-b", ttl)
	lb, mb := b.claim(t, 100, false)
	t.Logf("generation %d, quarantined until %s; A's epoch %#x, B's %#x, claimed %s after the restore",
		gen, until.Format(time.RFC3339Nano), la.Epoch(), lb.Epoch(), time.Since(restoredAt).Round(time.Millisecond))
	handedOver(t, ttl, la, ma, lb, mb)
	if lb.PreviousHorizon() < until.UnixMilli() {
		t.Errorf("B stamps after %d, before the restore's quarantine ends at %d", lb.PreviousHorizon(), until.UnixMilli())
	}
}

// Maintenance never queues the fleet behind a long transaction: an
// eviction whose row another transaction holds gives up after
// store.LockTimeout saying what it waited for, and so does a migration that
// needs a lock a long reader holds, while renewals go on.
func TestMaintenanceTakesALockTimeout(t *testing.T) {
	t.Parallel()
	su, st, cl := claimedStore(t, 1)
	db := st.DB()
	c := ctxOf(t)
	tx, err := su.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(c, `SELECT * FROM snowflake_nodes WHERE node_id = $1 FOR KEY SHARE`, cl.NodeID); err != nil {
		t.Fatal(err)
	}
	_, err = st.Evict(c, cl.NodeID, cl.Epoch)
	if postgres.SQLSTATE(err) != "55P03" || !strings.Contains(fmt.Sprint(err), "waited 1s for a lock on the lease row of node ID") {
		t.Errorf("an eviction of a row another transaction holds: %v; want it to give up after a second, saying so", err)
	}
	if o, err := st.Renew(c, cl.Key, time.Minute, 0); err != nil || !o.OK {
		t.Errorf("the holder's renewal meanwhile: %+v, %v", o, err)
	}
	// The DDL on an up-to-date table takes no lock that the reader's, or
	// the fleet's renewals', conflict with.
	if _, err := tx.ExecContext(c, `SELECT count(*) FROM snowflake_nodes`); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(c, time.Minute); err != nil {
		t.Errorf("the DDL again, on an up-to-date table, beside a reader and a row lock: %v", err)
	}
	// A reader of the table holds back a migration that renames a column.
	_ = tx.Rollback()
	execSQL(t, su, `ALTER TABLE snowflake_nodes RENAME COLUMN claim_generation TO generation`)
	tx, err = su.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(c, `SELECT count(*) FROM snowflake_nodes`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(c, 2500*time.Millisecond)
	defer cancel()
	err = st.Apply(short, time.Minute)
	if postgres.SQLSTATE(err) != "55P03" || !strings.Contains(fmt.Sprint(err), "waited 1s for a lock on table snowflake_nodes") {
		t.Errorf("a migration behind a reader: %v; want it to give up, saying what it waited for", err)
	}
	if _, err := db.ExecContext(c, `UPDATE snowflake_nodes SET horizon_ms = horizon_ms WHERE node_id = 1`); err != nil {
		t.Errorf("a write to the table while the migration retries: %v", err)
	}
	_ = tx.Rollback()
	if err := st.Apply(c, time.Minute); err != nil {
		t.Errorf("the migration once the reader is gone: %v", err)
	}
}

// BenchmarkPromotionToFirstClaim measures the time from a clean
// switchover's promotion to the first claim on the new primary, on a table
// whose maximum TTL is the shortest allowed (3 s): the cost of the
// quarantine a watched table takes after any promotion, against none for
// a trusted one (sync on a server that refuses the WAL functions, whose
// configuration it stands in for: no server recorded). Each iteration
// starts a primary and a standby of its own; run it with a small
// -benchtime, such as 3x.
func BenchmarkPromotionToFirstClaim(b *testing.B) {
	for _, kind := range []string{"trusted", "watched"} {
		mode := map[string]string{"trusted": "sync", "watched": "async"}[kind]
		b.Run(kind, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				pair := pgtest.NewPair(b)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				dbName, err := pair.Primary.CreateDatabase(ctx)
				if err != nil {
					b.Fatal(err)
				}
				ddl, err := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 7, MaxTTL: nodeid.MinTTL, Replication: postgres.Replication(mode)}.SQL()
				if err != nil {
					b.Fatal(err)
				}
				if err := pair.Primary.Exec(ctx, dbName, ddl); err != nil {
					b.Fatal(err)
				}
				if kind == "trusted" {
					// What the DDL records where the WAL functions are refused.
					if err := pair.Primary.Exec(ctx, dbName, `UPDATE snowflake_nodes_config SET server_id = NULL, wal_timeline = NULL, creation_pending = NULL`); err != nil {
						b.Fatal(err)
					}
				}
				db, err := sql.Open("pgx", pair.Standby.DSN(dbName))
				if err != nil {
					b.Fatal(err)
				}
				r, err := nodeid.New(db, nodeid.WithTTL(nodeid.MinTTL))
				if err != nil {
					b.Fatal(err)
				}
				if err := pair.WaitReplayed(ctx); err != nil {
					b.Fatal(err)
				}
				if err := pair.Primary.Stop(ctx, pgtest.Fast); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				if err := pair.Promote(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Acquire(ctx); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				b.StopTimer()
				_ = r.Close()
				db.Close()
				cancel()
				_ = pair.Close()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/first-claim")
		})
	}
}

// claimedStore returns a database with a lease table of node IDs 0 to hi,
// a Store on it, and a one-minute claim of "a" made through the Store.
func claimedStore(t *testing.T, hi int64) (*sql.DB, *admin.Store, admin.Claim) {
	t.Helper()
	su, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: hi, MaxTTL: postgres.DefaultMaxTTL})
	st, err := admin.New(db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: hi})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Claim(ctxOf(t), 0, hi, "a", time.Minute, 0)
	if err != nil || !res.OK {
		t.Fatal(res, err)
	}
	return su, st, res.Claim
}

// Two standbys of one primary promoted one after the other from the same
// history, with no WAL archive between them: both are on timeline 2, and
// the second never saw what holder A took on the first. Nothing in the
// data orders the two branches, yet the second server is not the one its
// table recorded (timeline 1): the node ID is quarantined there, holder B
// stamps after every lease the first branch could have granted, and its
// epoch, of an era after that quarantine, is above A's. No millisecond is
// stamped by both.
func TestTwoPromotionsFromOneHistory(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	ctx := ctxOf(t)
	first := pgtest.NewPair(t)
	second := first.AddStandby(t, "second")
	dbName, err := first.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Primary.Exec(ctx, dbName, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl})); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*pgtest.Pair{first, second} {
		if err := p.WaitReplayed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	settleCreation(t, ctx, first.Primary.DSN(dbName))
	for _, p := range []*pgtest.Pair{first, second} {
		p.Repl.Cut()
	}
	if err := first.FailOver(ctx); err != nil {
		t.Fatal(err)
	}
	a := newHolder(t, first.Standby.DSN(dbName), "holder-a", ttl)
	la, ma := a.claim(t, 100, false)
	if err := first.Standby.Stop(ctx, pgtest.Immediate); err != nil {
		t.Fatal(err)
	}
	if err := second.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if tl, err := second.Standby.Timeline(ctx); err != nil || tl != 2 {
		t.Fatalf("the second standby's timeline: %d, %v; want 2, as the first's", tl, err)
	}
	b := newHolder(t, second.Standby.DSN(dbName), "holder-b", ttl)
	lb, mb := b.claim(t, 100, false)
	t.Logf("A's epoch %#x on the first promoted standby, B's %#x on the second", la.Epoch(), lb.Epoch())
	handedOver(t, ttl, la, ma, lb, mb)
}

// earlierSQL reads a statement of the version that recorded WAL timelines.
func earlierSQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "earlier", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A table of the version that recorded WAL timelines, brought up to date by
// the new DDL, keeps its claims, epochs and horizons and its quarantine
// (which the rows a widening adds join), and refuses that version's
// statements, even after that version's DDL runs again, so that no process
// of it goes on under rules it does not know during a rolling deploy: its
// holders' renewals fail, and they stop minting at their deadline.
func TestEarlierVersionRefusedAfterUpgrade(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	execSQL(t, db, earlierSQL(t, "schema.sql"))
	horizon := time.Now().Add(time.Minute).UnixMilli()
	var node, epoch int64
	if err := db.QueryRowContext(ctx, earlierSQL(t, "claim.sql"), 0, 1, "old", 60000, horizon).Scan(&node, &epoch,
		new(any), new(any), new(any), new(any), new(any), new(any), new(any), new(any), new(any), new(any), new(any), new(any)); err != nil || node != 0 || epoch != 1 {
		t.Fatalf("a claim of the earlier version: node %d, epoch %d, %v", node, epoch, err)
	}
	// Node ID 1 was last written on an earlier timeline than the one the
	// table recorded a moment ago: quarantined, and it must stay so.
	execSQL(t, db, `UPDATE snowflake_nodes SET timeline = 0 WHERE node_id = 1; UPDATE snowflake_nodes_config SET timeline_seen_at = now()`)
	execSQL(t, db, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 2, MaxTTL: postgres.DefaultMaxTTL}))
	for _, name := range []string{"renew.sql", "claim.sql"} {
		args := []any{0, "old", 1, 60000, horizon}
		if name == "claim.sql" {
			args = []any{0, 1, "old-2", 60000, horizon}
		}
		// It names columns the upgrade renamed, or compares the unused
		// configuration column "timeline", now boolean, with a number.
		_, err := db.ExecContext(ctx, earlierSQL(t, name), args...)
		if code := postgres.SQLSTATE(err); code != "42703" && code != "42883" {
			t.Errorf("the earlier version's %s after the upgrade: %v; want undefined column (42703) or operator (42883)", name, err)
		}
	}
	st, err := admin.New(db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	// Node ID 2, which the upgrade's widening added, joins the quarantine
	// running: a widening a failover lost may have added it and let it be
	// claimed.
	rows, now, err := st.List(ctx)
	if err != nil || len(rows) != 3 || rows[0].Owner != "old" || rows[0].Epoch != 1 || rows[0].State(now) != admin.Held ||
		rows[1].State(now) != admin.Quarantined || rows[2].State(now) != admin.Quarantined {
		t.Fatalf("the table after the upgrade: %+v, %v; want node 0 still held by the earlier claim, nodes 1 and 2 quarantined", rows, err)
	}
	res, err := st.Claim(ctx, 0, 2, "new", time.Minute, 0)
	if err != nil || res.OK || !res.Refusal.Quarantined || !time.UnixMilli(res.Refusal.Until).Equal(rows[1].QuarantinedUntil) {
		t.Errorf("a claim of the new version: %+v, %v; want refused until the quarantine of nodes 1 and 2 ends (%s)", res, err, rows[1].QuarantinedUntil)
	}
	// Its DDL, run again after the upgrade statement by statement as psql
	// does (an old process that applies it at start), brings none of its
	// statements back: it may add its columns to the lease and history
	// tables, but not the configuration's that its statements read.
	for _, stmt := range strings.Split(earlierSQL(t, "schema.sql"), ";\n") {
		_, _ = db.ExecContext(ctx, stmt)
	}
	for _, name := range []string{"renew.sql", "claim.sql", "release.sql"} {
		args := []any{0, "old", 1, 60000, horizon}
		switch name {
		case "claim.sql":
			args = []any{0, 1, "old-2", 60000, horizon}
		case "release.sql":
			args = []any{0, "old", 1, horizon}
		}
		_, err := db.ExecContext(ctx, earlierSQL(t, name), args...)
		if code := postgres.SQLSTATE(err); code != "42703" && code != "42883" {
			t.Errorf("the earlier version's %s after its DDL ran again over the upgraded table: %v; want undefined column (42703) or operator (42883)", name, err)
		}
	}
}

// handedOver waits for holder A's lease la to end (its server is gone),
// releases holder B's lb, and checks the IDs both minted (ma, mb) and those
// of earlier holders of the node ID: none minted twice, no millisecond
// stamped by two holders, and B's epoch above A's.
func handedOver(t *testing.T, ttl time.Duration, la *nodeid.Lease, ma *minter, lb *nodeid.Lease, mb *minter, earlier ...[]uint64) {
	t.Helper()
	select {
	case <-la.Done():
	case <-time.After(3 * ttl):
		t.Fatal("holder A's lease did not end")
	}
	<-ma.done
	_ = lb.Release(ctxOf(t))
	<-mb.done
	var s stamps
	for _, ids := range earlier {
		s.add(ids)
	}
	s.add(ma.ids)
	s.add(mb.ids)
	if dups, shared := s.check(); dups != 0 || shared != 0 {
		t.Errorf("%d IDs minted twice, %d ms of the node ID stamped by two holders", dups, shared)
	}
	if lb.Epoch() <= la.Epoch() {
		t.Errorf("B's epoch %#x is not above A's %#x", lb.Epoch(), la.Epoch())
	}
}

// A Registry whose table changes its replication mode under it (init
// --replication on a running fleet) claims with the new mode's statements
// at its next Acquire: its first try is refused as built for the old mode,
// and it tries again.
func TestRegistryFollowsAChangedReplicationMode(t *testing.T) {
	t.Parallel()
	_, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1, MaxTTL: postgres.DefaultMaxTTL})
	ctx := ctxOf(t)
	r, err := nodeid.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Acquire(ctx) // reads the mode: async
	if err != nil {
		t.Fatal(err)
	}
	st, err := admin.New(db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyMode(ctx, time.Minute, admin.Sync); err != nil {
		t.Fatal(err)
	}
	l2, err := r.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire after the table became synchronous: %v", err)
	}
	if l2.NodeID() != 1 || l2.Epoch() != 1 {
		t.Errorf("the claim after the change: node %d, epoch %d; want node 1, epoch 1", l2.NodeID(), l2.Epoch())
	}
	for _, l := range []*nodeid.Lease{l, l2} {
		if err := l.Release(ctx); err != nil {
			t.Errorf("release of node %d after the change: %v", l.NodeID(), err)
		}
	}
}

// F1: a dump taken while the table's maximum TTL was 3 s, restored into a
// new cluster after the maximum was raised to 12 s and holder H took a 12 s
// lease, with the old server stopped. The copy cannot know how stale it is:
// it hands out no node ID (ErrRestorePending) until the operator declares
// the restore and the longest TTL the old history's holders may hold; then
// the quarantine lasts that TTL and a tenth, and no millisecond is stamped
// by both H and the next holder. An earlier version started a new
// generation by itself, quarantined for the copy's 3 s and a tenth, and
// let B claim while H still minted: both stamped the same milliseconds.
func TestRestoreOfACopyOlderThanARaise(t *testing.T) {
	t.Parallel()
	const short, long = 3 * time.Second, 12 * time.Second
	ctx := ctxOf(t)
	oldSrv := pgtest.NewServer(t)
	oldDB, err := oldSrv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldDSN := oldSrv.DSN(oldDB)
	execDSN(t, oldDSN, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: short}))
	dump, err := exec.CommandContext(ctx, pgTool(t, "pg_dump"), "--no-owner", oldDSN).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	// The raise, as "nodeid init --max-ttl 12s" makes it: recorded as
	// pending, confirmed once every standby has it (there are none).
	execDSN(t, oldDSN, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: long}))
	if st, err := admin.New(openDB(t, oldDSN), admin.DefaultConfig()); err != nil {
		t.Fatal(err)
	} else if mark, err := st.PendingRaise(ctx); err != nil || mark.Raise != long {
		t.Fatalf("PendingRaise: %+v, %v; want %s", mark, err, long)
	} else if _, _, err := st.ConfirmRaise(ctx, mark); err != nil {
		t.Fatal(err)
	}
	h := newHolder(t, oldDSN, "holder-h", long)
	lh, mh := h.claim(t, 50, false)
	if err := oldSrv.Stop(ctx, pgtest.Immediate); err != nil { // as before a move
		t.Fatal(err)
	}

	newSrv := pgtest.NewServer(t)
	newDB, err := newSrv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newDSN := newSrv.DSN(newDB)
	restore := exec.CommandContext(ctx, pgTool(t, "psql"), "-v", "ON_ERROR_STOP=1", "-q", newDSN)
	restore.Stdin = strings.NewReader(string(dump))
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	b := newHolder(t, newDSN, "holder-b", short)
	bctx, cancel := context.WithTimeout(ctx, long)
	_, err = b.reg.Acquire(bctx)
	cancel()
	if !errors.Is(err, nodeid.ErrRestorePending) || !strings.Contains(fmt.Sprint(err), "nodeid init --restored --max-ttl") {
		t.Errorf("a claim on the restored copy before the declaration: %v; want ErrRestorePending, naming the command", err)
	}
	if err == nil { // what the claim would have minted beside H
		_ = b.reg.Close()
	}
	st, err := admin.New(openDB(t, newDSN), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, until, err := st.Restored(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	declared := time.Now()
	b = newHolder(t, newDSN, "holder-b2", short)
	lb, mb := b.claim(t, 50, false)
	t.Logf("H's epoch %d; B's %#x, claimed %s after the declaration, stamping after %d (the quarantine ends %d)",
		lh.Epoch(), lb.Epoch(), time.Since(declared).Round(time.Millisecond), lb.PreviousHorizon(), until.UnixMilli())
	handedOver(t, long, lh, mh, lb, mb)
	if lb.PreviousHorizon() < until.UnixMilli() {
		t.Errorf("B stamps after %d, before the declared quarantine ends at %d", lb.PreviousHorizon(), until.UnixMilli())
	}
}

// F1: a raise of the maximum TTL on a table that records asynchronous
// replication, while its standby receives nothing: the raise is recorded as
// pending, the standby is seen not to have replayed it, so the raise is not
// confirmed, and a holder that asks for the raised TTL is refused. After a
// failover to that standby no lease of the raised TTL can outlive the
// quarantine. An earlier version took the raise at once: a 12 s lease on
// the old primary minted on while the new primary quarantined for 3 s and
// a tenth, and a holder there stamped the same milliseconds.
func TestFailoverToAStandbyThatMissedARaise(t *testing.T) {
	t.Parallel()
	const short, long = 3 * time.Second, 12 * time.Second
	ctx := ctxOf(t)
	pair := pgtest.NewPair(t)
	dbName, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Primary.Exec(ctx, dbName, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: short})); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	settleCreation(t, ctx, pair.Primary.DSN(dbName))
	pair.Repl.Cut() // the standby will miss the raise
	primaryDSN := pair.Primary.DSN(dbName)
	execDSN(t, primaryDSN, mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: long}))
	st, err := admin.New(openDB(t, primaryDSN), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := st.ReadConfig(ctx)
	if err != nil || tc.MaxTTL != short || tc.PendingMaxTTL != long {
		t.Fatalf("after the raise: %+v, %v; want the maximum %s, %s pending", tc, err, short, long)
	}
	now, standbys, err := st.Standbys(ctx, admin.Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if len(standbys) == 0 {
		t.Error("no standby seen: its replication slot keeps its place while it is cut off")
	}
	for _, sb := range standbys {
		if sb.Caught {
			t.Errorf("standby %+v has replayed %s, which the cut replication never sent it", sb, now.LSN)
		}
	}
	h := newHolder(t, primaryDSN, "holder-h", long)
	lh, err := h.reg.Acquire(ctx)
	if err == nil {
		t.Errorf("a holder claimed with the TTL of a raise no standby has: node ID %d", lh.NodeID())
		mh := mint(t, lh)
		if err := pair.FailOver(ctx); err != nil {
			t.Fatal(err)
		}
		b := newHolder(t, pair.Standby.DSN(dbName), "holder-b", short)
		lb, mb := b.claim(t, 50, false)
		handedOver(t, long, lh, mh, lb, mb)
		return
	}
	if !errors.Is(err, nodeid.ErrInvalidOption) {
		t.Errorf("a holder asking for the TTL of the pending raise: %v; want ErrInvalidOption", err)
	}
	// Once the standby has replayed the pending raise, it may be
	// confirmed: a failover then quarantines for the raised TTL.
	// The primary learns how far a standby has replayed from the standby's
	// feedback, sent every few seconds: wait for it, as init does.
	pair.Repl.Restore()
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	// It streams again from a new connection, which the mark's slots did
	// not see: they are read again, as init reads a new mark.
	testkit.Until(t, time.Minute, "every standby reports it has replayed "+now.LSN, func() error {
		cur, _, err := st.Standbys(ctx, admin.Mark{})
		if err != nil {
			return testkit.Stop(err)
		}
		again := now
		again.Slots = cur.Slots
		_, standbys, err := st.Standbys(ctx, again)
		if err != nil || len(standbys) == 0 {
			return testkit.Stop(fmt.Errorf("standbys after the replication resumed: %+v, %v", standbys, err))
		}
		for _, sb := range standbys {
			if !sb.Caught {
				return fmt.Errorf("standby %+v has not replayed it", sb)
			}
		}
		return nil
	})
}
