//go:build linux

package run

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestRunOutageLogsQuietly: while the server is down for 4 s, longer than
// three renewal attempts, nodeid run says once that renewals fail, with
// the error's cause once, and once that they recovered: from its start to
// the recovery at most 3 lines of stderr mention renewal, and none doubles
// the "nodeid: " prefix or holds a control character's escape.
func TestRunOutageLogsQuietly(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	_, dsn := srv.NewDB(t)
	dir := t.TempDir()
	child := clitest.Script(t, `exec 2>/dev/null
echo started > `+dir+`/started
while [ ! -e `+dir+`/go ]; do sleep 0.05; done
`)
	// An 18 s lease outlives the outage: renewals start every 6 s and are
	// retried every 600 ms (renew.go's rules).
	b := harness.Start(t, "run", "--dsn", dsn, "--create", "--ttl", "18s", "--metrics-addr", "127.0.0.1:0", "--", child)
	waitFile(t, filepath.Join(dir, "started"), b)
	addr := regexp.MustCompile(`metrics on http://([^/]+)/metrics`).FindStringSubmatch(b.Stderr())
	if addr == nil {
		t.Fatalf("no metrics address in stderr: %s", b.Stderr())
	}
	retried := regexp.MustCompile(`(?m)^nodeid_lease_renewals_total\{[^}]*nodeid_outcome="retried"[^}]*\} ([0-9]+)$`)
	failedAttempts := func() (int, error) {
		resp, err := http.Get("http://" + addr[1] + "/metrics")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, err
		}
		m := retried.FindSubmatch(body)
		if m == nil {
			return 0, nil
		}
		return strconv.Atoi(string(m[1]))
	}

	ctx := clitest.Ctx(t)
	if err := srv.Stop(ctx, pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	outage := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			_ = srv.Start(ctx)
		}
	}()
	// At least three failed attempts, and the outage lasts 4 s.
	testkit.Until(t, 30*time.Second, "three renewal attempts failed, 4 s into the outage", func() error {
		n, err := failedAttempts()
		if err != nil {
			return testkit.Stop(err)
		}
		if n < 3 || time.Since(outage) < 4*time.Second {
			return fmt.Errorf("%d failed attempts after %s", n, time.Since(outage))
		}
		return nil
	})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	testkit.Until(t, 30*time.Second, "renewals recovered", func() error {
		if strings.Contains(b.Stderr(), "renewals recovered") {
			return nil
		}
		return fmt.Errorf("stderr: %s", b.Stderr())
	})
	stderr := b.Stderr()
	var renewal []string
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if strings.Contains(line, "renew") {
			renewal = append(renewal, line)
		}
		if strings.Contains(line, `\t`) || strings.Contains(line, `\n`) {
			t.Errorf("a line holds an escaped control character: %q", line)
		}
	}
	if len(renewal) > 3 || len(renewal) < 2 {
		t.Errorf("%d lines of stderr mention renewal, want 2 or 3 (failing, recovered):\n%s", len(renewal), stderr)
	}
	if strings.Contains(stderr, "nodeid: nodeid:") {
		t.Errorf("a doubled prefix:\n%s", stderr)
	}
	if !strings.Contains(stderr, "renewals failing") {
		t.Errorf("stderr does not say the renewals fail:\n%s", stderr)
	}
	checkLineFormat(t, stderr)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := b.Wait(t, 30*time.Second); r.Code != 0 {
		t.Errorf("run exited %d after its command exited 0:\n%s", r.Code, r.Stderr)
	}
	t.Logf("stderr:\n%s", stderr)
}
