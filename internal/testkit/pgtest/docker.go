package pgtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/syncbuf"
	"github.com/nodeid/nodeid/pgserver"
)

// pgdockerModule is the module of the program that runs a server in
// Docker (see its package comment): a module of its own, which this one
// does not require, so that no user of the library fetches a Docker client.
const pgdockerModule = "github.com/nodeid/nodeid/internal/testkit/pgdocker"

// dockerProgram returns the pgdocker program to run, built on first use;
// a test replaces it with a fake.
var dockerProgram = buildPgdocker

var pgdockerBuild struct {
	once sync.Once
	path string
	err  error
}

// buildPgdocker builds the pgdocker program once per process from the
// checkout (the folder beside this package's source, or the workspace's
// module), into the user's cache folder, replacing what another test
// binary put there by a rename, under which running copies go on.
func buildPgdocker() (string, error) {
	b := &pgdockerBuild
	b.once.Do(func() {
		dir, err := pgdockerDir()
		if err != nil {
			b.err = fmt.Errorf("no pgdocker program: %w", err)
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		cache = filepath.Join(cache, "nodeid-pgtest")
		if err := os.MkdirAll(cache, 0o755); err != nil {
			b.err = err
			return
		}
		f, err := os.CreateTemp(cache, "pgdocker-build-")
		if err != nil {
			b.err = err
			return
		}
		tmp := f.Name()
		f.Close()
		defer os.Remove(tmp)
		cmd := exec.Command("go", "build", "-o", tmp, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build pgdocker in %s: %w: %s", dir, err, strings.TrimSpace(string(out)))
			return
		}
		sum := sha256.Sum256([]byte(dir)) // one program per checkout
		path := filepath.Join(cache, fmt.Sprintf("pgdocker-%x", sum[:8]))
		if err := os.Rename(tmp, path); err != nil {
			b.err = err
			return
		}
		b.path = path
	})
	return b.path, b.err
}

// pgdockerDir returns the folder of the pgdocker module: beside this
// package's source, or where the go command finds it (a -trimpath build).
func pgdockerDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "pgdocker")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", pgdockerModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", pgdockerModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// noDockerEndpoint says why no engine can answer when none is named and
// the default socket is absent, where dockertest would look, so that a
// machine without Docker does not build pgdocker to learn it.
func noDockerEndpoint() error {
	for _, v := range []string{"DOCKER_HOST", "DOCKER_URL", "DOCKER_MACHINE_NAME"} {
		if os.Getenv(v) != "" {
			return nil
		}
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		return fmt.Errorf("no Docker engine: DOCKER_HOST is unset and %w", err)
	}
	return nil
}

// dockerServer is a container run by a pgdocker process, which it
// commands through its standard input and output.
type dockerServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  <-chan string // the answers; closed at the end of stdout
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process has exited
	id     string

	mu     sync.Mutex
	broken error // set when an answer did not come in time
	closed sync.Once
	err    error
}

// startDocker runs PostgreSQL in a container if a Docker engine answers,
// through pgdocker. The host port is fixed when the container is created,
// so that it survives Stop and Start.
func startDocker(ctx context.Context, settings []string) (*pgserver.Server, error) {
	if err := noDockerEndpoint(); err != nil {
		return nil, err
	}
	prog, err := dockerProgram()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	d, err := runPgdocker(ctx, prog, port, append(pgserver.DefaultSettings(), settings...))
	if err != nil {
		return nil, err
	}
	s := pgserver.New("docker", port, d)
	if err := s.WaitReady(ctx, d.Exited()); err != nil {
		_ = d.Close()
		return nil, err
	}
	return s, nil
}

// runPgdocker starts prog and reads its first line, the container's.
func runPgdocker(ctx context.Context, prog string, port int, settings []string) (*dockerServer, error) {
	args := []string{"-port", strconv.Itoa(port)}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	d := &dockerServer{cmd: exec.Command(prog, args...), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	d.cmd.Stderr = d.stderr
	var err error
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	// At most one answer is awaited at a time, and none is sent after one
	// came too late (see do): the buffer never fills, and the goroutine
	// ends with the process.
	lines := make(chan string, 4)
	d.lines = lines
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	var first struct {
		Port int    `json:"port"`
		ID   string `json:"id"`
	}
	select {
	case line, ok := <-lines:
		if !ok {
			<-d.exited
			return nil, d.exitError()
		}
		if err := json.Unmarshal([]byte(line), &first); err != nil || first.Port != port || first.ID == "" {
			_ = d.Close()
			return nil, fmt.Errorf("pgdocker: %q is not the container on port %d", line, port)
		}
		d.id = first.ID
		return d, nil
	case <-ctx.Done():
		// A container made after all is removed on SIGTERM (an image
		// pull is not interrupted: pgdocker gets 10 s more).
		d.stdin.Close()
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		return nil, fmt.Errorf("pgdocker: no container before the context ended: %w (%s)", ctx.Err(), strings.TrimSpace(d.stderr.String()))
	}
}

// exitError is the error of pgdocker's exit: its standard error (its
// first line says why: "no Docker engine: ...", for one).
func (d *dockerServer) exitError() error {
	msg := strings.TrimSpace(d.stderr.String())
	if strings.HasPrefix(msg, "no Docker engine") {
		return errors.New(msg) // StartOwn's message names pgtest already
	}
	return fmt.Errorf("pgdocker: %v: %s", d.cmd.ProcessState, msg)
}

var stopModes = map[StopMode]bool{Smart: true, Fast: true, Immediate: true}

// Stop sends the container the signal of mode and waits until it stops.
func (d *dockerServer) Stop(ctx context.Context, mode StopMode) error {
	if !stopModes[mode] {
		return fmt.Errorf("pgtest: unknown stop mode %q", mode)
	}
	return d.do(ctx, "stop "+string(mode))
}

// Start starts the stopped container.
func (d *dockerServer) Start(ctx context.Context) error { return d.do(ctx, "start") }

// Exited is closed when the pgdocker process exits: the container is then
// gone, or out of reach.
func (d *dockerServer) Exited() <-chan struct{} { return d.exited }

// Close ends pgdocker's input, on which it removes the container, and
// waits for it to exit.
func (d *dockerServer) Close() error {
	d.closed.Do(func() {
		d.stdin.Close()
		select {
		case <-d.exited:
		case <-time.After(2 * time.Minute):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if !d.cmd.ProcessState.Success() {
			d.err = d.exitError()
		}
	})
	return d.err
}

// do sends a command and waits for its answer. When ctx ends first, the
// answer would come out of turn: no command is sent after it.
func (d *dockerServer) do(ctx context.Context, command string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken != nil {
		return d.broken
	}
	if _, err := io.WriteString(d.stdin, command+"\n"); err != nil {
		return fmt.Errorf("pgdocker: %s: %w", command, err)
	}
	select {
	case line, ok := <-d.lines:
		switch {
		case !ok:
			<-d.exited
			d.broken = fmt.Errorf("pgdocker exited: %w", d.exitError())
			return d.broken
		case line == "ok":
			return nil
		case strings.HasPrefix(line, "error: "):
			return fmt.Errorf("pgdocker: %s: %s", command, strings.TrimPrefix(line, "error: "))
		}
		d.broken = fmt.Errorf("pgdocker: %s: answered %q", command, line)
		return d.broken
	case <-ctx.Done():
		d.broken = fmt.Errorf("pgdocker: %s: no answer before the context ended", command)
		return fmt.Errorf("%w: %w", d.broken, ctx.Err())
	}
}
