//go:build unix

package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// local runs the postgres binary as a child process in a process group of
// its own (a Ctrl-C in the terminal is for the parent to handle). On Linux
// it dies with the process that started it (see setDeathSignal) instead
// of outliving a killed parent.
type local struct {
	bin      string // directory holding initdb and postgres
	root     string // temporary directory: data, socket, log
	port     int
	settings []string
	cred     *syscall.Credential

	cmd    *exec.Cmd
	exited chan struct{}
}

// binaryDirs are the directories, glob patterns, searched for initdb and
// postgres after PATH: Debian's and Ubuntu's packages, Homebrew's
// versioned formulas (keg-only, so not on PATH), Postgres.app.
var binaryDirs = []string{
	"/usr/lib/postgresql/*/bin",
	"/opt/homebrew/opt/postgresql@*/bin",
	"/usr/local/opt/postgresql@*/bin",
	"/Applications/Postgres.app/Contents/Versions/*/bin",
}

// FindBinaries returns a directory holding initdb and postgres: from PATH
// (following symlinks), else the newest of binaryDirs.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir := filepath.Dir(real)
			if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
				return dir, nil
			}
		}
	}
	var dirs []string
	for _, pattern := range binaryDirs {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	sort.SliceStable(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres on PATH or under " + strings.Join(binaryDirs, ", "))
}

// version is the major version in a directory of binaryDirs: 15 of
// /usr/lib/postgresql/15/bin and of .../postgresql@15/bin, 0 if none.
func version(binDir string) int {
	name := filepath.Base(filepath.Dir(binDir))
	if _, after, ok := strings.Cut(name, "@"); ok {
		name = after
	}
	v, _ := strconv.Atoi(name)
	return v
}

// RunAs returns the credential of the postgres user when the caller is
// the root user, since PostgreSQL refuses to run as the root user, and nil
// otherwise.
func RunAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as the root user needs a postgres user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// StartLocal starts a server from the local PostgreSQL programs on a free
// port of 127.0.0.1, in a new temporary directory, with settings
// ("name=value") on top of DefaultSettings, and waits until it accepts
// connections. Its data directory is a copy of a template that initdb
// makes once per PostgreSQL installation and user, kept in the user's
// cache directory (nodeid-pgserver), with a system identifier of its own.
func StartLocal(ctx context.Context, settings ...string) (*Server, error) {
	return startLocalWith(ctx, settings, (*local).init)
}

// startStandby starts a server whose data directory pg_basebackup clones,
// as a standby, from the server at addr.
func startStandby(ctx context.Context, settings []string, addr, slot string) (*Server, error) {
	return startLocalWith(ctx, settings, func(l *local, ctx context.Context) error { return l.basebackup(ctx, addr, slot) })
}

// startLocalWith starts a local server on a data directory that mkdata
// makes in a new temporary directory owned by the user the server runs as.
func startLocalWith(ctx context.Context, settings []string, mkdata func(*local, context.Context) error) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := RunAs()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "nodeid-pg-")
	if err != nil {
		return nil, err
	}
	l := &local{bin: bin, root: root, settings: append(DefaultSettings(), settings...), cred: cred}
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
	s := New("local", l.port, l)
	if err := l.Start(ctx); err != nil {
		l.Close()
		return nil, err
	}
	if err := s.WaitReady(ctx, l.exited); err != nil {
		l.Close()
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
		Setpgid:    true, // a Ctrl-C in the terminal is for the parent to handle
	}
	setDeathSignal(cmd.SysProcAttr)
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

// basebackup makes the data directory as a standby of the server at addr,
// streaming from a new replication slot of that name.
func (l *local) basebackup(ctx context.Context, addr, slot string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	args := []string{"-D", l.data(), "-h", host, "-p", port, "-U", "postgres", "--write-recovery-conf", "--wal-method=stream",
		"--checkpoint=fast", "--no-sync"}
	if slot != "" {
		args = append(args, "--create-slot", "--slot="+slot)
	}
	out, err := l.command(ctx, "pg_basebackup", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_basebackup: %w\n%s", err, out)
	}
	return nil
}

// Start starts the postgres program; Server.Start waits until it accepts
// connections.
func (l *local) Start(ctx context.Context) error {
	args := []string{"-D", l.data(), "-p", strconv.Itoa(l.port), "-k", l.root}
	for _, s := range l.settings {
		args = append(args, "-c", s)
	}
	// The server outlives ctx: it is stopped by Stop or Close.
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

// Stop signals the postmaster to shut down in mode and waits until it has
// exited (killing it after a minute, or when ctx ends).
func (l *local) Stop(ctx context.Context, mode StopMode) error {
	sig, ok := stopSignal[mode]
	if !ok {
		return fmt.Errorf("pgserver: unknown stop mode %q", mode)
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

// Exited is closed when the started postmaster exits.
func (l *local) Exited() <-chan struct{} { return l.exited }

// Close stops the server at once and removes its temporary directory.
func (l *local) Close() error {
	err := l.Stop(context.Background(), Immediate)
	if rmErr := os.RemoveAll(l.root); err == nil {
		err = rmErr
	}
	return err
}

// PostmasterPID returns the process ID of the postmaster of a running
// server that StartLocal or StartPair started.
func (s *Server) PostmasterPID() (int, error) {
	if l, ok := s.ctl.(*local); ok && l.cmd != nil && l.cmd.Process != nil {
		return l.cmd.Process.Pid, nil
	}
	return 0, errors.New("pgserver: not a running local server")
}

func (l *local) logTail() string {
	b, _ := os.ReadFile(l.logf())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
