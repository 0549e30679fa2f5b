package javatest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

var javaLong = flag.Bool("java.long", false, "run the long chaos test of the Java client (several minutes) instead of the CI one")

// jdbcJar is where Debian's libpostgresql-jdbc-java puts the driver.
const jdbcJar = "/usr/share/java/postgresql.jar"

// required reports whether a missing JDK or driver fails the tests rather
// than skipping them: in CI, as a missing PostgreSQL or PgBouncer does.
func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv(pgtest.EnvRequire) == "1"
}

func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if required() {
		t.Fatalf("%s (CI=true or %s=1: the Java client's tests must run; .ci/run installs it)", msg, pgtest.EnvRequire)
	}
	t.Skipf("%s (set %s=1 to fail instead)", msg, pgtest.EnvRequire)
}

// javaKit is the compiled client: the java command and the class path.
type javaKit struct {
	java, classpath string
}

// compiled is the client as the first test that needed it found it.
var (
	compileOnce sync.Once
	compiled    javaKit
	compileErr  error
)

// compile compiles clients/java (main and test sources) with javac against
// the JDBC driver, once per test binary, into a cache directory named by
// the hash of what the classes are made of (the sources, the driver and
// javac), so that a run on unchanged sources compiles nothing.
func compile(t *testing.T) javaKit {
	t.Helper()
	javac, err := exec.LookPath("javac")
	if err != nil {
		unavailable(t, "javac is not installed (apt-get install default-jdk-headless)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		unavailable(t, "java is not installed (apt-get install default-jdk-headless)")
	}
	if _, err := os.Stat(jdbcJar); err != nil {
		unavailable(t, "the PostgreSQL JDBC driver %s is missing (apt-get install libpostgresql-jdbc-java)", jdbcJar)
	}
	compileOnce.Do(func() { compiled, compileErr = javacClient(javac, java) })
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	return compiled
}

// javacClient compiles every source under clients/java/src, unless the
// cache holds the classes of the same sources, driver and javac.
func javacClient(javac, java string) (javaKit, error) {
	var srcs []string
	err := filepath.WalkDir(filepath.Join("..", "src"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".java") {
			srcs = append(srcs, p)
		}
		return err
	})
	if err != nil || len(srcs) == 0 {
		return javaKit{}, fmt.Errorf("no Java sources under clients/java/src: %v", err)
	}
	h := sha256.New()
	for _, p := range append([]string{javac, jdbcJar}, srcs...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return javaKit{}, err
		}
		fi, err := os.Stat(real)
		if err != nil {
			return javaKit{}, err
		}
		fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		if strings.HasSuffix(p, ".java") {
			b, err := os.ReadFile(p)
			if err != nil {
				return javaKit{}, err
			}
			h.Write(b)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "nodeid-javatest", hex.EncodeToString(h.Sum(nil))[:16])
	kit := javaKit{java: java, classpath: dir + string(os.PathListSeparator) + jdbcJar}
	if _, err := os.Stat(dir); err == nil {
		return kit, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return javaKit{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return javaKit{}, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-Xlint:all", "-Werror", "-d", tmp, "-cp", jdbcJar}, srcs...)
	if out, err := exec.CommandContext(ctx, javac, args...).CombinedOutput(); err != nil {
		return javaKit{}, fmt.Errorf("javac: %v\n%s", err, out)
	}
	// Another test binary may have put the same classes there first.
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr != nil {
			return javaKit{}, err
		}
	}
	return kit, nil
}

// command runs class's main with args, on a JVM sized for a loaded machine.
func (k javaKit) command(ctx context.Context, class string, args ...string) *exec.Cmd {
	jvm := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx96m", "-cp", k.classpath, class}
	return exec.CommandContext(ctx, k.java, append(jvm, args...)...)
}

// jdbcURL turns a postgres:// DSN into the JDBC URL of the same database
// and user. It never puts the DSN in an error: it may hold a password.
func jdbcURL(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatal("the test server's DSN is not a postgres:// URL; the Java tests need one to build a JDBC URL")
	}
	q := url.Values{}
	if u.User != nil {
		q.Set("user", u.User.Username())
		if p, ok := u.User.Password(); ok {
			q.Set("password", p)
		}
	}
	q.Set("sslmode", "disable")
	q.Set("connectTimeout", "60")
	return fmt.Sprintf("jdbc:postgresql://%s%s?%s", u.Host, u.Path, q.Encode())
}

// createTable makes lease table name with node IDs lo to hi on db, and
// has the Go library confirm its creation (a table's creation on an async
// server is pending until a client or nodeid init confirms it: the Java
// client leaves that to nodeid init) by a claim of node lo, released at once.
func createTable(t *testing.T, db *sql.DB, name string, lo, hi int64) {
	t.Helper()
	s := postgres.DefaultSchema()
	s.Table, s.MinNode, s.MaxNode = name, lo, hi
	ddl, err := s.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatalf("creating table %s: %v", name, err)
	}
	r, err := nodeid.New(db, nodeid.WithTable(name), nodeid.WithTTL(nodeid.MinTTL), nodeid.WithOwner("settle"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := r.Acquire(ctx)
	if err != nil {
		t.Fatalf("the first claim of table %s: %v", name, err)
	}
	if err := l.ReleaseStamped(ctx, l.PreviousHorizon()); err != nil {
		t.Fatal(err)
	}
}

func TestJavaUnit(t *testing.T) {
	k := compile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := k.command(ctx, "dev.nodeid.UnitTests").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the Java unit tests failed: %v", err)
	}
	if !strings.Contains(string(out), "PASS ") || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatal("the Java unit tests ran nothing, or did not end with ok")
	}
}
