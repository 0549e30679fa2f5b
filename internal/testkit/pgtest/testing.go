package pgtest

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
)

// EnvRequire set to 1 turns "no database available" from a skip into a
// failure. CI sets it.
const EnvRequire = "NODEID_TEST_REQUIRE_DB"

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Main runs the tests of a package, stops the server they shared, and fails
// the run if any goroutine outlives the tests: call it from TestMain.
// dbExamples names the package's Example functions that use ExampleDSN:
// under -short they are skipped (an Example cannot skip itself), as the
// tests that ask for a database are.
func Main(m *testing.M, dbExamples ...string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() && len(dbExamples) > 0 {
		skip := "^(" + strings.Join(dbExamples, "|") + ")$"
		if f := flag.Lookup("test.skip"); f != nil {
			if prev := f.Value.String(); prev != "" {
				skip = prev + "|" + skip
			}
			_ = f.Value.Set(skip)
		}
		shortExamples = dbExamples
	}
	testkit.Main(m, func() {
		if shared.srv != nil {
			_ = shared.srv.Close()
		}
	})
}

// MainWaiting is Main for a suite whose tests spend their time waiting for
// servers, replication and leases rather than on the CPU: unless the run
// gives -parallel, it runs four of them at a time instead of GOMAXPROCS.
// dbExamples are Main's.
func MainWaiting(m *testing.M, dbExamples ...string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !given {
		_ = f.Value.Set("4")
	}
	Main(m, dbExamples...)
}

// shortExamples are the Examples Main skips under -short.
var shortExamples []string

// SkipShort skips the test under -short, which runs only what needs no
// database, cluster or server: the harness calls it wherever it hands one
// out (Shared, NewDB, NewServer, NewPair, NewCluster), so that a test that
// asks for one is skipped there.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL: skipped under -short (go test without -short runs it)")
	}
}

// Unavailable skips the test because no database could be had, or fails it
// when NODEID_TEST_REQUIRE_DB=1.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("no PostgreSQL for this test (%s=1): %v", EnvRequire, err)
	}
	t.Skipf("no PostgreSQL for this test (set %s=1 to fail instead): %v", EnvRequire, err)
}

// Shared returns the server shared by the tests of this process, starting it
// on first use. Tests must not stop or restart it: see NewServer.
func Shared(t testing.TB) *Server {
	t.Helper()
	SkipShort(t)
	srv, err := sharedServer()
	if err != nil {
		Unavailable(t, err)
	}
	return srv
}

func sharedServer() (*Server, error) {
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = Start(ctx)
	})
	return shared.srv, shared.err
}

// ExampleDSN returns the DSN of a fresh database on the shared server, for
// Example functions, which have no testing.T, and a function that drops it.
func ExampleDSN() (dsn string, drop func(), err error) {
	if testing.Short() {
		return "", nil, fmt.Errorf("pgtest: an Example asked for a database under -short: name it in the package's pgtest.Main (it skips %v)", shortExamples)
	}
	srv, err := sharedServer()
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := srv.CreateDatabase(ctx)
	if err != nil {
		return "", nil, err
	}
	return srv.DSN(name), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.DropDatabase(ctx, name)
	}, nil
}

// NewServer starts a server of the test's own, which it may stop, restart
// and kill; it is closed when the test ends.
func NewServer(t testing.TB, settings ...string) *Server {
	t.Helper()
	SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartOwn(ctx, settings...)
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testConnectTimeout is the connect_timeout of the DSNs NewDB returns. On a
// loaded machine a new connection waits for its backend to start: with two
// CPU-bound processes beside a test run on 2 cores, new connections to a
// test server (and a SELECT 1) took 0.86 s at p99 and up to 6.8 s, where a
// SELECT 1 on an established connection took 80 ms at p99 and 0.22 s at
// most. A test that is not about connecting must not fail on that, as a
// run test did once when a client's own default (the nodeid command's
// 10 s) gave up first. The context of each call still bounds it.
const testConnectTimeout = 60 * time.Second

// NewDB creates a fresh database on the shared server and returns a handle
// to it and its DSN (with connect_timeout set to testConnectTimeout). Both
// are dropped when the test ends.
func NewDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	return Shared(t).NewDB(t)
}

// NewDB creates a fresh database on s, dropped when the test ends, and
// returns a handle to it and its DSN, as the package function NewDB does.
func (s *Server) NewDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dsn := WithParam(s.DSN(name), "connect_timeout", strconv.Itoa(int(testConnectTimeout/time.Second)))
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = s.DropDatabase(ctx, name)
	})
	return db, dsn
}
