package table

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
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

// TestWatchFirstFailure: a watch whose first refresh fails ends with the
// error instead of repeating it.
func TestWatchFirstFailure(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "watch", "--dsn", "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", "--count", "5"),
		cli.ExitFailure, "cannot connect to PostgreSQL", "connection refused")
}
