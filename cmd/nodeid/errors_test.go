package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// secret is the password of the DSNs of these tests: it must never be
// printed.
const secret = "Sup3r-S3cret-pw"

// withUser returns dsn with its user and password replaced.
func withUser(t *testing.T, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// TestMissingPrivilege: a role without SELECT gets an error naming the
// role, the table and the privilege it lacks.
func TestMissingPrivilege(t *testing.T) {
	db, dsn := seedList(t)
	role := fmt.Sprintf("nodeid_reader_%d", os.Getpid())
	execSQL(t, db, "CREATE ROLE "+role+" LOGIN PASSWORD '"+secret+"'")
	t.Cleanup(func() {
		_ = pgtest.Shared(t).Exec(ctxT(t), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	execSQL(t, db, "REVOKE ALL ON snowflake_nodes, snowflake_nodes_history FROM PUBLIC")
	rdsn := withUser(t, dsn, role, secret)

	r := cli(t, "list", "--dsn", rdsn)
	wantExit(t, r, exitFailure, "permission denied for table snowflake_nodes", `the role "`+role+`" needs SELECT on snowflake_nodes and snowflake_nodes_config`)
	r2 := cli(t, "prune", "--older-than", "1d", "--dsn", rdsn)
	wantExit(t, r2, exitFailure, "permission denied", "DELETE on snowflake_nodes_history")
	r3 := cli(t, "release", "0", "--epoch", "3", "--yes", "--dsn", rdsn)
	wantExit(t, r3, exitFailure, "permission denied", "UPDATE on snowflake_nodes")
	for _, r := range []result{r, r2, r3} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the password was printed: %+v", r)
		}
	}

	execSQL(t, db, "GRANT SELECT ON snowflake_nodes, snowflake_nodes_config TO "+role)
	if r := cli(t, "list", "--dsn", rdsn); r.code != 0 || !strings.Contains(r.stdout, "web-1") {
		t.Errorf("list after GRANT SELECT: %+v", r)
	}
}

// TestPasswordNeverPrinted: whatever fails, and however the password was
// given, it does not appear in the output.
func TestPasswordNeverPrinted(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	good := withUser(t, dsn, "postgres", secret)
	u, _ := url.Parse(good)
	u.Host = "127.0.0.1:1"
	refused := u.String()
	odd := secret + "@/:%"
	u.User = url.UserPassword("postgres", odd)
	escaped := u.String()
	if !strings.Contains(escaped, "%40%2F%3A%25") {
		t.Fatalf("the test's password is not escaped in %s", escaped)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		code  int
		wants []string
	}{
		{"refused URL", nil, []string{"list", "--dsn", refused}, exitFailure, []string{"cannot connect"}},
		{"refused URL, escaped password", nil, []string{"list", "--dsn=" + escaped}, exitFailure, []string{"cannot connect"}},
		{"bad key=value", nil, []string{"list", "--dsn", "host=127.0.0.1 port=nope password=" + secret}, exitUsage, []string{"bad connection string in --dsn"}},
		{"bad quoted key=value", nil, []string{"show", "1", "--dsn", "host=x password='" + secret + " sslmode=bogus"}, exitUsage, []string{"bad connection string"}},
		{"bad URL in DATABASE_URL", map[string]string{EnvDatabaseURL: "postgres://bob:" + secret + "@[::1/db"}, []string{"list"}, exitUsage, []string{"in DATABASE_URL"}},
		{"bad sslmode", map[string]string{EnvDatabaseURL: good + "&sslmode=bogus"}, []string{"list"}, exitUsage, []string{"sslmode"}},
		{"missing database", nil, []string{"list", "--dsn", withUser(t, pgtest.WithDatabase(dsn, "no_such_db"), "postgres", secret)}, exitFailure, []string{"does not exist"}},
		{"missing table", nil, []string{"who", "--dsn", good, "--table", "nothere", "1805834298273538055"}, exitFailure, []string{"table nothere does not exist", "nodeid init"}},
		{"run", nil, []string{"run", "--dsn", refused, "--", "true"}, exitFailure, []string{"cannot connect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cliWith(t, "", tc.env, tc.args...)
			wantExit(t, r, tc.code, tc.wants...)
			for _, leak := range []string{secret, odd, "%40%2F%3A%25"} {
				if strings.Contains(r.stdout+r.stderr, leak) {
					t.Errorf("the password was printed: %+v", r)
				}
			}
		})
	}
}

// TestUsageAndExitCodes: cobra's own errors are usage errors, on one line.
func TestUsageAndExitCodes(t *testing.T) {
	wantExit(t, cli(t, "frobnicate"), exitUsage, `unknown command "frobnicate"`, `see "nodeid --help"`)
	if r := cli(t, "lst"); r.code != exitUsage || r.stderr != "nodeid: unknown command \"lst\" for \"nodeid\" (did you mean \"list\"?)\n" {
		t.Errorf("nodeid lst: %+v", r)
	}
	wantExit(t, cli(t, "shw", "1"), exitUsage, `unknown command "shw" for "nodeid" (did you mean "show" or "who"?)`)
	wantExit(t, cli(t, "list", "--no-such-flag"), exitUsage, "unknown flag: --no-such-flag", `see "nodeid list --help"`)
	wantExit(t, cli(t, "show", "--limit", "many", "1"), exitUsage, "--limit")
	if r := cli(t, "list", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
		t.Errorf("list --help: %+v", r)
	}
}

// silentServer listens on 127.0.0.1, accepts every connection and never
// answers, as a stuck server, or a proxy with no server behind it, does. It
// returns its host:port, and stops when the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestExplainTableConfig: a Registry that asks for more than its table
// records gets the CLI's advice, the flags and the init command that change
// either side, where the library names its options.
func TestExplainTableConfig(t *testing.T) {
	a := &app{}
	for _, c := range []struct {
		err   *nodeid.TableConfigError
		wants []string
	}{
		{&nodeid.TableConfigError{Table: "ids", MinNode: 0, MaxNode: 63, TTL: 10 * time.Second, TableMinNode: 8, TableMaxNode: 11, MaxTTL: time.Minute},
			[]string{"node range 0-63 is not within the range 8-11 recorded by table ids", "--range", `"nodeid init --table ids --range 0-63"`}},
		{&nodeid.TableConfigError{Table: "ids", MinNode: 8, MaxNode: 11, TTL: 2 * time.Minute, TableMinNode: 8, TableMaxNode: 11, MaxTTL: time.Minute},
			[]string{"TTL 2m0s is above the maximum 1m0s recorded by table ids", "--ttl", `"nodeid init --table ids --max-ttl 2m0s"`}},
	} {
		msg := a.describe(fmt.Errorf("acquire: %w", c.err))
		for _, w := range c.wants {
			if !strings.Contains(msg, w) {
				t.Errorf("describe(%v) = %q, want it to say %q", c.err, msg, w)
			}
		}
		if strings.Contains(msg, "SchemaSQL") || strings.Contains(msg, "WithTTL") {
			t.Errorf("describe(%v) = %q names the library's options, not the CLI's", c.err, msg)
		}
		if code := exitCode(c.err); code != exitUsage {
			t.Errorf("exit code of %v = %d, want %d (usage)", c.err, code, exitUsage)
		}
	}
}

// TestExplainUnconfigured: a table of an earlier version gets the CLI's
// command, whatever the library's message says.
func TestExplainUnconfigured(t *testing.T) {
	a := &app{table: "ids"}
	err := fmt.Errorf("nodeid: read configuration on table ids: %w", postgres.ErrUnconfigured)
	msg := a.describe(err)
	for _, w := range []string{"table ids has no recorded configuration", `"nodeid init --table ids"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("describe = %q, want it to say %q", msg, w)
		}
	}
}
