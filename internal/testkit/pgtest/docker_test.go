package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeDocker puts a docker command that runs script first on PATH.
func fakeDocker(t *testing.T, script string) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Without an engine, the docker command fails and startDocker says so,
// with what the command printed, so that StartOwn goes on to local
// binaries.
func TestStartDockerWithoutEngine(t *testing.T) {
	fakeDocker(t, `echo "Cannot connect to the Docker daemon" >&2; exit 1`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := startDocker(ctx, nil)
	if s != nil || err == nil || !strings.Contains(err.Error(), "no Docker engine") || !strings.Contains(err.Error(), "Cannot connect") {
		t.Fatalf("startDocker = %v, %v; want no server and the engine's absence", s, err)
	}
}

// The container is run with the image, the published port and the
// server's settings, and removed on Close.
func TestStartDockerArguments(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	fakeDocker(t, `echo "$@" >> `+log+`
case "$1" in
version) echo 28.2.2 ;;
run) echo c0ffee ;;
*) ;;
esac`)
	// Nothing listens on the port: WaitReady gives up with ctx, and the
	// container is removed. The bound leaves a loaded machine the time to
	// start the fake's two shells before it ends (at 100 ms one did not).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if s, err := startDocker(ctx, []string{"max_connections=7"}); s != nil || err == nil {
		t.Fatalf("startDocker = %v, %v; want an error (nothing listens)", s, err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(calls) != 3 || !strings.HasPrefix(calls[0], "version") || !strings.HasPrefix(calls[2], "rm --force --volumes c0ffee") {
		t.Fatalf("docker calls:\n%s", b)
	}
	for _, want := range []string{"run --detach", "--publish 127.0.0.1:", ":5432 " + dockerImage + " postgres", "-c listen_addresses=*", "-c max_connections=7"} {
		if !strings.Contains(calls[1], want) {
			t.Errorf("docker %s lacks %q", calls[1], want)
		}
	}
}
