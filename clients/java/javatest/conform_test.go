package javatest

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// conformScript is one sequence of claims, renewals, releases, an
// eviction and a partition, run through both clients in step: "VERB:HOLDER"
// (see Conform.java). release0 releases saying nothing was stamped (the
// node ID is claimable at once), release keeps the horizon the last renewal
// recorded (it cools until then). cut blackholes the connections of the
// holders named p (both clients'), restore ends that. Holders p and q lease
// node ID 3 only, the others 0-2.
var conformScript = []string{
	"claim:a", "claim:b", "claim:c", "claim:p", "try:d", "renewed:a", "release0:a", "try:d",
	"evict:b", "ended:b", "release:b", "try:e", "release0:c", "try:e", "claim:f",
	"cut:p", "ended:p", "claim:q", "restore:p", "release:p", "renewed:q",
	"renewed:f", "release:d", "release:e", "release:f", "release0:a", "release0:q",
}

// conformWant are lines both clients must print: the script's meaning, so
// that the test fails if both go wrong the same way.
var conformWant = []string{
	"claim a ok node=0 epoch=2", "claim c ok node=2 epoch=1", "claim p ok node=3 epoch=1", "try d all_held",
	"renewed a ok", "release0 a ok", "try d ok node=0 epoch=3", "evict b ok", "ended b evicted", "release b evicted",
	"try e cooling", "try e ok node=2 epoch=2", "claim f ok node=1 epoch=2", "ended p expired",
	"claim q ok node=3 epoch=2", "release p taken_over", "renewed q ok", "release d ok", "release f ok", "release0 a ok",
}

// causeName is the name Conform.java prints for a lease's end.
func causeName(err error) string {
	switch {
	case err == nil:
		return "held"
	case errors.Is(err, nodeid.ErrTakenOver):
		return "taken_over"
	case errors.Is(err, nodeid.ErrExpired):
		return "expired"
	case errors.Is(err, nodeid.ErrEvicted):
		return "evicted"
	case errors.Is(err, nodeid.ErrFailover):
		return "failover"
	case errors.Is(err, nodeid.ErrReleased):
		return "released"
	}
	return "error " + err.Error()
}

// goConform runs the script's steps through the Go library on table.
type goConform struct {
	t       *testing.T
	ctx     context.Context
	db      *sql.DB // direct
	proxied *sql.DB // through the partitioned proxy, for holders p
	table   string
	ttl     time.Duration
	leases  map[string]*nodeid.Lease
}

func (g *goConform) step(step string) string {
	t, ctx := g.t, g.ctx
	verb, h, _ := strings.Cut(step, ":")
	line := verb + " " + h + " "
	if g.leases[h] == nil && verb != "claim" && verb != "try" {
		return line + "no_lease"
	}
	switch verb {
	case "claim", "try":
		db, lo, hi := g.db, int64(0), int64(2)
		if strings.HasPrefix(h, "p") {
			db = g.proxied
		}
		if strings.HasPrefix(h, "p") || strings.HasPrefix(h, "q") {
			lo, hi = 3, 3
		}
		r, err := nodeid.New(db, nodeid.WithTable(g.table), nodeid.WithTTL(g.ttl), nodeid.WithOwner("go-"+h), nodeid.WithNodeRange(lo, hi))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		var l *nodeid.Lease
		if verb == "claim" {
			actx, acancel := context.WithTimeout(ctx, 30*time.Second)
			l, err = r.Acquire(actx)
			acancel()
		} else {
			l, err = r.TryAcquire(ctx)
		}
		var un *nodeid.UnavailableError
		switch {
		case err == nil:
			g.leases[h] = l
			return line + fmt.Sprintf("ok node=%d epoch=%d", l.NodeID(), l.Epoch())
		case errors.As(err, &un) && un.NotYet > 0:
			return line + "cooling"
		case errors.As(err, &un):
			return line + "all_held"
		}
		return line + "error " + err.Error()
	case "renewed":
		l := g.leases[h]
		d0 := l.Deadline()
		until := time.Now().Add(15 * time.Second)
		for !l.Deadline().After(d0) && l.Err() == nil && time.Now().Before(until) {
			time.Sleep(10 * time.Millisecond) // polls a condition, bounded
		}
		if l.Deadline().After(d0) {
			return line + "ok"
		}
		return line + causeName(l.Err())
	case "release", "release0":
		l := g.leases[h]
		var err error
		if verb == "release0" {
			err = l.ReleaseStamped(ctx, l.PreviousHorizon())
		} else {
			err = l.Release(ctx)
		}
		if err != nil {
			return line + causeName(err)
		}
		return line + "ok"
	case "evict":
		var status string
		err := g.db.QueryRowContext(ctx, "SELECT status FROM "+g.table+"_evict(node_id => $1, epoch => $2)",
			g.leases[h].NodeID(), g.leases[h].Epoch()).Scan(&status)
		if err != nil {
			t.Fatal(err)
		}
		return line + status
	case "ended":
		select {
		case <-g.leases[h].Done():
			return line + causeName(g.leases[h].Err())
		case <-time.After(15 * time.Second):
			return line + "held"
		}
	}
	t.Fatalf("step %s: unknown verb", step)
	return ""
}

// tableState is what the conformance test compares of a table: every
// claim's node ID, epoch and end, and each row's epoch and whether it is
// held; not times, horizons or owners.
func tableState(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	var out []string
	rows, err := db.Query("SELECT node_id, epoch, COALESCE(end_reason, 'open') FROM " + table + "_history ORDER BY node_id, epoch")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, e int64
		var why string
		if err := rows.Scan(&n, &e, &why); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("history node=%d epoch=%d end=%s", n, e, why))
	}
	rows2, err := db.Query("SELECT node_id, epoch, owner <> '' FROM " + table + " ORDER BY node_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows2.Close()
	for rows2.Next() {
		var n, e int64
		var held bool
		if err := rows2.Scan(&n, &e, &held); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("row node=%d epoch=%d held=%t", n, e, held))
	}
	return out
}

// TestConformance runs one script of claims, renewals, releases, an
// eviction and a partition through the Java client and through the Go
// library, in step, on two tables of one database, and compares every
// status, node ID, epoch and end, and the tables' claims.
func TestConformance(t *testing.T) {
	pgtest.SkipShort(t)
	k := compile(t)
	srv := pgtest.Shared(t)
	db, dsn := srv.NewDB(t)
	createTable(t, db, "conf_go", 0, 3)
	createTable(t, db, "conf_java", 0, 3)
	const ttl = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var proxies []*pgtest.Proxy
	for range 2 {
		p, err := pgtest.NewProxy(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		proxies = append(proxies, p)
	}
	proxied, err := sql.Open("pgx", pgtest.WithAddr(dsn, proxies[0].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxied.Close() })

	cmd := k.command(ctx, "dev.nodeid.Conform", jdbcURL(t, dsn), jdbcURL(t, pgtest.WithAddr(dsn, proxies[1].Addr())), "conf_java",
		fmt.Sprint(ttl.Milliseconds()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	javaOut := bufio.NewScanner(stdout)

	g := &goConform{t: t, ctx: ctx, db: db, proxied: proxied, table: "conf_go", ttl: ttl, leases: map[string]*nodeid.Lease{}}
	var goLines, javaLines []string
	for _, step := range conformScript {
		verb, h, _ := strings.Cut(step, ":")
		switch verb {
		case "cut", "restore":
			for _, p := range proxies {
				if verb == "cut" {
					p.Blackhole()
				} else {
					p.Restore()
				}
			}
			goLines = append(goLines, verb+" "+h+" ok")
			javaLines = append(javaLines, verb+" "+h+" ok")
			continue
		}
		// The Java client takes the step as the Go library does.
		if _, err := fmt.Fprintln(stdin, step); err != nil {
			t.Fatalf("Conform.java: %v\n%s", err, stderr.String())
		}
		goLines = append(goLines, g.step(step))
		if !javaOut.Scan() {
			t.Fatalf("Conform.java ended at step %s:\n%s", step, stderr.String())
		}
		javaLines = append(javaLines, javaOut.Text())
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Conform.java: %v\n%s", err, stderr.String())
	}

	if strings.Join(goLines, "\n") != strings.Join(javaLines, "\n") {
		t.Errorf("the clients differ:\n--- Go ---\n%s\n--- Java ---\n%s", strings.Join(goLines, "\n"), strings.Join(javaLines, "\n"))
	}
	for _, w := range conformWant {
		if !slices.Contains(goLines, w) {
			t.Errorf("the script's line %q is missing:\n%s", w, strings.Join(goLines, "\n"))
		}
	}
	goState, javaState := tableState(t, db, "conf_go"), tableState(t, db, "conf_java")
	if strings.Join(goState, "\n") != strings.Join(javaState, "\n") {
		t.Errorf("the tables differ:\n--- Go ---\n%s\n--- Java ---\n%s", strings.Join(goState, "\n"), strings.Join(javaState, "\n"))
	}
	t.Logf("both clients:\n%s\n%s", strings.Join(goLines, "\n"), strings.Join(goState, "\n"))
}
