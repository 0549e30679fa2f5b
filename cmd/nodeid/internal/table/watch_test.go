package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"go.yaml.in/yaml/v3"
)

// TestWatch: --count frames of the list, each with its header, and no
// terminal control sequences when the output is not a terminal.
func TestWatch(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	out := harness.Must(t, "watch", "--dsn", dsn, "--count", "3", "--interval", "10ms", "--state", "held")
	if strings.Contains(out, "\x1b") {
		t.Errorf("control sequences in a non-terminal output: %q", out)
	}
	frame := "Every 10ms: nodeid list --table snowflake_nodes    12:00:00\n\n" +
		"NODE  STATE  OWNER  EPOCH  ACQUIRED  EXPIRES  HORIZON\n" +
		"0     held   web-1  3      3h ago    in 12m   in 12m\n" +
		"held 1 / free 2 / expired 1 / total 4; replication async\n"
	if want := frame + "\n" + frame + "\n" + frame; out != want {
		t.Errorf("watch output:\n%s\nwant:\n%s", out, want)
	}
}

// TestWatchJSON: with -o json each refresh is one compact JSON document on
// a line of its own, and nothing else is printed: a JSON stream.
func TestWatchJSON(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	out := harness.Must(t, "watch", "--dsn", dsn, "--count", "2", "--interval", "10ms", "--state", "held", "-o", "json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("watch -o json --count 2 printed %d lines, want 2 documents:\n%s", len(lines), out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	for i := 0; i < 2; i++ {
		var frame struct {
			Table   string  `json:"table"`
			Summary summary `json:"summary"`
			Nodes   []struct {
				NodeID int64  `json:"node_id"`
				Owner  string `json:"owner"`
			} `json:"nodes"`
		}
		if err := dec.Decode(&frame); err != nil {
			t.Fatalf("frame %d: %v\n%s", i, err, out)
		}
		if frame.Table != "snowflake_nodes" || frame.Summary.Total != 4 || len(frame.Nodes) != 1 || frame.Nodes[0].Owner != "web-1" {
			t.Errorf("frame %d: %+v", i, frame)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
			t.Errorf("line %d is not a JSON document: %v", i, err)
		}
	}
	if dec.More() {
		t.Errorf("more than 2 documents:\n%s", out)
	}
}

// TestWatchYAML: with -o yaml each refresh is a YAML document that starts
// with "---".
func TestWatchYAML(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	out := harness.Must(t, "watch", "--dsn", dsn, "--count", "2", "--interval", "10ms", "-o", "yaml")
	if !strings.HasPrefix(out, "---\ntable: snowflake_nodes\n") || strings.Count(out, "---\n") != 2 {
		t.Fatalf("watch -o yaml:\n%s", out)
	}
	dec := yaml.NewDecoder(strings.NewReader(out))
	n := 0
	for {
		var doc struct {
			Summary struct {
				Held int `yaml:"held"`
			} `yaml:"summary"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || doc.Summary.Held != 1 {
			t.Fatalf("document %d: %+v, %v", n, doc, err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d YAML documents, want 2", n)
	}
}

// TestWatchNoHeaders: --no-headers leaves out the frame's header, the
// table's header and the summary line.
func TestWatchNoHeaders(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	out := harness.Must(t, "watch", "--dsn", dsn, "--count", "2", "--interval", "10ms", "--state", "held", "--no-headers")
	if row := "0  held  web-1  3  3h ago  in 12m  in 12m\n"; out != row+"\n"+row {
		t.Errorf("watch --no-headers: %q", out)
	}
}

func TestWatchBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "watch", "--interval", "0s"), cli.ExitUsage, "--interval")
	clitest.WantExit(t, harness.Run(t, "watch", "--interval", "soon"), cli.ExitUsage, `"soon" is not a duration`)
	clitest.WantExit(t, harness.Run(t, "watch", "--interval", "-1s"), cli.ExitUsage, "negative")
	clitest.WantExit(t, harness.Run(t, "watch", "--count", "-1"), cli.ExitUsage, "--count")
	clitest.WantExit(t, harness.Run(t, "watch", "--state", "gone"), cli.ExitUsage, "--state")
}

// TestWatchFirstFailure: a watch whose first refresh fails for a reason
// that does not go away by itself (no such table) ends with the error
// instead of repeating it; one that cannot connect keeps trying, and
// exits 1 if its last refresh failed too.
func TestWatchFirstFailure(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	clitest.WantExit(t, harness.Run(t, "watch", "--dsn", dsn, "--table", "nosuch", "--count", "5"),
		cli.ExitFailure, "table nosuch does not exist")
	r := harness.Run(t, "watch", "--dsn", "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", "--count", "2", "--interval", "10ms")
	clitest.WantExit(t, r, cli.ExitFailure, "the last of 2 refreshes failed")
	if n := strings.Count(r.Stdout, "connection refused"); n != 2 || strings.Count(r.Stdout, "trying again every 10ms") != 2 {
		t.Errorf("%d frames say the connection was refused, want 2, each saying it tries again:\n%s", n, r.Stdout)
	}
}

// TestWatchThroughOutage: a watch started while the server is down keeps
// trying, saying it cannot connect, and shows the list once the server is
// back; interrupted, it exits 0.
func TestWatchThroughOutage(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	_, dsn := srv.NewDB(t)
	harness.Must(t, "init", "--dsn", dsn, "--range", "0-3")
	ctx := clitest.Ctx(t)
	if err := srv.Stop(ctx, pgtest.Fast); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	b := harness.StartInterruptible(t, "watch", "--dsn", dsn, "--interval", "100ms", "--all")
	defer func() {
		b.Interrupt()
		<-b.Done()
	}()
	// 3 s of outage, and watch still trying.
	testkit.Until(t, 30*time.Second, "a 3 s outage, watch trying", func() error {
		select {
		case <-b.Done():
			return testkit.Stop(fmt.Errorf("watch exited %d during the outage: %s%s", b.Code(), b.Stdout(), b.Stderr()))
		default:
		}
		if n := strings.Count(b.Stdout(), "cannot connect"); n < 3 || time.Since(down) < 3*time.Second {
			return fmt.Errorf("%d frames say it cannot connect, %s into the outage", n, time.Since(down))
		}
		return nil
	})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 60*time.Second, "a frame of the list", func() error {
		select {
		case <-b.Done():
			return testkit.Stop(fmt.Errorf("watch exited %d: %s%s", b.Code(), b.Stdout(), b.Stderr()))
		default:
		}
		if out := b.Stdout(); !strings.Contains(out, "total 4") {
			return fmt.Errorf("no list yet; the last frame: %s", out[strings.LastIndex(out, "Every "):])
		}
		return nil
	})
	b.Interrupt()
	if r := b.Wait(t, 30*time.Second); r.Code != 0 {
		t.Errorf("watch interrupted exited %d, want 0", r.Code)
	}
}
