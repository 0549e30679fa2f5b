package holder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid"
)

// TestLineHandler: library log records come out as "nodeid: " lines, one
// each, below Warn dropped, and the record of a loss, which the command
// says itself.
func TestLineHandler(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := slog.New(newLineHandler(&b, slog.LevelWarn)).With("node_id", 3)
	log.Debug("nodeid: renewed")
	log.WithGroup("db").Warn("nodeid: renewal failed; retrying",
		"err", errors.New("nodeid: renew: connection\nreset"), "deadline_in", 1234567*time.Microsecond,
		slog.Group("try", "n", 2))
	log.Error("lease lost")
	log.Error("nodeid: lease lost", "err", &nodeid.EndError{NodeID: 3, Epoch: 1, Cause: nodeid.ErrExpired}) // said by the command
	log.Debug("nodeid: lease ended", "err", &nodeid.EndError{NodeID: 3, Epoch: 1, Cause: nodeid.ErrReleased})
	want := "nodeid: renewal failed; retrying (node_id=3, db.err=renew: connection; reset, db.deadline_in=1.235s, db.try.n=2)\n" +
		"nodeid: lease lost (node_id=3)\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestErrorTextOfConnectError: a failure to connect to two addresses reads
// on one line, each address once with its cause, after what the library
// said it was doing, without pgx's line breaks and tabs.
func TestErrorTextOfConnectError(t *testing.T) {
	t.Parallel()
	var ports []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ports = append(ports, port)
		ln.Close() // nothing listens there now: the dial is refused
	}
	for _, c := range []struct{ dsn, want string }{
		{"host=127.0.0.1 port=" + ports[0] + " user=app dbname=ids",
			`renew on table t: cannot connect to database "ids" as user "app": 127.0.0.1:` + ports[0] + `: connection refused`},
		{"host=127.0.0.1,127.0.0.1 port=" + ports[0] + "," + ports[1] + " user=app dbname=ids",
			`renew on table t: cannot connect to database "ids" as user "app": 127.0.0.1:` + ports[0] + `: connection refused; 127.0.0.1:` + ports[1] + `: connection refused`},
	} {
		cfg, err := pgconn.ParseConfig(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		_, err = pgconn.ConnectConfig(context.Background(), cfg)
		if err == nil {
			t.Fatalf("connected to %s", c.dsn)
		}
		if got := errorText(fmt.Errorf("nodeid: renew on table t: %w", err)); got != c.want {
			t.Errorf("errorText of %q:\n got %s\nwant %s", err, got, c.want)
		}
	}
	if got := errorText(errors.New("nodeid: lease of node ID 1 lost")); got != "lease of node ID 1 lost" {
		t.Errorf("errorText of another error: %s", got)
	}
}
