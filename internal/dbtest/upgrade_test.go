package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// cluster is a data directory of its own, run with pg_ctl, for the tests
// that need what pgtest's servers do not offer (pg_upgrade between two).
type cluster struct {
	t         *testing.T
	bin, data string
	port      int
	cred      *syscall.Credential
}

// postgresBin returns the newest server binary directory that has
// pg_upgrade.
func postgresBin(t *testing.T) string {
	t.Helper()
	pgtest.SkipShort(t)
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_upgrade")); err == nil {
			return d
		}
	}
	pgtest.Unavailable(t, fmt.Errorf("no pg_upgrade under /usr/lib/postgresql/*/bin"))
	return ""
}

// newCluster makes a data directory with initdb under root, owned by the
// postgres user when the tests run as root.
func newCluster(t *testing.T, bin, root, name string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: bin, data: filepath.Join(root, name)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			pgtest.Unavailable(t, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	port, err := pgtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c.port = port
	c.run("initdb", "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	return c
}

func (c *cluster) run(name string, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = filepath.Dir(c.data)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func (c *cluster) start() {
	c.t.Helper()
	c.run("pg_ctl", "start", "-w", "-D", c.data, "-l", c.data+".log",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, filepath.Dir(c.data)))
	c.t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(c.bin, "pg_ctl"), "stop", "-m", "immediate", "-D", c.data)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		_ = cmd.Run()
	})
}

func (c *cluster) stop() { c.t.Helper(); c.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", c.data) }

func (c *cluster) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=60", c.port)
}

// A major upgrade by pg_upgrade (15 to 15 here) makes a cluster with
// another system identifier, whose timeline begins again at 1, as a dump
// does: the table's rows were last written on timeline 2 of the old
// cluster. The upgraded server is not the one the table records, so the
// node ID is quarantined, and its next claim takes an epoch above every
// epoch the old cluster granted. No millisecond is stamped twice.
func TestUpgradeStartsANewGeneration(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	bin := postgresBin(t)
	root, err := os.MkdirTemp("", "nodeid-upgrade-") // where the postgres user may go
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	old := newCluster(t, bin, root, "old")
	old.start()
	execDSN(t, old.dsn(), mustSchema(t, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: ttl}))
	a := newHolder(t, old.dsn(), "holder-a", ttl)
	for range 3 {
		a.claim(t, 20, true)
	}
	// As after a promotion of the old cluster: its configuration was last
	// written on its timeline 2.
	execDSN(t, old.dsn(), `UPDATE snowflake_nodes_config SET wal_timeline = 2`)
	before := readConfig(t, old.dsn())
	_ = a.reg.Close()
	old.stop()

	up := newCluster(t, bin, root, "new")
	up.run("pg_upgrade", "-b", bin, "-B", bin, "-d", old.data, "-D", up.data,
		"-p", strconv.Itoa(old.port), "-P", strconv.Itoa(up.port), "-U", "postgres")
	up.start()
	// The upgraded cluster has another system identifier: it hands out no
	// node ID until the operator declares the restore and its bound.
	b := newHolder(t, up.dsn(), "holder-b", ttl)
	if _, err := b.reg.Acquire(ctxOf(t)); !errors.Is(err, nodeid.ErrRestorePending) {
		t.Fatalf("a claim on the upgraded server before the declaration: %v; want ErrRestorePending", err)
	}
	if tc := readConfig(t, up.dsn()); !tc.RestorePending || tc.ServerID == before.ServerID {
		t.Fatalf("the upgraded table: %+v; want a restore pending on a server of its own", tc)
	}
	st, err := admin.New(openDB(t, up.dsn()), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Restored(ctxOf(t), ttl); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lb, mb := b.claim(t, 20, false)
	waited := time.Since(start)
	_ = lb.Release(ctxOf(t))
	<-mb.done
	b.ids = append(b.ids, mb.ids...)
	after := readConfig(t, up.dsn())

	var s stamps
	s.add(a.ids)
	s.add(b.ids)
	dups, shared := s.check()
	t.Logf("before the upgrade: server %d, timeline %d, generation %d; after: server %d, timeline %d, generation %d; epochs %#x then %#x, claimed after %s",
		before.ServerID, before.Timeline, before.Generation, after.ServerID, after.Timeline, after.Generation, a.epochs, lb.Epoch(), waited.Round(time.Millisecond))
	if after.ServerID == before.ServerID || after.Generation != before.Generation+2 || after.RestorePending {
		t.Errorf("the upgraded server %d (generation %d) was not seen as another than %d (generation %d), then declared",
			after.ServerID, after.Generation, before.ServerID, before.Generation)
	}
	if dups != 0 || shared != 0 {
		t.Errorf("%d IDs minted twice, %d ms stamped by both holders", dups, shared)
	}
	if lb.Epoch() <= slices.Max(a.epochs) || lb.Epoch()>>32 <= 0 {
		t.Errorf("the epoch after the upgrade %#x is not of a new era above %#x", lb.Epoch(), a.epochs)
	}
	if waited < ttl {
		t.Errorf("the first claim after the upgrade came after %s, before the quarantine of %s and a tenth", waited, ttl)
	}
}

func execDSN(t *testing.T, dsn, q string) {
	t.Helper()
	db := openDB(t, dsn)
	execSQL(t, db, q)
}

func readConfig(t *testing.T, dsn string) admin.TableConfig {
	t.Helper()
	st, err := admin.New(openDB(t, dsn), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := st.ReadConfig(ctxOf(t))
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
