package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/floor"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/pgserver"
)

// benchSettings are the settings of the throwaway server of "nodeid bench":
// room for the herd's connections, and pg_stat_statements to count
// statements on the server, with the statements nested in the lease
// functions and their planning (the renewal load's server time).
var benchSettings = []string{"max_connections=700", "shared_preload_libraries=pg_stat_statements",
	"pg_stat_statements.track=all", "pg_stat_statements.track_planning=on"}

// poolerSize is the server connections of the throwaway PgBouncer per
// database and user (PgBouncer's default_pool_size): fewer than the
// renewal load's largest number of workers, as a pooler's are.
const poolerSize = 20

// benchFlagNames maps the fields of measure.Config to the flags that set them.
var benchFlagNames = map[string]string{
	"Only": "--only", "Repeat": "--repeat", "HerdClaimers": "--herd", "HerdIDs": "--herd-ids", "HerdVariants": "--herd-variants",
	"Duration": "--duration", "Concurrency": "--concurrency", "ExecModes": "--exec-modes", "Pgbench": "--pgbench",
	"ScaleIDs": "--scale-ids", "Held": "--held", "Samples": "--samples", "Ops": "--ops",
	"RenewWorkers": "--renew-workers", "RenewIDs": "--renew-ids",
	"Iterations": "--iterations", "LargeIDs": "--large-ids", "Drift": "--drift",
}

// scenarioFlags are the flags of the scenarios, which --floor does not run;
// floorFlags those of --floor alone.
var (
	scenarioFlags = []string{"only", "repeat", "herd", "herd-ids", "herd-variants", "concurrency", "duration", "exec-modes", "pgbench",
		"scale-ids", "held", "samples", "ops", "renew-workers", "renew-ids"}
	floorFlags = []string{"quick", "iterations", "large-ids", "drift"}
)

// Options are the flags of bench: the engine's Config, and where its
// results go.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Config     measure.Config
	JSON       string // also write the results as JSON to this file
	Quiet      bool
	TableGiven bool // --table was given, which bench refuses

	// Floor runs the claim at the floor (floor.RunFloor) instead of the
	// scenarios, with FloorConfig; Quick selects the smoke run's sizes
	// for the FloorConfig fields whose flags were not given.
	Floor       bool
	Quick       bool
	FloorConfig floor.FloorConfig

	line    string   // the command line the results record
	changed []string // the flags given
}

// Validate refuses --table and checks the engine's configuration, naming
// the flag of a bad field.
func (o *Options) Validate() error {
	if o.TableGiven {
		return cli.Usagef("--table %s: nodeid bench works only in scratch tables of its own (nodeid_bench_*) and never on a lease table; leave --table out", o.Conn.Table())
	}
	validate := o.Config.Validate
	if o.Floor {
		for _, name := range scenarioFlags {
			if slices.Contains(o.changed, name) {
				return cli.Usagef("--%s: not with --floor, which measures the claim at the floor and nothing else; leave one of them out", name)
			}
		}
		validate = o.FloorConfig.Validate
	} else {
		for _, name := range floorFlags {
			if slices.Contains(o.changed, name) {
				return cli.Usagef("--%s: only with --floor", name)
			}
		}
	}
	if err := validate(); err != nil {
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
	o := &Options{Env: env, Config: measure.DefaultConfig(), FloorConfig: floor.DefaultFloorConfig()}
	cfg, fcfg := &o.Config, &o.FloorConfig
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure claims, renewals and releases on a database, in scratch tables of its own",
		Long: `Measure what nodeid costs on a PostgreSQL server, to size it for a fleet: a
herd of processes acquiring at once (each on its own connection; contrasted
with the claim without SKIP LOCKED and with an advisory lock), the library's
rate against pgbench running the same statements, the claim's latency as the
node range fills up, the statements and round trips of each operation
(counted on the server with pg_stat_statements when the database has it),
and the renewals per second the server sustains: directly and, side by
side in the same run, through a throwaway PgBouncer in transaction mode in
pgx's exec mode (target 0.8× the direct rate; where PgBouncer's own CPU
binds first, the server's time per renewal from pg_stat_statements within
1.2× of direct, with PgBouncer's CPU per renewal shown).

With --floor it measures instead the claim at the floor, side by
side in one loop whose items take turns: the round-trip floor (SELECT 1), the
floor of a durable write (a one-row UPDATE ... RETURNING with
synchronous_commit on, on a table with the lease table's row width), and
Registry.Acquire and Lease.Release at 1,024 and --large-ids node IDs held by
live leases of other owners, in pgx's default exec mode (against targets:
claim 3×, release 2.5× the floor) and through a throwaway PgBouncer in
transaction mode in exec mode, the mode a pooler needs (against the same
UPDATE through it: claim 2.5×, release 2×; without a pgbouncer program, or
on a database of --dsn, those rows say they were skipped and the exec
mode's run directly, unbound); then the claim with statistics never
gathered after a fill against the same after ANALYZE (target 1.5×), the drift of one node ID claimed --drift times on one
connection (last twelfth over first, target 1.2×), and a new process's first
Acquire on an open pool (target 3 round trips and 2× a steady claim), with
what the claim's generic plan does with the history. Targets are printed,
never enforced. Without a database it starts two throwaway servers, one with
fsync on and one with fsync off, and measures both; --quick is the smoke run
(300 turns, 4,096 node IDs, 480 claims of drift; nothing judged).

It works only in scratch tables it creates (nodeid_bench_<random>_*) and drops
at the end, also on Ctrl-C; it never touches the lease table of --table.
Without --dsn or DATABASE_URL it starts a throwaway PostgreSQL (from the local
server binaries) with max_connections=700 and pg_stat_statements (track =
all, track_planning = on), and a PgBouncer in front of it when pgbouncer is
installed (on PATH or /usr/sbin; a pool of 20 server connections). The herd
needs one connection per claimer: lower --herd on a server with fewer free.

Every figure is a ratio or a distribution measured side by side in the same
run; --repeat repeats each, interleaved, and prints the median and the range.
The text report goes to stdout, progress to stderr; --json writes every
measurement for scripts/bench.sh, which renders docs/BENCHMARKS.md.`,
		Example: `  nodeid bench                                   # everything, on a throwaway PostgreSQL (about 12 minutes)
  nodeid bench --only herd,scale --repeat 3
  DATABASE_URL=postgres://me@db.internal/scratch nodeid bench --herd 64 --only herd,renewal
  nodeid bench --floor                           # the claim at the floor, fsync on and off (about 6 minutes)
  nodeid bench --floor --quick                   # its smoke run (under a minute)`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn, o.TableGiven, o.line = c, cmd.Flags().Changed("table"), benchCommandLine(cmd)
			cmd.Flags().Visit(func(f *pflag.Flag) { o.changed = append(o.changed, f.Name) })
			if o.Quick {
				q := floor.QuickFloorConfig()
				for name, set := range map[string]func(){
					"iterations": func() { fcfg.Iterations = q.Iterations },
					"large-ids":  func() { fcfg.LargeIDs = q.LargeIDs },
					"drift":      func() { fcfg.Drift = q.Drift },
				} {
					if !cmd.Flags().Changed(name) {
						set()
					}
				}
				fcfg.Quick = true
			}
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
	f.BoolVar(&o.Floor, "floor", false, "measure the claim at the floor instead of the scenarios")
	f.BoolVar(&o.Quick, "quick", false, "with --floor: the smoke run, --iterations 300 --large-ids 4096 --drift 480, nothing judged")
	f.IntVar(&fcfg.Iterations, "iterations", fcfg.Iterations, "with --floor: timed turns of the loop, each item once per turn")
	f.IntVar(&fcfg.LargeIDs, "large-ids", fcfg.LargeIDs, "with --floor: node IDs of the large range (the small one holds 1024)")
	f.IntVar(&fcfg.Drift, "drift", fcfg.Drift, "with --floor: claims and releases of one node ID on one connection, whose last twelfth is compared with its first")
	f.StringVar(&o.JSON, "json", "", "also write every measurement as JSON to this file")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print no progress on stderr")
	return cmd
}

// benchRun runs the benchmarks.
func benchRun(ctx context.Context, o *Options) error {
	if o.Floor {
		return floorRun(ctx, o)
	}
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
	return o.finish(ctx, ictx, res, err)
}

// floorRun measures the claim at the floor.
func floorRun(ctx context.Context, o *Options) error {
	env, cfg := o.Env, o.FloorConfig
	if !o.Quiet {
		cfg.Progress = env.Err
	}
	ictx, stop := env.Interrupted(ctx)
	defer stop()
	targets, cleanup, err := floorTargets(ictx, env, o.Conn)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := floor.RunFloor(ictx, targets, cfg)
	return o.finish(ctx, ictx, res, err)
}

// finish writes the results of a run, as JSON if asked and as text, and
// returns the run's error, or the exit of an interrupted run.
func (o *Options) finish(ctx, ictx context.Context, res *report.Results, err error) error {
	env := o.Env
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
		return measure.Target{Conn: cfg, Where: env.Redact.String(c.Where() + " (from " + c.Source() + ")"),
			NoPooler: "the database was given by " + c.Source() + ": nodeid bench starts a PgBouncer only in front of a throwaway server of its own"}, func() {}, nil
	}
	fmt.Fprintln(env.Err, "nodeid bench: starting a throwaway PostgreSQL (no --dsn or DATABASE_URL given)")
	return throwaway(ctx, env, benchSettings...)
}

// floorTargets returns the database of --dsn or DATABASE_URL, or else
// two throwaway servers, one with fsync (and full_page_writes) on and one
// with both off, and what removes them.
func floorTargets(ctx context.Context, env *cli.Env, c *cli.Conn) ([]measure.Target, func(), error) {
	if dsn, _ := c.DSNSource(); dsn != "" {
		t, cleanup, err := benchTarget(ctx, env, c)
		return []measure.Target{t}, cleanup, err
	}
	fmt.Fprintln(env.Err, "nodeid bench: starting two throwaway PostgreSQL servers, fsync on and fsync off (no --dsn or DATABASE_URL given)")
	on, stopOn, err := throwaway(ctx, env, "fsync=on", "full_page_writes=on")
	if err != nil {
		return nil, nil, err
	}
	off, stopOff, err := throwaway(ctx, env) // pgserver's defaults: fsync and full_page_writes off
	if err != nil {
		stopOn()
		return nil, nil, err
	}
	return []measure.Target{on, off}, func() { stopOff(); stopOn() }, nil
}

// throwaway starts a throwaway server with settings on top of pgserver's,
// and returns a fresh database on it and what removes both.
func throwaway(ctx context.Context, env *cli.Env, settings ...string) (measure.Target, func(), error) {
	srv, err := pgserver.StartLocal(ctx, settings...)
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
	where := fmt.Sprintf("throwaway PostgreSQL (%s) at %s, database %s", srv.Kind(), srv.Addr(), db)
	t := measure.Target{Conn: cfg, Where: where, Throwaway: true}
	b, err := pgserver.StartPgBouncer(ctx, srv.Addr(), poolerSize)
	switch {
	case errors.Is(err, pgserver.ErrNoPgBouncer):
		t.NoPooler = err.Error()
	case err != nil:
		t.NoPooler = "PgBouncer did not start: " + err.Error()
	default:
		pcfg, err := pgx.ParseConfig(b.DSN(db))
		if err != nil {
			_ = b.Close()
			cleanup()
			return measure.Target{}, nil, err
		}
		t.Pooler = &measure.Pooler{Conn: pcfg, PID: b.PID(),
			Where: fmt.Sprintf("throwaway %s at %s in transaction mode, pool of %d server connections", pgBouncerVersion(ctx), b.Addr(), poolerSize)}
		stop := cleanup
		cleanup = func() { _ = b.Close(); stop() }
	}
	return t, cleanup, nil
}

// pgBouncerVersion returns the first line of pgbouncer --version, e.g.
// "PgBouncer 1.18.0", or "PgBouncer".
func pgBouncerVersion(ctx context.Context) string {
	bin, err := pgserver.FindPgBouncer()
	if err != nil {
		return "PgBouncer"
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if line, _, _ := strings.Cut(string(out), "\n"); err == nil && strings.HasPrefix(line, "PgBouncer") {
		return strings.TrimSpace(line)
	}
	return "PgBouncer"
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
		if f.Value.Type() == "bool" && v == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
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
