package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/internal/pgserver"
)

// benchSettings are the settings of the throwaway server of "nodeid bench":
// room for the herd's connections, and pg_stat_statements to count
// statements on the server.
var benchSettings = []string{"max_connections=700", "shared_preload_libraries=pg_stat_statements"}

// benchFlagNames maps the fields of measure.Config to the flags that set them.
var benchFlagNames = map[string]string{
	"Only": "--only", "Repeat": "--repeat", "HerdClaimers": "--herd", "HerdIDs": "--herd-ids", "HerdVariants": "--herd-variants",
	"Duration": "--duration", "Concurrency": "--concurrency", "ExecModes": "--exec-modes", "Pgbench": "--pgbench",
	"ScaleIDs": "--scale-ids", "Held": "--held", "Samples": "--samples", "Ops": "--ops",
	"RenewWorkers": "--renew-workers", "RenewIDs": "--renew-ids",
}

// Options are the flags of bench: the engine's Config, and where its
// results go.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Config     measure.Config
	JSON       string // also write the results as JSON to this file
	Quiet      bool
	TableGiven bool // --table was given, which bench refuses

	line string // the command line the results record
}

// Validate refuses --table and checks the engine's configuration, naming
// the flag of a bad field.
func (o *Options) Validate() error {
	if o.TableGiven {
		return cli.Usagef("--table %s: nodeid bench works only in scratch tables of its own (nodeid_bench_*) and never on a lease table; leave --table out", o.Conn.Table())
	}
	if err := o.Config.Validate(); err != nil {
		var fe *measure.FieldError
		if errors.As(err, &fe) {
			if fe.Value == "" {
				return cli.Usagef("%s: %s", benchFlagNames[fe.Field], fe.Rule)
			}
			return cli.Usagef("%s %s: %s", benchFlagNames[fe.Field], fe.Value, fe.Rule)
		}
		return cli.Usage(err)
	}
	return nil
}

// NewCmdBench returns "nodeid bench". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdBench(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env, Config: measure.DefaultConfig()}
	cfg := &o.Config
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure claims, renewals and releases on a database, in scratch tables of its own",
		Long: `Measure what nodeid costs on a PostgreSQL server, to size it for a fleet: a
herd of processes acquiring at once (each on its own connection; contrasted
with the claim without SKIP LOCKED and with an advisory lock), the library's
rate against pgbench running the same statements, the claim's latency as the
node range fills up, the statements and round trips of each operation
(counted on the server with pg_stat_statements when the database has it),
and the renewals per second the server sustains.

It works only in scratch tables it creates (nodeid_bench_<random>_*) and drops
at the end, also on Ctrl-C; it never touches the lease table of --table.
Without --dsn or DATABASE_URL it starts a throwaway PostgreSQL (from the local
server binaries) with max_connections=700 and pg_stat_statements. The herd
needs one connection per claimer: lower --herd on a server with fewer free.

Every figure is a ratio or a distribution measured side by side in the same
run; --repeat repeats each, interleaved, and prints the median and the range.
The text report goes to stdout, progress to stderr; --json writes every
measurement for scripts/bench.sh, which renders docs/BENCHMARKS.md.`,
		Example: `  nodeid bench                                   # everything, on a throwaway PostgreSQL (about 12 minutes)
  nodeid bench --only herd,scale --repeat 3
  DATABASE_URL=postgres://me@db.internal/scratch nodeid bench --herd 64 --only herd,renewal`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn, o.TableGiven, o.line = c, cmd.Flags().Changed("table"), benchCommandLine(cmd)
			return cli.Run(cmd.Context(), o, runF, benchRun)
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Only, "only", nil, "scenarios to run, of "+strings.Join(report.Scenarios, ",")+" (default all)")
	f.IntVar(&cfg.Repeat, "repeat", cfg.Repeat, "repetitions of every measurement, interleaved")
	f.IntVar(&cfg.HerdClaimers, "herd", cfg.HerdClaimers, "concurrent Acquires of the herd, each on its own connection")
	f.IntVar(&cfg.HerdIDs, "herd-ids", cfg.HerdIDs, "node IDs of the herd's range")
	f.StringSliceVar(&cfg.HerdVariants, "herd-variants", nil, "herd variants to run, of "+strings.Join(report.HerdVariants, ",")+" (default all)")
	f.IntSliceVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "concurrencies of the library-vs-pgbench runs")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each throughput run (pgbench runs whole seconds, at least 1s)")
	f.StringSliceVar(&cfg.ExecModes, "exec-modes", cfg.ExecModes, "pgx exec modes to measure the library in: cache_statement (pgbench -M prepared), exec (-M extended, as through PgBouncer); the first is used by the other scenarios")
	f.StringVar(&cfg.Pgbench, "pgbench", cfg.Pgbench, "the pgbench program")
	f.IntSliceVar(&cfg.ScaleIDs, "scale-ids", cfg.ScaleIDs, "node-range sizes of the scale runs")
	f.Float64SliceVar(&cfg.Held, "held", cfg.Held, "fractions of node IDs held by live leases in the scale runs")
	f.IntVar(&cfg.Samples, "samples", cfg.Samples, "Acquires timed at each scale point")
	f.IntVar(&cfg.Ops, "ops", cfg.Ops, "Acquires, Releases and renewals whose statements are counted")
	f.IntSliceVar(&cfg.RenewWorkers, "renew-workers", cfg.RenewWorkers, "goroutines (each with a connection) renewing in the renewal-load runs")
	f.IntVar(&cfg.RenewIDs, "renew-ids", cfg.RenewIDs, "live leases renewed in turn in the renewal-load runs")
	f.StringVar(&o.JSON, "json", "", "also write every measurement as JSON to this file")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print no progress on stderr")
	return cmd
}

// benchRun runs the benchmarks.
func benchRun(ctx context.Context, o *Options) error {
	env, cfg := o.Env, o.Config
	if !o.Quiet {
		cfg.Progress = env.Err
	}
	ictx, stop := env.Interrupted(ctx)
	defer stop()
	target, cleanup, err := benchTarget(ictx, env, o.Conn)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := measure.Run(ictx, target, cfg)
	if res != nil {
		res.Command = o.line
		if o.JSON != "" {
			if werr := writeBenchJSON(o.JSON, res); werr != nil && err == nil {
				err = werr
			}
		}
		if werr := report.WriteText(env.Out, res); werr != nil && err == nil {
			err = werr
		}
	}
	if ictx.Err() != nil && ctx.Err() == nil {
		return &cli.ExitError{Code: 130, Msg: "bench interrupted; its scratch tables were dropped"}
	}
	return err
}

// benchTarget returns the database of --dsn or DATABASE_URL, or else a
// fresh database on a throwaway server, and what removes it.
func benchTarget(ctx context.Context, env *cli.Env, c *cli.Conn) (measure.Target, func(), error) {
	if dsn, _ := c.DSNSource(); dsn != "" {
		cfg, err := c.Config()
		if err != nil {
			return measure.Target{}, nil, err
		}
		// Where goes to stdout and the JSON, which are not masked.
		return measure.Target{Conn: cfg, Where: env.Redact.String(c.Where() + " (from " + c.Source() + ")")}, func() {}, nil
	}
	fmt.Fprintln(env.Err, "nodeid bench: starting a throwaway PostgreSQL (no --dsn or DATABASE_URL given)")
	srv, err := pgserver.StartLocal(ctx, benchSettings...)
	if err != nil {
		return measure.Target{}, nil, fmt.Errorf("cannot start a throwaway PostgreSQL: %w; or give a database with --dsn or DATABASE_URL", err)
	}
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		_ = srv.Close()
		return measure.Target{}, nil, err
	}
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.DropDatabase(ctx, db)
		_ = srv.Close()
	}
	cfg, err := pgx.ParseConfig(srv.DSN(db))
	if err != nil {
		cleanup()
		return measure.Target{}, nil, err
	}
	env.Redact.Add(cfg.Password, true)
	where := fmt.Sprintf("throwaway PostgreSQL (%s) at %s, database %s", srv.Kind(), srv.Addr(), db)
	return measure.Target{Conn: cfg, Where: where, Throwaway: true}, cleanup, nil
}

// benchCommandLine reconstructs the command line from the flags set, bar
// the connection string and the flags that change no figure.
func benchCommandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "dsn", "json", "quiet":
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			vals := sv.GetSlice()
			for i, x := range vals {
				if n, err := strconv.ParseFloat(x, 64); err == nil {
					vals[i] = strconv.FormatFloat(n, 'g', -1, 64)
				}
			}
			v = strings.Join(vals, ",")
		}
		parts = append(parts, "--"+f.Name+"="+v)
	})
	return strings.Join(parts, " ")
}

func writeBenchJSON(path string, res *report.Results) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--json %s: %w", path, err)
	}
	if err := cli.WriteJSON(f, res); err != nil {
		f.Close()
		return fmt.Errorf("--json %s: %w", path, err)
	}
	return f.Close()
}
