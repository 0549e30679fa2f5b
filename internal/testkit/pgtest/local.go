package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// defaultSettings make a throwaway server fast and roomy. fsync=off loses
// nothing when only the server process dies; synchronous_commit stays on,
// since an immediate shutdown would otherwise lose committed claims.
var defaultSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=off",
	"full_page_writes=off",
	"max_connections=400",
}

// local runs the postgres binary as a child process, so that it dies with
// the process that started it (Pdeathsig) instead of outliving a killed
// test run.
type local struct {
	bin      string // directory holding initdb and postgres
	root     string // temporary directory: data, socket, log
	port     int
	settings []string
	cred     *syscall.Credential

	cmd    *exec.Cmd
	exited chan struct{}
}

// findBinaries returns a directory holding initdb and postgres: from PATH
// (following symlinks), else the newest /usr/lib/postgresql/*/bin.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir := filepath.Dir(real)
			if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres on PATH or under /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential returns the postgres user's credential when running as root:
// PostgreSQL refuses to run as root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func startLocal(ctx context.Context, settings []string) (*Server, error) {
	return startLocalWith(ctx, settings, (*local).init)
}

// startLocalWith starts a local server on a data directory that mkdata
// makes in a new temporary directory owned by the user the server runs as.
func startLocalWith(ctx context.Context, settings []string, mkdata func(*local, context.Context) error) (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "nodeid-pg-")
	if err != nil {
		return nil, err
	}
	l := &local{bin: bin, root: root, settings: append(append([]string{}, defaultSettings...), settings...), cred: cred}
	if err := l.chown(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if err := mkdata(l, ctx); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if l.port, err = FreePort(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	s := newServer("local", l.port, l)
	if err := l.start(ctx); err != nil {
		l.close()
		return nil, err
	}
	if err := s.waitReady(ctx, l.exited); err != nil {
		l.close()
		return nil, fmt.Errorf("%w; server log:\n%s", err, l.logTail())
	}
	return s, nil
}

func (l *local) data() string { return filepath.Join(l.root, "data") }
func (l *local) logf() string { return filepath.Join(l.root, "postgres.log") }

func (l *local) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(l.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: l.cred,
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true, // a Ctrl-C in the terminal is for the parent to handle
	}
	cmd.Dir = l.root
	return cmd
}

// chown gives the temporary directory to the user the server runs as.
func (l *local) chown() error {
	if l.cred == nil {
		return nil
	}
	return os.Chown(l.root, int(l.cred.Uid), int(l.cred.Gid))
}

// init makes a new data directory with initdb.
func (l *local) init(ctx context.Context) error {
	out, err := l.command(ctx, "initdb", "-D", l.data(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

func (l *local) start(ctx context.Context) error {
	args := []string{"-D", l.data(), "-p", strconv.Itoa(l.port), "-k", l.root}
	for _, s := range l.settings {
		args = append(args, "-c", s)
	}
	// The server outlives ctx: it is stopped by stop or close.
	cmd := l.command(context.WithoutCancel(ctx), "postgres", args...)
	logf, err := os.OpenFile(l.logf(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	logf.Close()
	l.cmd, l.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(l.exited)
	return nil
}

var stopSignal = map[StopMode]syscall.Signal{
	Smart:     syscall.SIGTERM,
	Fast:      syscall.SIGINT,
	Immediate: syscall.SIGQUIT,
}

func (l *local) stop(ctx context.Context, mode StopMode) error {
	sig, ok := stopSignal[mode]
	if !ok {
		return fmt.Errorf("pgtest: unknown stop mode %q", mode)
	}
	if l.cmd == nil {
		return nil
	}
	select {
	case <-l.exited:
		l.cmd = nil
		return nil
	default:
	}
	_ = l.cmd.Process.Signal(sig)
	select {
	case <-l.exited:
	case <-time.After(time.Minute):
		_ = l.cmd.Process.Kill()
		<-l.exited
	case <-ctx.Done():
		_ = l.cmd.Process.Kill()
		<-l.exited
	}
	l.cmd = nil
	return nil
}

func (l *local) exitedCh() <-chan struct{} { return l.exited }

func (l *local) close() error {
	err := l.stop(context.Background(), Immediate)
	if rmErr := os.RemoveAll(l.root); err == nil {
		err = rmErr
	}
	return err
}

func (l *local) logTail() string {
	b, _ := os.ReadFile(l.logf())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
