package pgtest

import (
	"context"
	"database/sql"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// rows returns the values of table t on the server dsn connects to, on a
// connection of its own.
func rows(ctx context.Context, t *testing.T, dsn string) map[int]bool {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r, err := conn.Query(ctx, `SELECT v FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(r, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, v := range vs {
		got[v] = true
	}
	return got
}

// serverPort returns the port of the server that dsn connects to.
func serverPort(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var port int
	err = conn.QueryRow(ctx, `SELECT inet_server_port()`).Scan(&port)
	return port, err
}

func port(t *testing.T, s *Server) int {
	t.Helper()
	_, p, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPairReplicates shows the standby is a real streaming replica: it
// receives a database and a row committed on the primary, and refuses
// writes.
func TestPairReplicates(t *testing.T) {
	t.Parallel()
	p := NewPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, err := p.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Primary.Exec(ctx, name, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(ctx, t, p.Standby.DSN(name)); !got[1] || len(got) != 1 {
		t.Fatalf("standby has rows %v, want the primary's row 1", got)
	}
	if err := p.Standby.Exec(ctx, name, `INSERT INTO t VALUES (2)`); err == nil {
		t.Fatal("the standby accepted a write")
	}
}

// TestPairFailoverLosesCommits is a failover with asynchronous replication:
// a row committed on the primary while replication is cut is missing on
// the standby once the primary has crashed and the standby is promoted;
// the promoted standby is on timeline 2, takes writes, and is where the
// multi-host DSN leads.
func TestPairFailoverLosesCommits(t *testing.T) {
	t.Parallel()
	p := NewPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, err := p.Primary.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dsn := p.DSN(name)
	if got, err := serverPort(ctx, dsn); err != nil || got != port(t, p.Primary) {
		t.Fatalf("the multi-host DSN reached port %d (%v), want the primary's %d", got, err, port(t, p.Primary))
	}
	if tl, err := p.Primary.Timeline(ctx); err != nil || tl != 1 {
		t.Fatalf("primary's timeline = %d, %v; want 1", tl, err)
	}
	if err := p.Primary.Exec(ctx, name, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}

	p.Repl.Cut()
	if err := p.Primary.Exec(ctx, name, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if got := rows(ctx, t, p.Primary.DSN(name)); !got[1] || !got[2] {
		t.Fatalf("primary has rows %v, want 1 and 2 committed", got)
	}
	if err := p.Primary.Stop(ctx, Immediate); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(ctx); err != nil {
		t.Fatal(err)
	}

	if got := rows(ctx, t, p.Standby.DSN(name)); !got[1] || got[2] {
		t.Fatalf("promoted standby has rows %v, want 1 without the unreplicated 2", got)
	}
	if tl, err := p.Standby.Timeline(ctx); err != nil || tl != 2 {
		t.Fatalf("promoted standby's timeline = %d, %v; want 2", tl, err)
	}
	if got, err := serverPort(ctx, dsn); err != nil || got != port(t, p.Standby) {
		t.Fatalf("the multi-host DSN reached port %d (%v), want the promoted standby's %d", got, err, port(t, p.Standby))
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (3)`); err != nil {
		t.Fatalf("write through the multi-host DSN after promotion: %v", err)
	}
	if got := rows(ctx, t, p.Standby.DSN(name)); !got[3] {
		t.Fatalf("promoted standby has rows %v, want the new row 3", got)
	}
}

// TestPairWaitReplayed shows WaitReplayed waits for the standby: with
// replication cut or blackholed it ends with ctx, and it returns once
// replication is restored.
func TestPairWaitReplayed(t *testing.T) {
	t.Parallel()
	for _, fault := range []struct {
		name string
		do   func(*Proxy)
	}{
		{"cut", (*Proxy).Cut},
		{"blackholed", (*Proxy).Blackhole},
	} {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			p := NewPair(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			name, err := p.Primary.CreateDatabase(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WaitReplayed(ctx); err != nil {
				t.Fatal(err)
			}
			fault.do(p.Repl)
			if err := p.Primary.Exec(ctx, name, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
			err = p.WaitReplayed(short)
			cancelShort()
			if err == nil {
				t.Fatalf("WaitReplayed returned while replication was %s", fault.name)
			}
			p.Repl.Restore()
			if err := p.WaitReplayed(ctx); err != nil {
				t.Fatal(err)
			}
			if got := rows(ctx, t, p.Standby.DSN(name)); !got[1] {
				t.Fatalf("standby has rows %v after replication was restored, want 1", got)
			}
		})
	}
}
