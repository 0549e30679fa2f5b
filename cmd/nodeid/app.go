package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// app is one run of the command: its streams, its environment and the
// settings of the global flags. Tests build it with other streams, clock and
// environment.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer // stderr masks passwords
	rawStderr      io.Writer // for child processes, which own their output

	getenv func(string) string
	now    func() time.Time // the local clock, for headers and run's deadlines
	loc    *time.Location   // the zone of "local" times in decode
	// self returns a command that runs this program with args: the demo's
	// workers are processes of their own.
	self func(ctx context.Context, args ...string) (*exec.Cmd, error)
	// interrupted returns a context cancelled by SIGINT or SIGTERM, for
	// commands that stop when interrupted (watch, demo, run's wait).
	interrupted func(ctx context.Context) (context.Context, context.CancelFunc)

	redact redactor

	// Global flags.
	dsn     string
	table   string
	timeout time.Duration

	cmdName    string // the running command's name
	conn       *connection
	db         *sql.DB
	privileges string // what the running command needs, for error messages

	// appName is the application_name of the command's connections, by
	// which a timed-out command finds its statements on the server; "" if
	// the connection settings name one.
	appName   string
	connected atomic.Bool // a connection to the server was established
	dialed    dialLog     // where TCP connections were accepted
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	a := &app{
		stdin:       stdin,
		stdout:      stdout,
		rawStderr:   stderr,
		getenv:      os.Getenv,
		now:         time.Now,
		loc:         time.Local,
		self:        selfCommand,
		interrupted: interruptContext,
	}
	a.stderr = redactWriter{r: &a.redact, w: stderr}
	return a
}

// main runs args and returns the exit code.
func (a *app) main(args []string) int {
	a.collectSecrets(args)
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	defer func() {
		if a.db != nil { // after the error is described, which may ask the server more
			a.db.Close()
		}
	}()
	code := exitCode(err)
	var ce *exitCodeError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		if ce.msg != "" {
			fmt.Fprintln(a.stderr, a.describe(err))
		}
	case code == exitUsage && suggestion(cmd, err) != "":
		fmt.Fprintf(a.stderr, "%s (did you mean %s?)\n", a.describe(err), suggestion(cmd, err))
	case code == exitUsage:
		hint := "nodeid --help"
		if cmd != nil {
			hint = cmd.CommandPath() + " --help"
		}
		fmt.Fprintf(a.stderr, "%s (see %q)\n", a.describe(err), hint)
	default:
		fmt.Fprintln(a.stderr, a.describe(err))
	}
	return code
}

// collectSecrets learns the passwords the command may come across before
// anything is parsed, so that no message can show them: those of --dsn
// (however it is written), DATABASE_URL, PGPASSWORD and PGSSLPASSWORD.
func (a *app) collectSecrets(args []string) {
	for i, arg := range args {
		if arg == "--" {
			break
		}
		if v, ok := strings.CutPrefix(arg, "--dsn="); ok {
			a.redact.add(v, false)
		} else if arg == "--dsn" && i+1 < len(args) {
			a.redact.add(args[i+1], false)
		}
	}
	a.redact.add(a.getenv(EnvDatabaseURL), false)
	a.redact.add(a.getenv("PGPASSWORD"), true)
	a.redact.add(a.getenv("PGSSLPASSWORD"), true)
}

// rootCommand builds the command tree.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "nodeid",
		Short: "Inspect and repair the Snowflake node-ID lease table; decode and trace IDs; run programs under a lease",
		Long: `nodeid works on the PostgreSQL table from which github.com/nodeid/nodeid
leases Snowflake node IDs: it creates it, lists and watches the leases, evicts
a stuck holder, decodes IDs and finds the lease that minted one, and runs a
program in any language under a lease of its own.

Connection: --dsn, else $DATABASE_URL, else the libpq environment (PGHOST,
PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ~/.pgpass). Statements are sent
without named prepared statements, so the command works through PgBouncer in
transaction pooling mode. No password is ever printed. A command gives up
its database work after --timeout (10s) and says what it waited for, a lock
held by another transaction for instance; run, demo and bench keep their own
timing.

Exit codes: 0 success; 1 failure; 2 bad usage (flags, arguments, values);
3 no node ID available; "nodeid run": the command's own exit code.`,
		Example: `  nodeid demo                                  # everything, on a throwaway PostgreSQL
  export DATABASE_URL=postgres://app@db.internal/app
  nodeid init && nodeid list
  nodeid who 1805834298273538048`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		// Suggestions are printed by main, on the error's line.
		DisableSuggestions:         true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.dsn, "dsn", "", "PostgreSQL connection string (default $DATABASE_URL, else the libpq environment)")
	pf.StringVar(&a.table, "table", postgres.DefaultTable, "lease table, optionally schema-qualified; its history is TABLE_history")
	pf.Var(newDurationValue(&a.timeout, defaultTimeout), "timeout",
		"give up the command's database work after this long and say what it waited for (0: no limit; not run, demo or bench, which keep their own timing)")
	root.AddCommand(
		a.schemaCommand(),
		a.initCommand(),
		a.listCommand(),
		a.showCommand(),
		a.watchCommand(),
		a.releaseCommand(),
		a.decodeCommand(),
		a.whoCommand(),
		a.pruneCommand(),
		a.runCommand(),
		a.serveCommand(),
		a.runWardenCommand(),
		a.demoCommand(),
		a.benchCommand(),
		a.demoWorkerCommand(),
		a.versionCommand(),
	)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	// Created here, not by Execute, so that it can be made strict; it
	// writes to the streams set above.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			strictCompletion(c)
		}
	}
	return root
}

// strictCompletion makes "completion" without a shell, or with a shell it
// does not know, a usage error that names the shells, instead of its help.
func strictCompletion(c *cobra.Command) {
	var shells []string
	for _, sub := range c.Commands() {
		shells = append(shells, sub.Name())
	}
	known := strings.Join(shells[:len(shells)-1], ", ") + " or " + shells[len(shells)-1]
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%q needs a shell: %s", cmd.CommandPath(), known)
		}
		return usagef("unknown shell %q for %q: the shell must be %s", args[0], cmd.CommandPath(), known)
	}
}

// unknownCommand matches cobra's error for an unknown command.
var unknownCommand = regexp.MustCompile(`^unknown command ("(?:[^"\\]|\\.)*") for "`)

// suggestion returns, for cobra's error about an unknown command, the
// commands of cmd whose names are close to the one typed, quoted, as
// "a" or "a" or "b"; else "".
func suggestion(cmd *cobra.Command, err error) string {
	m := unknownCommand.FindStringSubmatch(err.Error())
	if cmd == nil || m == nil {
		return ""
	}
	typed, uerr := strconv.Unquote(m[1])
	if uerr != nil {
		return ""
	}
	var quoted []string
	for _, s := range cmd.SuggestionsFor(typed) {
		quoted = append(quoted, strconv.Quote(s))
	}
	return strings.Join(quoted, " or ")
}

// action adapts a command's body for cobra: its errors are the command's,
// not the parser's, and the table name is validated first.
func (a *app) action(body func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.cmdName = cmd.Name()
		if err := postgres.ValidateTable(a.table); err != nil {
			return usagef("--table: %v", err)
		}
		if err := body(cmd, args); err != nil {
			return &commandError{err}
		}
		return nil
	}
}

// store opens the database and returns a Store on the table for the node
// range r.
func (a *app) store(r nodeRange) (*store.Store, error) {
	db, err := a.openDB()
	if err != nil {
		return nil, err
	}
	st, err := store.New(db, store.Config{Table: a.table, MinNode: r.lo, MaxNode: r.hi})
	return st, usage(err)
}

// nodeRow returns the store of a single node ID, its row and the server's
// time; missing says what to do when the table has no such row.
func (a *app) nodeRow(ctx context.Context, node int64, missing string) (*store.Store, store.Row, time.Time, error) {
	st, err := a.store(nodeRange{node, node})
	if err != nil {
		return nil, store.Row{}, time.Time{}, err
	}
	rows, now, err := st.List(ctx)
	if err != nil {
		return nil, store.Row{}, time.Time{}, err
	}
	if len(rows) == 0 {
		return nil, store.Row{}, time.Time{}, fmt.Errorf("node ID %d is not in table %s%s", node, a.table, missing)
	}
	return st, rows[0], now, nil
}

// allNodes is every node ID a table may hold: read-only commands see all.
var allNodes = nodeRange{0, postgres.MaxNode}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s; got %d arguments", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with a message that says what is expected.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s takes %s", cmd.CommandPath(), what)
		}
		return nil
	}
}
