package demo

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// worker is a demo worker process, as the demo sees it through its reports.
type worker struct {
	n     int
	owner string
	cmd   *exec.Cmd

	mu       sync.Mutex
	node     int64
	epoch    int64
	acquired bool
	minted   []bw.ID
	lost     string
	released bool

	exited chan struct{} // closed once the process has exited and been waited for
	killed time.Time     // when kill sent SIGKILL
}

// startWorker starts demo worker n with the given arguments; DATABASE_URL
// carries the connection string, so that no password shows in the process
// list.
func startWorker(env *cli.Env, n int, dsn string, stderr io.Writer, args ...string) (*worker, error) {
	w := &worker{n: n, owner: "demo-worker-" + strconv.Itoa(n), exited: make(chan struct{})}
	c, err := env.Self(context.Background(), append([]string{"demo-worker", "--owner", w.owner}, args...)...)
	if err != nil {
		return nil, err
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.Env = append(c.Env, cli.EnvDatabaseURL+"="+dsn)
	c.Stderr = stderr
	c.SysProcAttr = workerProcAttr()
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	w.cmd = c
	go func() {
		w.read(out)
		_ = c.Wait()
		close(w.exited)
	}()
	return w, nil
}

// read records the worker's reports until its stdout closes.
func (w *worker) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		ev, rest, _ := strings.Cut(sc.Text(), " ")
		w.mu.Lock()
		switch ev {
		case evAcquired:
			f := strings.Fields(rest)
			if len(f) == 2 {
				w.node, _ = strconv.ParseInt(f[0], 10, 64)
				w.epoch, _ = strconv.ParseInt(f[1], 10, 64)
				w.acquired = true
			}
		case evMinted:
			if id, err := strconv.ParseInt(rest, 10, 64); err == nil {
				w.minted = append(w.minted, bw.ID(id))
			}
		case evLost:
			w.lost = rest
		case evReleased:
			w.released = true
		}
		w.mu.Unlock()
	}
}

// state returns what the worker reported so far.
func (w *worker) state() (acquired bool, node, epoch int64, minted []bw.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acquired, w.node, w.epoch, append([]bw.ID(nil), w.minted...)
}

func (w *worker) pid() int { return w.cmd.Process.Pid }

func (w *worker) done() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (the worker releases its node ID and exits) and waits
// up to patience, then kills it.
func (w *worker) stop(patience time.Duration) {
	if w.done() {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(patience):
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
}

// kill sends SIGKILL and waits for the worker to exit.
func (w *worker) kill() {
	w.killed = time.Now()
	_ = w.cmd.Process.Kill()
	<-w.exited
}

// lockedWriter serialises the writes of the workers' stderr copies.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
