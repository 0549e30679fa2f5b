package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/postgres"
)

// NewCommand returns the command "nodeid", with the global flags (--dsn,
// --table, --timeout), the commands cmds and cobra's completion command.
func NewCommand(env *Env, cmds ...*cobra.Command) *cobra.Command {
	top := &cobra.Command{
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
3 no node ID available; 4 the table waits for a restore to be declared
(nodeid init --restored); 5 "nodeid run" stopped its command because the
lease ended; 6 a request that conflicts with what the table records (init
--max-ttl below its maximum); 130 "nodeid demo" interrupted; otherwise
"nodeid run" exits with its command's own exit code.`,
		Example: `  nodeid demo                                  # everything, on a throwaway PostgreSQL
  export DATABASE_URL=postgres://app@db.internal/app
  nodeid init && nodeid list
  nodeid who 1805834298273538048`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		// Suggestions are printed by Execute, on the error's line.
		DisableSuggestions:         true,
		SuggestionsMinimumDistance: 2,
	}
	top.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	pf := top.PersistentFlags()
	var (
		dsn, table string
		timeout    time.Duration
	)
	pf.StringVar(&dsn, flagDSN, "", "PostgreSQL connection string (default $DATABASE_URL, else the libpq environment)")
	pf.StringVar(&table, flagTable, postgres.DefaultTable, "lease table, optionally schema-qualified; its history is TABLE_history")
	pf.Var(NewDurationValue(&timeout, DefaultTimeout), flagTimeout,
		"give up the command's database work after this long and say what it waited for (0: no limit; not run, demo or bench, which keep their own timing)")
	top.AddCommand(cmds...)
	top.SetIn(env.In)
	top.SetOut(env.Out)
	top.SetErr(env.Err)
	// Created here, not by Execute, so that it can be made strict; it
	// writes to the streams set above.
	top.InitDefaultCompletionCmd()
	top.InitDefaultHelpCmd()
	for _, c := range top.Commands() {
		switch c.Name() {
		case "completion":
			strictCompletion(c)
		case "help":
			strictHelp(c)
		}
	}
	return top
}

// strictHelp makes "help" of a topic that is no command a usage error
// naming it (exit 2), instead of the nodeid command's help and exit 0,
// which a script cannot tell from success.
func strictHelp(c *cobra.Command) {
	c.Run = nil
	c.RunE = func(cmd *cobra.Command, args []string) error {
		target, rest, err := cmd.Root().Find(args)
		if target == nil || err != nil || len(rest) > 0 {
			return Usagef("unknown help topic %q: the topics are the commands", strings.Join(args, " "))
		}
		target.InitDefaultHelpFlag()
		target.InitDefaultVersionFlag()
		return target.Help()
	}
}

// The global flags, which every command inherits.
const (
	flagDSN     = "dsn"
	flagTable   = "table"
	flagTimeout = "timeout"
)

// globals returns the global flags as cmd sees them.
func globals(cmd *cobra.Command) (dsn, table string, timeout time.Duration) {
	if f := cmd.Flag(flagDSN); f != nil {
		dsn = f.Value.String()
	}
	table, timeout = postgres.DefaultTable, DefaultTimeout
	if f := cmd.Flag(flagTable); f != nil {
		table = f.Value.String()
	}
	if f := cmd.Flag(flagTimeout); f != nil {
		if v, ok := f.Value.(*DurationValue); ok {
			timeout = v.Duration()
		}
	}
	return dsn, table, timeout
}

// TableOf returns the lease table that --table names for cmd, validated.
func TableOf(cmd *cobra.Command) (string, error) {
	_, table, _ := globals(cmd)
	return table, postgres.ValidateTable(table)
}

// Execute runs top, the nodeid command, on args and returns the process
// exit code, after printing the error, if any, on one line of stderr: what
// went wrong and, where the fix is known, how to fix it.
func Execute(env *Env, top *cobra.Command, args []string) int {
	env.learnSecrets(args)
	top.SetArgs(args)
	cmd, err := top.ExecuteC()
	code := ExitCode(err)
	var ce *ExitError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		if ce.Msg != "" {
			fmt.Fprintln(env.Err, env.Describe(err))
		}
	case code == ExitUsage && suggestion(cmd, err) != "":
		fmt.Fprintf(env.Err, "%s (did you mean %s?)\n", env.Describe(err), suggestion(cmd, err))
	case code == ExitUsage:
		hint := "nodeid --help"
		if cmd != nil {
			hint = cmd.CommandPath() + " --help"
		}
		fmt.Fprintf(env.Err, "%s (see %q)\n", env.Describe(err), hint)
	default:
		fmt.Fprintln(env.Err, env.Describe(err))
	}
	return code
}

// Action adapts body, the work of a command, for cobra: it validates
// --table first, gives body the command's connection (which connects at its
// first statement), explains body's error while the connection is still
// open (the explanation may ask the server more), then closes it. Its
// errors are the command's, not the parser's: see ExitCode.
func Action(env *Env, body func(cmd *cobra.Command, args []string, c *Conn) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c := NewConn(env, cmd)
		if err := postgres.ValidateTable(c.table); err != nil {
			return Usagef("--table: %v", err)
		}
		defer c.Close()
		if err := body(cmd, args, c); err != nil {
			return &commandError{&explainedError{msg: c.Explain(err), err: err}}
		}
		return nil
	}
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
			return Usagef("%q needs a shell: %s", cmd.CommandPath(), known)
		}
		return Usagef("unknown shell %q for %q: the shell must be %s", args[0], cmd.CommandPath(), known)
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

// ExactArgs is cobra.ExactArgs with a message that says what is expected.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return Usagef("%s takes %s; got %d arguments", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// MinArgs is cobra.MinimumNArgs with a message that says what is expected.
func MinArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return Usagef("%s takes %s", cmd.CommandPath(), what)
		}
		return nil
	}
}

// Validator is the options of a command, which say whether they are valid.
type Validator interface{ Validate() error }

// Run validates o, a command's options, and then runs runF, if not nil (a
// test's stand-in for the command's work), or run, its work.
func Run[O Validator](ctx context.Context, o O, runF, run func(context.Context, O) error) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if runF != nil {
		return runF(ctx, o)
	}
	return run(ctx, o)
}
