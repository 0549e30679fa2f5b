// Command benchreport renders docs/BENCHMARKS.md and its plots from the
// JSON results of `nodeid bench --json` and the outputs of the Go
// benchmarks (go test -bench, and benchstat's summary of them), and from
// the JSON of `nodeid bench --floor --json` (-floor) its section "The
// claim at the floor"; -floor-only puts that section alone into the
// existing report, leaving every other section as it is.
// scripts/bench.sh runs it; run that script, not this command, to
// regenerate the report. It lives in the nested module tools/, so that the
// library's module does not depend on its plotting packages.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// inputs are what the report is made of.
type inputs struct {
	res *bench.Results

	// Go benchmark outputs, raw and summarised by benchstat, with the
	// commands that produced them; a nil goBench was not run.
	snowflake, statements         *goBench
	snowflakeStat, statementsStat string
	snowflakeCmd, statementsCmd   string
	benchstatCmd                  string

	script    string        // the command that regenerates the report
	elapsed   time.Duration // how long the script took
	lockWaits string        // the herd's lock-wait diagnosis, if run
	lockCmd   string
	plots     map[string]string // plot name -> path relative to the report
	floor     *bench.Results    // the floor run's, or nil
}

func main() {
	var (
		results        = flag.String("results", "", "JSON results of nodeid bench --json (required)")
		snowflake      = flag.String("snowflake", "", "go test -bench output of ./snowflake")
		snowflakeStat  = flag.String("snowflake-stat", "", "benchstat summary of -snowflake")
		snowflakeCmd   = flag.String("snowflake-cmd", "go test -run '^$' -bench . -count 6 ./snowflake", "the command of -snowflake")
		statements     = flag.String("statements", "", "go test -bench output of ./cmd/nodeid/internal/bench/measure")
		statementsStat = flag.String("statements-stat", "", "benchstat summary of -statements")
		statementsCmd  = flag.String("statements-cmd", "go test -run '^$' -bench Statement -count 6 ./cmd/nodeid/internal/bench/measure", "the command of -statements")
		benchstatCmd   = flag.String("benchstat-cmd", "go run golang.org/x/perf/cmd/benchstat@latest", "how benchstat was run")
		lockWaits      = flag.String("lockwaits", "", "output of the herd's lock-wait diagnosis")
		lockCmd        = flag.String("lockwaits-cmd", "", "the command of -lockwaits")
		script         = flag.String("script", "scripts/bench.sh", "the command that regenerates the report")
		elapsed        = flag.Duration("elapsed", 0, "how long the whole script took")
		out            = flag.String("out", "docs/BENCHMARKS.md", "the report to write")
		plots          = flag.String("plots", "docs", "directory of the PNG plots")
		floor          = flag.String("floor", "", "JSON results of nodeid bench --floor --json")
		floorOnly      = flag.Bool("floor-only", false, "put only the section of -floor into the existing -out, replacing its own")
	)
	flag.Parse()
	if *floorOnly {
		if err := runFloorOnly(*floor, *out); err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*results, *snowflake, *snowflakeStat, *snowflakeCmd, *statements, *statementsStat, *statementsCmd,
		*benchstatCmd, *lockWaits, *lockCmd, *script, *elapsed, *out, *plots, *floor); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(results, snowflake, snowflakeStat, snowflakeCmd, statements, statementsStat, statementsCmd,
	benchstatCmd, lockWaits, lockCmd, script string, elapsed time.Duration, out, plotDir, floor string) error {
	if results == "" {
		return errors.New("-results is required")
	}
	b, err := os.ReadFile(results)
	if err != nil {
		return err
	}
	in := inputs{res: &bench.Results{}, snowflakeCmd: snowflakeCmd, statementsCmd: statementsCmd,
		benchstatCmd: benchstatCmd, script: script, elapsed: elapsed, lockCmd: lockCmd, plots: map[string]string{}}
	if err := json.Unmarshal(b, in.res); err != nil {
		return fmt.Errorf("%s: %w", results, err)
	}
	read := func(path string) (string, error) {
		if path == "" {
			return "", nil
		}
		b, err := os.ReadFile(path)
		return string(b), err
	}
	parse := func(path string) (*goBench, error) {
		s, err := read(path)
		if err != nil || s == "" {
			return nil, err
		}
		g, err := parseGoBench(bytes.NewReader([]byte(s)))
		if err != nil || len(g.names) == 0 {
			return nil, err
		}
		return g, nil
	}
	if in.snowflake, err = parse(snowflake); err != nil {
		return err
	}
	if in.statements, err = parse(statements); err != nil {
		return err
	}
	if in.snowflakeStat, err = read(snowflakeStat); err != nil {
		return err
	}
	if in.statementsStat, err = read(statementsStat); err != nil {
		return err
	}
	if in.lockWaits, err = read(lockWaits); err != nil {
		return err
	}
	if floor != "" {
		if in.floor, err = readFloor(floor); err != nil {
			return err
		}
	}
	rel := func(p string) string {
		r, err := filepath.Rel(filepath.Dir(out), p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	if sc := in.res.Scale; sc != nil && len(sc.Points) > 0 {
		p := filepath.Join(plotDir, "bench-scale.png")
		if err := scalePlot(sc, p); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		in.plots["scale"] = rel(p)
	}
	if h := in.res.Herd; h != nil && len(h.Runs) > 0 {
		p := filepath.Join(plotDir, "bench-herd.png")
		if err := herdPlot(h, p); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		in.plots["herd"] = rel(p)
	}
	var md bytes.Buffer
	if err := render(&md, newReport(&in)); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return os.WriteFile(out, md.Bytes(), 0o644)
}

// readFloor reads the results of a floor run.
func readFloor(path string) (*bench.Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res := &bench.Results{}
	if err := json.Unmarshal(b, res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if res.Floor == nil {
		return nil, fmt.Errorf("%s holds no floor results (of nodeid bench --floor --json)", path)
	}
	return res, nil
}

// runFloorOnly renders the floor section of the results in floor and puts
// it into the report at out, in place of its own if it has one.
func runFloorOnly(floor, out string) error {
	if floor == "" {
		return errors.New("-floor-only needs -floor")
	}
	res, err := readFloor(floor)
	if err != nil {
		return err
	}
	page, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	t, err := parseTemplate()
	if err != nil {
		return err
	}
	var sec bytes.Buffer
	if err := t.ExecuteTemplate(&sec, "floor", newFloor(res)); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return os.WriteFile(out, []byte(spliceFloor(string(page), sec.String())), 0o644)
}
