package holder

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestLineHandler: library log records come out as "nodeid: " lines, one
// each, below Warn dropped.
func TestLineHandler(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := slog.New(newLineHandler(&b, slog.LevelWarn)).With("node_id", 3)
	log.Debug("nodeid: renewed")
	log.WithGroup("db").Warn("nodeid: renewal failed; retrying",
		"err", errors.New("nodeid: renew: connection\nreset"), "deadline_in", 1234567*time.Microsecond,
		slog.Group("try", "n", 2))
	log.Error("lease lost")
	want := "nodeid: renewal failed; retrying (node_id=3, db.err=renew: connection; reset, db.deadline_in=1.235s, db.try.n=2)\n" +
		"nodeid: lease lost (node_id=3)\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
