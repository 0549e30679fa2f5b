package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
)

// TestMain runs the program itself when the test re-executes its binary
// with PGDOCKER_RUN_MAIN=1, so that a test sees its exit status.
func TestMain(m *testing.M) {
	if os.Getenv("PGDOCKER_RUN_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func TestParseCommand(t *testing.T) {
	for line, want := range map[string]command{
		"stop smart":     {stop: true, signal: dc.SIGTERM},
		"stop fast":      {stop: true, signal: dc.SIGINT},
		"stop immediate": {stop: true, signal: dc.SIGQUIT},
		" stop  fast ":   {stop: true, signal: dc.SIGINT},
		"start":          {},
	} {
		got, err := parseCommand(line)
		if err != nil || got != want {
			t.Errorf("parseCommand(%q) = %+v, %v; want %+v", line, got, err, want)
		}
	}
	for _, line := range []string{"", "stop", "stop now", "stop fast please", "start now", "restart", "STOP fast"} {
		if got, err := parseCommand(line); err == nil {
			t.Errorf("parseCommand(%q) = %+v; want an error", line, got)
		}
	}
}

func TestParseArgs(t *testing.T) {
	c, err := parseArgs([]string{"-port", "5433", "-c", "fsync=off", "-c", "max_connections=7"})
	if err != nil || c.image != "postgres:15" || c.port != 5433 || !slices.Equal(c.settings, []string{"fsync=off", "max_connections=7"}) {
		t.Fatalf("parseArgs = %+v, %v", c, err)
	}
	for _, args := range [][]string{{"-c", "fsync"}, {"-c", "=off"}, {"-port", "-1"}, {"-port", "70000"}, {"-image", "postgres"}, {"extra"}} {
		if c, err := parseArgs(args); err == nil {
			t.Errorf("parseArgs(%q) = %+v; want an error", args, c)
		}
	}
}

// The server listens on every address of the container, whatever the
// settings say; the host publishes it on 127.0.0.1 only, at the port.
func TestRunOptions(t *testing.T) {
	o := runOptions(config{image: "postgres:15", settings: []string{"listen_addresses=127.0.0.1", "max_connections=7"}}, 5433)
	want := []string{"postgres", "-c", "max_connections=7", "-c", "listen_addresses=*"}
	if o.Repository != "postgres" || o.Tag != "15" || !slices.Equal(o.Cmd, want) {
		t.Errorf("image %s:%s, command %q; want postgres:15, %q", o.Repository, o.Tag, o.Cmd, want)
	}
	if b := o.PortBindings["5432/tcp"]; len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "5433" {
		t.Errorf("port bindings %+v", o.PortBindings)
	}
	hc := dc.HostConfig{PublishAllPorts: true, RestartPolicy: dc.RestartPolicy{Name: "always"}}
	hostConfig(&hc)
	if hc.PublishAllPorts || hc.RestartPolicy.Name != "no" {
		t.Errorf("host config publishes all ports (%v) or restarts (%q)", hc.PublishAllPorts, hc.RestartPolicy.Name)
	}
	if o.Labels[label] != "1" || !slices.Contains(o.Env, "POSTGRES_HOST_AUTH_METHOD=trust") {
		t.Errorf("labels %v, environment %q", o.Labels, o.Env)
	}
}

// fakeContainer records the commands it is given.
type fakeContainer struct{ calls []string }

func (f *fakeContainer) Stop(_ context.Context, sig dc.Signal) error {
	f.calls = append(f.calls, fmt.Sprint("stop ", int(sig)))
	if sig == dc.SIGQUIT {
		return errors.New("engine\nsays no")
	}
	return nil
}

func (f *fakeContainer) Start(context.Context) error {
	f.calls = append(f.calls, "start")
	return nil
}

// Every line has one answer, in order; an error is one line too.
func TestServe(t *testing.T) {
	var out bytes.Buffer
	f := &fakeContainer{}
	in := "stop fast\nstart\nbogus\nstop immediate\nstop smart\n"
	if err := serve(strings.NewReader(in), &out, f); err != nil {
		t.Fatal(err)
	}
	want := "ok\nok\nerror: unknown command \"bogus\" (stop MODE or start)\nerror: engine says no\nok\n"
	if out.String() != want {
		t.Errorf("answers:\n%s\nwant:\n%s", out.String(), want)
	}
	if calls := strings.Join(f.calls, ","); calls != "stop 2,start,stop 3,stop 15" {
		t.Errorf("calls %s", calls)
	}
}

// Without an engine the program exits 1 at once, and says why on stderr.
func TestNoEngine(t *testing.T) {
	dir, err := os.MkdirTemp("", "pgd") // short: a socket's path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, and nothing answers on it

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-c", "fsync=off")
	cmd.Env = append(os.Environ(), "PGDOCKER_RUN_MAIN=1", "DOCKER_HOST=unix://"+sock)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v; want status 1 (stderr: %s)", err, stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("it took %v to find no engine", d)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "no Docker engine: ") || !strings.Contains(got, sock) || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr %q; want one line: no Docker engine, naming %s", got, sock)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q; want nothing", stdout.String())
	}
}
