package pgtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/nodeid/nodeid/internal/pgserver"
)

// dockerImage is the image a Docker-backed server runs.
const dockerImage, dockerTag = "postgres", "15"

type dockerServer struct {
	pool *dockertest.Pool
	res  *dockertest.Resource
}

// startDocker runs PostgreSQL in a container if a Docker engine answers. The
// host port is fixed when the container is created, so that it survives
// Stop and Start.
func startDocker(ctx context.Context, settings []string) (*pgserver.Server, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, err
	}
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("no Docker engine: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := []string{"postgres"}
	for _, s := range append(pgserver.DefaultSettings(), settings...) {
		if s == "listen_addresses=127.0.0.1" {
			s = "listen_addresses=*" // inside the container
		}
		cmd = append(cmd, "-c", s)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: dockerImage,
		Tag:        dockerTag,
		Env:        []string{"POSTGRES_HOST_AUTH_METHOD=trust"},
		Cmd:        cmd,
		PortBindings: map[dc.Port][]dc.PortBinding{
			"5432/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}},
		},
	}, func(hc *dc.HostConfig) { hc.AutoRemove = false })
	if err != nil {
		return nil, fmt.Errorf("docker run %s:%s: %w", dockerImage, dockerTag, err)
	}
	_ = res.Expire(3600) // a crashed test run leaves no container behind for long
	d := &dockerServer{pool: pool, res: res}
	s := pgserver.New("docker", port, d)
	if err := s.WaitReady(ctx, nil); err != nil {
		_ = d.Close()
		return nil, err
	}
	return s, nil
}

var dockerSignal = map[StopMode]dc.Signal{
	Smart:     dc.SIGTERM,
	Fast:      dc.SIGINT,
	Immediate: dc.SIGQUIT,
}

// Stop sends the container the signal of mode and waits until it stops.
func (d *dockerServer) Stop(ctx context.Context, mode StopMode) error {
	sig, ok := dockerSignal[mode]
	if !ok {
		return fmt.Errorf("pgtest: unknown stop mode %q", mode)
	}
	id := d.res.Container.ID
	if err := d.pool.Client.KillContainer(dc.KillContainerOptions{ID: id, Signal: sig, Context: ctx}); err != nil {
		var notRunning *dc.ContainerNotRunning
		if !errors.As(err, &notRunning) {
			return err
		}
	}
	for ctx.Err() == nil {
		c, err := d.pool.Client.InspectContainerWithContext(id, ctx)
		if err != nil {
			return err
		}
		if !c.State.Running {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ctx.Err()
}

// Start starts the stopped container.
func (d *dockerServer) Start(ctx context.Context) error {
	return d.pool.Client.StartContainerWithContext(d.res.Container.ID, nil, ctx)
}

// Exited is nil: the container's exit is not watched.
func (d *dockerServer) Exited() <-chan struct{} { return nil }

// Close removes the container.
func (d *dockerServer) Close() error { return d.pool.Purge(d.res) }
