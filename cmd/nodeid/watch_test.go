package main

import (
	"strings"
	"testing"
)

// TestWatch: --count frames of the list, each with its header, and no
// terminal control sequences when the output is not a terminal.
func TestWatch(t *testing.T) {
	_, dsn := seedList(t)
	out := mustCLI(t, "watch", "--dsn", dsn, "--count", "3", "--interval", "10ms", "--state", "held")
	if strings.Contains(out, "\x1b") {
		t.Errorf("control sequences in a non-terminal output: %q", out)
	}
	frame := "Every 10ms: nodeid list --table snowflake_nodes    12:00:00\n\n" +
		"NODE  STATE  OWNER  EPOCH  ACQUIRED  EXPIRES  HORIZON\n" +
		"0     held   web-1  3      3h ago    in 12m   in 12m\n" +
		"held 1 / free 2 / expired 1 / total 4\n"
	if want := frame + "\n" + frame + "\n" + frame; out != want {
		t.Errorf("watch output:\n%s\nwant:\n%s", out, want)
	}
}

func TestWatchBadInput(t *testing.T) {
	wantExit(t, cli(t, "watch", "--interval", "0s"), exitUsage, "--interval")
	wantExit(t, cli(t, "watch", "--interval", "soon"), exitUsage, `"soon" is not a duration`)
	wantExit(t, cli(t, "watch", "--interval", "-1s"), exitUsage, "negative")
	wantExit(t, cli(t, "watch", "--count", "-1"), exitUsage, "--count")
	wantExit(t, cli(t, "watch", "--state", "gone"), exitUsage, "--state")
}

// TestWatchFirstFailure: a watch whose first refresh fails ends with the
// error instead of repeating it.
func TestWatchFirstFailure(t *testing.T) {
	wantExit(t, cli(t, "watch", "--dsn", "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", "--count", "5"),
		exitFailure, "cannot connect to PostgreSQL", "connection refused")
}
