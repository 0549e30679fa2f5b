package javatest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// conformScript is one sequence of claims, renewals, releases and an
// eviction, run through both clients: "VERB:HOLDER" (see Conform.java).
var conformScript = []string{
	"claim:a", "claim:b", "claim:c", "try:d", "renewed:a", "release0:a", "try:d",
	"evict:b", "ended:b", "release:b", "try:e", "release0:c", "try:e", "claim:f",
	"renewed:f", "release:d", "release:e", "release:f", "release0:a",
}

// conformWant are lines both clients must print: the script's meaning, so
// that the test fails if both go wrong the same way.
var conformWant = []string{
	"claim a ok node=0 epoch=2", "claim c ok node=2 epoch=1", "try d all_held", "renewed a ok", "release0 a ok",
	"try d ok node=0 epoch=3", "evict b ok", "ended b evicted", "release b evicted", "try e cooling",
	"try e ok node=2 epoch=2", "claim f ok node=1 epoch=2", "release d ok", "release f ok", "release0 a ok",
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

// runGoScript runs the script through the Go library on table.
func runGoScript(t *testing.T, db *sql.DB, table string, ttl time.Duration) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leases := map[string]*nodeid.Lease{}
	var lines []string
	for _, step := range conformScript {
		verb, h, _ := strings.Cut(step, ":")
		line := verb + " " + h + " "
		if leases[h] == nil && verb != "claim" && verb != "try" {
			lines = append(lines, line+"no_lease")
			continue
		}
		switch verb {
		case "claim", "try":
			r, err := nodeid.New(db, nodeid.WithTable(table), nodeid.WithTTL(ttl), nodeid.WithOwner("go-"+h))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
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
				leases[h] = l
				line += fmt.Sprintf("ok node=%d epoch=%d", l.NodeID(), l.Epoch())
			case errors.As(err, &un) && un.NotYet > 0:
				line += "cooling"
			case errors.As(err, &un):
				line += "all_held"
			default:
				line += "error " + err.Error()
			}
		case "renewed":
			l := leases[h]
			d0 := l.Deadline()
			until := time.Now().Add(15 * time.Second)
			for !l.Deadline().After(d0) && l.Err() == nil && time.Now().Before(until) {
				time.Sleep(10 * time.Millisecond) // polls a condition, bounded
			}
			if l.Deadline().After(d0) {
				line += "ok"
			} else {
				line += causeName(l.Err())
			}
		case "release", "release0":
			release := leases[h].Release
			if verb == "release0" {
				release = func(ctx context.Context) error { return leases[h].ReleaseStamped(ctx, leases[h].PreviousHorizon()) }
			}
			if err := release(ctx); err != nil {
				line += causeName(err)
			} else {
				line += "ok"
			}
		case "evict":
			var status string
			err := db.QueryRowContext(ctx, "SELECT status FROM "+table+"_evict(node_id => $1, epoch => $2)",
				leases[h].NodeID(), leases[h].Epoch()).Scan(&status)
			if err != nil {
				t.Fatal(err)
			}
			line += status
		case "ended":
			select {
			case <-leases[h].Done():
				line += causeName(leases[h].Err())
			case <-time.After(15 * time.Second):
				line += "held"
			}
		default:
			t.Fatalf("step %s: unknown verb", step)
		}
		lines = append(lines, line)
	}
	return lines
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

// TestConformance runs one script of claims, renewals, releases and an
// eviction through the Java client and through the Go library, on two
// tables of one database, and compares every status, node ID, epoch and end.
func TestConformance(t *testing.T) {
	k := compile(t)
	db, dsn := pgtest.NewDB(t)
	createTable(t, db, "conf_go", 0, 2)
	createTable(t, db, "conf_java", 0, 2)
	const ttl = 3 * time.Second

	javaDone := make(chan struct{})
	var javaOut []byte
	var javaErr error
	go func() {
		defer close(javaDone)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{jdbcURL(t, dsn), "conf_java", fmt.Sprint(ttl.Milliseconds())}, conformScript...)
		javaOut, javaErr = k.command(ctx, "dev.nodeid.Conform", args...).CombinedOutput()
	}()
	goLines := runGoScript(t, db, "conf_go", ttl)
	<-javaDone
	if javaErr != nil {
		t.Fatalf("Conform.java: %v\n%s", javaErr, javaOut)
	}
	javaLines := strings.Split(strings.TrimSpace(string(javaOut)), "\n")

	if strings.Join(goLines, "\n") != strings.Join(javaLines, "\n") {
		t.Errorf("the clients differ:\n--- Go ---\n%s\n--- Java ---\n%s", strings.Join(goLines, "\n"), strings.Join(javaLines, "\n"))
	}
	for _, w := range conformWant {
		found := false
		for _, l := range goLines {
			found = found || l == w
		}
		if !found {
			t.Errorf("the script's line %q is missing:\n%s", w, strings.Join(goLines, "\n"))
		}
	}
	goState, javaState := tableState(t, db, "conf_go"), tableState(t, db, "conf_java")
	if strings.Join(goState, "\n") != strings.Join(javaState, "\n") {
		t.Errorf("the tables differ:\n--- Go ---\n%s\n--- Java ---\n%s", strings.Join(goState, "\n"), strings.Join(javaState, "\n"))
	}
	t.Logf("both clients:\n%s\n%s", strings.Join(goLines, "\n"), strings.Join(goState, "\n"))
}
