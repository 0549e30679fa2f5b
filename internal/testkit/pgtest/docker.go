package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/pgserver"
)

// dockerImage is the image a Docker-backed server runs.
const dockerImage = "postgres:15"

// dockerServer is a container run with the docker command: the harness
// needs no Docker client library, only the command and an engine that
// answers it.
type dockerServer struct {
	id string
}

// docker runs the docker command and returns its standard output, or an
// error with its standard error.
func docker(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// startDocker runs PostgreSQL in a container if the docker command is
// installed and an engine answers it. The host port is fixed when the
// container is created, so that it survives Stop and Start.
func startDocker(ctx context.Context, settings []string) (*pgserver.Server, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, errors.New("no docker command")
	}
	if _, err := docker(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("no Docker engine: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"run", "--detach",
		"--label", "nodeid-pgtest=1", // docker rm -f $(docker ps -aq -f label=nodeid-pgtest) removes what a crashed run left
		"--env", "POSTGRES_HOST_AUTH_METHOD=trust",
		"--publish", "127.0.0.1:" + strconv.Itoa(port) + ":5432",
		dockerImage, "postgres"}
	for _, s := range append(pgserver.DefaultSettings(), settings...) {
		if s == "listen_addresses=127.0.0.1" {
			s = "listen_addresses=*" // inside the container
		}
		args = append(args, "-c", s)
	}
	id, err := docker(ctx, args...)
	if err != nil {
		return nil, err
	}
	d := &dockerServer{id: id}
	s := pgserver.New("docker", port, d)
	if err := s.WaitReady(ctx, nil); err != nil {
		_ = d.Close()
		return nil, err
	}
	return s, nil
}

var dockerSignal = map[StopMode]string{
	Smart:     "SIGTERM",
	Fast:      "SIGINT",
	Immediate: "SIGQUIT",
}

// Stop sends the container the signal of mode and waits until it stops.
func (d *dockerServer) Stop(ctx context.Context, mode StopMode) error {
	sig, ok := dockerSignal[mode]
	if !ok {
		return fmt.Errorf("pgtest: unknown stop mode %q", mode)
	}
	if _, err := docker(ctx, "kill", "--signal", sig, d.id); err != nil && d.running(ctx) {
		return err
	}
	return testkit.Wait(ctx, func() error {
		if d.running(ctx) {
			return errors.New("the container still runs")
		}
		return nil
	})
}

// running reports whether the container runs (true when that is not
// known).
func (d *dockerServer) running(ctx context.Context) bool {
	out, err := docker(ctx, "inspect", "--format", "{{.State.Running}}", d.id)
	return err != nil || out != "false"
}

// Start starts the stopped container.
func (d *dockerServer) Start(ctx context.Context) error {
	_, err := docker(ctx, "start", d.id)
	return err
}

// Exited is nil: the container's exit is not watched.
func (d *dockerServer) Exited() <-chan struct{} { return nil }

// Close removes the container.
func (d *dockerServer) Close() error {
	_, err := docker(context.Background(), "rm", "--force", "--volumes", d.id)
	return err
}
