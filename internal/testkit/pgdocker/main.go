// Command pgdocker runs the test harness's PostgreSQL in Docker, through
// github.com/ory/dockertest/v3. It is a module of its own, which no other
// module requires, so that neither the library's users nor the command
// fetch a Docker client: internal/testkit/pgtest builds it and runs it.
//
//	pgdocker [-image postgres:15] [-port N] [-c name=value]...
//
// It starts the image with POSTGRES_HOST_AUTH_METHOD=trust, the label
// nodeid-pgtest=1 (docker rm -f $(docker ps -aq -f label=nodeid-pgtest)
// removes what a killed run left) and the -c settings (listen_addresses is
// always *, inside the container), published on 127.0.0.1:N (a free port
// if N is 0). It does not wait for the server to accept connections. It
// prints one line of JSON on stdout, {"port":N,"id":"CONTAINER"}, then
// reads commands from stdin, one a line, and answers each with one line,
// "ok" or "error: WHY":
//
//	stop smart|fast|immediate   kill with SIGTERM|SIGINT|SIGQUIT, wait until stopped
//	start                       start the stopped container
//
// At the end of stdin, or on SIGINT, SIGTERM or SIGHUP, it removes the
// container and its volumes, and exits. Without a Docker engine it exits
// with status 1 at once, "no Docker engine: WHY" on stderr; other failures
// to start exit 1 with the error on stderr, and no JSON line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// label marks the containers of the harness.
const label = "nodeid-pgtest"

// config is what the command line asks for.
type config struct {
	image    string // repository:tag
	port     int    // host port on 127.0.0.1; 0 for a free one
	settings []string
}

// settingsFlag collects repeated -c name=value.
type settingsFlag []string

func (s *settingsFlag) String() string { return strings.Join(*s, " ") }

func (s *settingsFlag) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("%q is not name=value", v)
	}
	*s = append(*s, v)
	return nil
}

// usage is the command line, for its errors.
const usage = "usage: pgdocker [-image postgres:15] [-port N] [-c name=value]..."

// parseArgs reads the command line (without the program's name).
func parseArgs(args []string) (config, error) {
	fs := flag.NewFlagSet("pgdocker", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run says what is wrong, once
	c := config{}
	var settings settingsFlag
	fs.StringVar(&c.image, "image", "postgres:15", "the image (repository:tag)")
	fs.IntVar(&c.port, "port", 0, "the host port on 127.0.0.1 (0: a free one)")
	fs.Var(&settings, "c", "a server setting name=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.port < 0 || c.port > 65535 {
		return config{}, fmt.Errorf("-port %d is not a port", c.port)
	}
	if _, tag, ok := strings.Cut(c.image, ":"); !ok || tag == "" {
		return config{}, fmt.Errorf("-image %q has no tag", c.image)
	}
	c.settings = settings
	return c, nil
}

// command is one line of stdin: stop (with a signal) or start.
type command struct {
	stop   bool
	signal dc.Signal
}

var stopSignals = map[string]dc.Signal{
	"smart":     dc.SIGTERM,
	"fast":      dc.SIGINT,
	"immediate": dc.SIGQUIT,
}

// parseCommand reads one line of stdin.
func parseCommand(line string) (command, error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 1 && f[0] == "start":
		return command{}, nil
	case len(f) == 2 && f[0] == "stop":
		sig, ok := stopSignals[f[1]]
		if !ok {
			return command{}, fmt.Errorf("unknown stop mode %q (smart, fast or immediate)", f[1])
		}
		return command{stop: true, signal: sig}, nil
	}
	return command{}, fmt.Errorf("unknown command %q (stop MODE or start)", line)
}

// container is what the commands act on.
type container interface {
	Stop(ctx context.Context, sig dc.Signal) error
	Start(ctx context.Context) error
}

// serve answers the commands of in on out until in ends.
func serve(in io.Reader, out io.Writer, c container) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, err := parseCommand(sc.Text())
		if err == nil {
			// A command is bounded: the harness's own contexts are shorter.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if cmd.stop {
				err = c.Stop(ctx, cmd.signal)
			} else {
				err = c.Start(ctx)
			}
			cancel()
		}
		answer := "ok"
		if err != nil {
			answer = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		if _, err := fmt.Fprintln(out, answer); err != nil {
			return err
		}
	}
	return sc.Err()
}

// dockerContainer is a container of the engine.
type dockerContainer struct {
	pool *dockertest.Pool
	res  *dockertest.Resource
}

func (d *dockerContainer) id() string { return d.res.Container.ID }

// Stop sends sig to the container's main process and waits until the
// container stopped. A container that is not running is stopped already.
func (d *dockerContainer) Stop(ctx context.Context, sig dc.Signal) error {
	err := d.pool.Client.KillContainer(dc.KillContainerOptions{ID: d.id(), Signal: sig, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if err != nil && !errors.As(err, &notRunning) {
		return err
	}
	_, err = d.pool.Client.WaitContainerWithContext(d.id(), ctx)
	return err
}

// Start starts the stopped container; a running one is left as it is.
func (d *dockerContainer) Start(ctx context.Context) error {
	err := d.pool.Client.StartContainerWithContext(d.id(), nil, ctx)
	var running *dc.ContainerAlreadyRunning
	if errors.As(err, &running) {
		return nil
	}
	return err
}

// runOptions are the container of c, on the host port port.
func runOptions(c config, port int) *dockertest.RunOptions {
	repo, tag, _ := strings.Cut(c.image, ":")
	cmd := []string{"postgres"}
	for _, s := range c.settings {
		if strings.HasPrefix(s, "listen_addresses=") {
			continue // the server listens inside the container; the host publishes 127.0.0.1 only
		}
		cmd = append(cmd, "-c", s)
	}
	cmd = append(cmd, "-c", "listen_addresses=*")
	return &dockertest.RunOptions{
		Repository:   repo,
		Tag:          tag,
		Env:          []string{"POSTGRES_HOST_AUTH_METHOD=trust"},
		Cmd:          cmd,
		Labels:       map[string]string{label: "1"},
		ExposedPorts: []string{"5432/tcp"},
		PortBindings: map[dc.Port][]dc.PortBinding{
			"5432/tcp": {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)}},
		},
	}
}

// hostConfig amends dockertest's: the server trusts every client, so no
// port is published but the 127.0.0.1 binding of runOptions (dockertest
// sets PublishAllPorts, which publishes an exposed port that has no
// binding on every address of the host), and the engine never restarts it.
func hostConfig(hc *dc.HostConfig) {
	hc.PublishAllPorts = false
	hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run is the program; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parseArgs(args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "pgdocker:", err)
		}
		fmt.Fprintln(stderr, usage)
		return 2
	}
	pool, err := dockertest.NewPool("") // DOCKER_HOST, or the default socket
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err = pool.Client.PingWithContext(ctx); err != nil {
			err = fmt.Errorf("%s: %w", pool.Client.Endpoint(), err)
		}
		cancel()
	}
	if err != nil {
		fmt.Fprintln(stderr, "no Docker engine:", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	port := c.port
	if port == 0 {
		if port, err = freePort(); err != nil {
			fmt.Fprintln(stderr, "pgdocker:", err)
			return 1
		}
	}
	// A signal during the start (an image pull, say) is taken after it,
	// when there is a container to remove.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// The host port is fixed when the container is created, so that it
	// survives stop and start.
	res, err := pool.RunWithOptions(runOptions(c, port), hostConfig)
	if err != nil {
		fmt.Fprintf(stderr, "pgdocker: run %s: %v\n", c.image, err)
		return 1
	}
	d := &dockerContainer{pool: pool, res: res}
	var purgeOnce sync.Once
	purgeErr := error(nil)
	purge := func() { purgeOnce.Do(func() { purgeErr = pool.Purge(res) }) }

	go func() {
		sig := <-sigs
		purge()
		fmt.Fprintf(stderr, "pgdocker: %v: container %s removed\n", sig, d.id())
		os.Exit(1)
	}()

	line, _ := json.Marshal(struct {
		Port int    `json:"port"`
		ID   string `json:"id"`
	}{port, d.id()})
	status := 0
	if _, err = fmt.Fprintf(stdout, "%s\n", line); err == nil {
		err = serve(stdin, stdout, d)
	}
	if err != nil {
		fmt.Fprintln(stderr, "pgdocker:", err)
		status = 1
	}
	purge()
	if purgeErr != nil {
		fmt.Fprintf(stderr, "pgdocker: remove container %s: %v\n", d.id(), purgeErr)
		status = 1
	}
	return status
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
