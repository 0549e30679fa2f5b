package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/redact"
)

// Env is what every command shares: where it reads and writes, the
// process's environment, the local clock, and how to start this program
// again. main makes one per run; tests make theirs with other streams,
// environment and clock. It holds no state of a command's run: that is the
// command's options and its Conn.
type Env struct {
	In     io.Reader
	Out    io.Writer // stdout
	Err    io.Writer // stderr, with every password masked
	RawErr io.Writer // stderr as is, for child processes, which own their output

	Getenv func(string) string
	Now    func() time.Time // the local clock, for headers and run's deadlines
	Loc    *time.Location   // the zone of "local" times in decode
	// Self returns a command that runs this program with args: the demo's
	// workers, run's warden.
	Self func(ctx context.Context, args ...string) (*exec.Cmd, error)
	// Interrupted returns a context cancelled by SIGINT or SIGTERM, for
	// commands that stop when interrupted (watch, demo, run's wait).
	Interrupted func(ctx context.Context) (context.Context, context.CancelFunc)

	// Redact masks the passwords the program has come across in what Err
	// and error messages print.
	Redact *redact.Redactor
}

// NewEnv returns the environment of the process with the given streams.
func NewEnv(stdin io.Reader, stdout, stderr io.Writer) *Env {
	r := &redact.Redactor{}
	return &Env{
		In:          stdin,
		Out:         stdout,
		Err:         redact.NewWriter(r, stderr),
		RawErr:      stderr,
		Getenv:      os.Getenv,
		Now:         time.Now,
		Loc:         time.Local,
		Self:        SelfCommand,
		Interrupted: InterruptContext,
		Redact:      r,
	}
}

// InterruptContext returns a context cancelled on SIGINT or SIGTERM. Until
// its cancel function is called, those signals no longer end the process.
func InterruptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// SelfCommand returns a command running this program's executable with
// args.
func SelfCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, exe, args...), nil
}

// learnSecrets learns, before anything is parsed, what of the connection
// strings of --dsn (however it is written) and DATABASE_URL may show a
// password outside the places a connection string keeps it (see
// redact.Redactor.AddDSN). PGPASSWORD and PGSSLPASSWORD need nothing: the command
// never prints them, and the connection strings it prints are rebuilt
// without passwords.
func (e *Env) learnSecrets(args []string) {
	for i, arg := range args {
		if arg == "--" {
			break
		}
		if v, ok := strings.CutPrefix(arg, "--dsn="); ok {
			e.Redact.AddDSN(v)
		} else if arg == "--dsn" && i+1 < len(args) {
			e.Redact.AddDSN(args[i+1])
		}
	}
	e.Redact.AddDSN(e.Getenv(EnvDatabaseURL))
}
