package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakePgdockerEnv makes the test binary a fake pgdocker (see fakePgdocker),
// whose behaviour is its value; it appends its arguments and the commands
// it reads to the file named by fakePgdockerLog.
const (
	fakePgdockerEnv = "NODEID_PGTEST_FAKE_PGDOCKER"
	fakePgdockerLog = "NODEID_PGTEST_FAKE_PGDOCKER_LOG"
)

// fakePgdocker speaks pgdocker's protocol without Docker, and returns its
// exit status. Behaviours: "serve" answers ok, but an error to "stop
// immediate", and logs "purge" at the end of its input; "noengine" exits
// as pgdocker does without an engine; "silent" never answers; "crash"
// exits 3 on its first command; "garbage" prints a first line that is no
// container's; "slow" prints nothing, and exits on SIGTERM.
func fakePgdocker() int {
	behaviour := os.Getenv(fakePgdockerEnv)
	log, err := os.OpenFile(os.Getenv(fakePgdockerLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer log.Close()
	fmt.Fprintln(log, strings.Join(os.Args[1:], " "))
	port := ""
	for i, a := range os.Args {
		if a == "-port" && i+1 < len(os.Args) {
			port = os.Args[i+1]
		}
	}
	switch behaviour {
	case "slow": // a long image pull: a container only after a signal
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Fprintln(log, "pulling")
		<-sigs
		fmt.Fprintln(log, "signalled")
		return 1
	case "noengine":
		fmt.Fprintln(os.Stderr, "no Docker engine: unix:///nowhere.sock: connection refused")
		return 1
	case "garbage":
		fmt.Println("hello")
	default:
		fmt.Printf("{\"port\":%s,\"id\":\"c0ffee\"}\n", port)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Fprintln(log, sc.Text())
		switch {
		case behaviour == "crash":
			fmt.Fprintln(os.Stderr, "pgdocker: the engine went away")
			return 3
		case behaviour == "silent":
		case sc.Text() == "stop immediate":
			fmt.Println("error: engine says no")
		default:
			fmt.Println("ok")
		}
	}
	fmt.Fprintln(log, "purge")
	return 0
}

// useFakePgdocker makes startDocker run the fake with behaviour, and
// returns the path of its log.
func useFakePgdocker(t *testing.T, behaviour string) string {
	log := filepath.Join(t.TempDir(), "log")
	t.Setenv(fakePgdockerEnv, behaviour)
	t.Setenv(fakePgdockerLog, log)
	t.Setenv("DOCKER_HOST", "unix:///fake.sock") // past noDockerEndpoint
	prev := dockerProgram
	dockerProgram = func() (string, error) { return os.Args[0], nil }
	t.Cleanup(func() { dockerProgram = prev })
	return log
}

func readLog(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each command has its answer, an error is the command's, and Close ends
// pgdocker's input, on which it removes the container and exits.
func TestPgdockerProtocol(t *testing.T) {
	log := useFakePgdocker(t, "serve")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := runPgdocker(ctx, os.Args[0], 5433, []string{"max_connections=7"})
	if err != nil {
		t.Fatal(err)
	}
	if d.id != "c0ffee" {
		t.Errorf("container %q; want c0ffee", d.id)
	}
	if err := d.Stop(ctx, Fast); err != nil {
		t.Errorf("Stop(fast): %v", err)
	}
	if err := d.Start(ctx); err != nil {
		t.Errorf("Start: %v", err)
	}
	if err := d.Stop(ctx, Immediate); err == nil || !strings.Contains(err.Error(), "stop immediate: engine says no") {
		t.Errorf("Stop(immediate) = %v; want the fake's error", err)
	}
	if err := d.Stop(ctx, "gently"); err == nil {
		t.Error("Stop(gently) succeeded")
	}
	if err := d.Start(ctx); err != nil {
		t.Errorf("Start after an error: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-d.Exited():
	default:
		t.Error("Exited is open after Close")
	}
	want := "-port 5433 -c max_connections=7\nstop fast\nstart\nstop immediate\nstart\npurge\n"
	if got := readLog(t, log); got != want {
		t.Errorf("pgdocker saw:\n%s\nwant:\n%s", got, want)
	}
}

// Without an engine pgdocker exits, and startDocker returns its reason,
// so that StartOwn goes on to local binaries.
func TestStartDockerWithoutEngine(t *testing.T) {
	useFakePgdocker(t, "noengine")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := startDocker(ctx, nil)
	if s != nil || err == nil || !strings.HasPrefix(err.Error(), "no Docker engine: unix:///nowhere.sock: connection refused") {
		t.Fatalf("startDocker = %v, %v; want no server and the engine's absence", s, err)
	}
}

// pgdocker is given the server's settings and port; when the server does
// not accept connections, startDocker closes it, and the container is
// removed.
func TestStartDockerArguments(t *testing.T) {
	log := useFakePgdocker(t, "serve")
	// Nothing listens on the port: WaitReady gives up with ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if s, err := startDocker(ctx, []string{"max_connections=7"}); s != nil || err == nil {
		t.Fatalf("startDocker = %v, %v; want an error (nothing listens)", s, err)
	}
	got := strings.Split(readLog(t, log), "\n")
	if len(got) != 3 || got[1] != "purge" {
		t.Fatalf("pgdocker saw %q; want its arguments, then the end of its input", got)
	}
	for _, want := range []string{"-port ", "-c listen_addresses=127.0.0.1", "-c fsync=off", "-c max_connections=7"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("pgdocker's arguments %q lack %q", got[0], want)
		}
	}
}

// An answer that does not come before ctx ends fails the command, and
// every later one (its answer would come out of turn); Close still ends
// pgdocker.
func TestPgdockerNoAnswer(t *testing.T) {
	useFakePgdocker(t, "silent")
	d, err := runPgdocker(context.Background(), os.Args[0], 5433, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := d.Stop(ctx, Smart); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v; want the context's end", err)
	}
	if err := d.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("Start after a lost answer = %v; want the lost answer", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// When pgdocker exits, a command says so with what it printed, Exited is
// closed, and Close reports the exit.
func TestPgdockerExits(t *testing.T) {
	useFakePgdocker(t, "crash")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := runPgdocker(ctx, os.Args[0], 5433, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, Fast); err == nil || !strings.Contains(err.Error(), "the engine went away") {
		t.Errorf("Stop = %v; want pgdocker's exit", err)
	}
	select {
	case <-d.Exited():
	case <-ctx.Done():
		t.Fatal("Exited stays open")
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Close = %v; want the exit status", err)
	}
}

// A first line that is not the container's is an error, and pgdocker is
// closed.
func TestPgdockerGarbage(t *testing.T) {
	log := useFakePgdocker(t, "garbage")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if d, err := runPgdocker(ctx, os.Args[0], 5433, nil); d != nil || err == nil || !strings.Contains(err.Error(), `"hello"`) {
		t.Fatalf("runPgdocker = %v, %v; want an error naming the line", d, err)
	}
	if got := readLog(t, log); !strings.HasSuffix(got, "purge\n") {
		t.Errorf("pgdocker saw %q; want the end of its input", got)
	}
}

// When ctx ends before the container's line (an image pull, say),
// pgdocker is asked to stop with SIGTERM, on which it removes what it made.
func TestPgdockerStartCancelled(t *testing.T) {
	log := useFakePgdocker(t, "slow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The start ends while pgdocker pulls the image: once the fake has
	// said so (its handler is in place), however long a loaded machine
	// takes to start it; after a minute regardless, to fail, not hang.
	go func() {
		defer cancel()
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(log); strings.Contains(string(b), "pulling\n") {
				return
			}
		}
	}()
	if d, err := runPgdocker(ctx, os.Args[0], 5433, nil); d != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("runPgdocker = %v, %v; want the context's end", d, err)
	}
	if got := readLog(t, log); !strings.HasSuffix(got, "pulling\nsignalled\n") {
		t.Errorf("pgdocker saw %q; want SIGTERM while it pulled", got)
	}
}

// With no engine named and no default socket, startDocker says so without
// building pgdocker.
func TestNoDockerEndpoint(t *testing.T) {
	for _, v := range []string{"DOCKER_HOST", "DOCKER_URL", "DOCKER_MACHINE_NAME"} {
		t.Setenv(v, "")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		t.Skip("/var/run/docker.sock exists")
	}
	prev := dockerProgram
	dockerProgram = func() (string, error) { return "", errors.New("pgdocker was built") }
	t.Cleanup(func() { dockerProgram = prev })
	if s, err := startDocker(context.Background(), nil); s != nil || err == nil || !strings.HasPrefix(err.Error(), "no Docker engine: DOCKER_HOST is unset") {
		t.Fatalf("startDocker = %v, %v; want no server and the socket's absence", s, err)
	}
}

// The real pgdocker, built from the checkout, finds no engine behind a
// socket nothing listens on, and startDocker passes its reason on.
func TestPgdockerBuiltWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pgdocker: skipped under -short")
	}
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
	l.Close()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := startDocker(ctx, nil)
	if s != nil || err == nil || !strings.HasPrefix(err.Error(), "no Docker engine: unix://"+sock) {
		t.Fatalf("startDocker = %v, %v; want no server and the engine's absence at %s", s, err, sock)
	}
}
