//go:build linux

package serve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestServeFrozen: a serve stopped (SIGSTOP, as a freezer or a suspended
// VM stops it) until a second serve has taken its node ID over and served
// IDs, and its lease's deadline has passed on the monotonic clock, is sent
// a request while stopped; continued, it answers it with 503, and mints
// nothing past its lease: its generator checks the deadline and the
// horizon ceiling itself on every ID, whether or not the lease's loss has
// reached serve when the request comes.
func TestServeFrozen(t *testing.T) {
	const ttl = 3 * time.Second
	db, dsn := pgtest.NewDB(t)
	args := []string{"--dsn", dsn, "--create", "--range", "0-0", "--ttl", ttl.String()}
	a := startServe(t, args...)
	c := &http.Client{Timeout: time.Minute}
	before, err := getIDs(c, a.base, 100)
	if err != nil || before.status != 200 || before.epoch != 1 {
		t.Fatalf("the first serve: %+v, %v; want 100 IDs under epoch 1", before, err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Every claim and renewal of its lease started before the stop, so its
	// deadline falls less than a TTL after it.
	stopped := time.Now()
	testkit.Until(t, 10*time.Second, "the first serve stopped", testkit.True(func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(a.cmd.Process.Pid) + "/stat")
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	}))
	// A request that waits for it: the kernel accepts the connection and
	// holds the request until the stopped serve reads it.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /ids?count=100 HTTP/1.1\r\nHost: nodeid\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}

	b := startServe(t, args...)
	var taken idsResp
	testkit.Until(t, 60*time.Second, "IDs of the second serve past the first's deadline", testkit.True(func() bool {
		r, err := getIDs(c, b.base, 100)
		if err != nil {
			t.Fatal(err)
		}
		if r.status == 200 {
			taken.epoch, taken.ids = r.epoch, append(taken.ids, r.ids...)
		}
		return len(taken.ids) > 0 && time.Since(stopped) > ttl
	}))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen := time.Since(stopped)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	after, err := getIDs(c, a.base, 100)
	if err != nil {
		t.Fatal(err)
	}
	more, err := getIDs(c, b.base, 100)
	if err != nil || more.status != 200 {
		t.Fatalf("the second serve after the thaw: %+v, %v", more, err)
	}
	taken.ids = append(taken.ids, more.ids...)
	t.Logf("stopped for %s (a TTL is %s); the request held over the stop got %d %q; the next %d %q; the second serve: epoch %d, %d IDs",
		frozen.Round(time.Millisecond), ttl, resp.StatusCode, strings.TrimSpace(string(body)), after.status, strings.TrimSpace(after.body), taken.epoch, len(taken.ids))
	if taken.epoch != 2 {
		t.Fatalf("the second serve minted under epoch %d, want 2 (a takeover)", taken.epoch)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the request held over the stop: %d %q, want 503", resp.StatusCode, body)
	}
	if after.status != http.StatusServiceUnavailable {
		t.Errorf("a request after the thaw: %+v, want 503", after)
	}
	seen := map[int64]bool{}
	for _, id := range append(before.ids, taken.ids...) {
		if seen[id] {
			t.Errorf("ID %d minted twice", id)
		}
		seen[id] = true
	}
	if row := clitest.ReadLease(t, db, 0); row.Epoch != 2 {
		t.Errorf("node 0: %+v, want epoch 2", row)
	}
	a.stop(t)
	b.stop(t)
}
