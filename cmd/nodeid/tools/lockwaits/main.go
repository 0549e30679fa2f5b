// Command lockwaits shows where the herd's claims wait on locks. It starts
// a throwaway PostgreSQL that logs every lock wait longer than 5 ms
// (log_lock_waits=on, deadlock_timeout=5ms), runs the herd scenario of
// nodeid bench in the variants given, and counts the waits logged during
// each variant's timed claims, by lock and by what the waiting backend was
// doing. scripts/bench.sh includes its output in docs/BENCHMARKS.md. From
// the repository's root, it runs as `go -C cmd/nodeid/tools run ./lockwaits`.
//
// The short deadlock_timeout makes every long wait run the deadlock
// detector, so the latencies of this run are not the report's.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/measure"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// settings make the server log lock waits to a file it can read back.
var settings = []string{
	"max_connections=700",
	"logging_collector=on",
	"log_directory=log",
	"log_filename=lockwaits.log",
	"log_lock_waits=on",
	"deadlock_timeout=5ms",
	"log_timezone=UTC",
	"log_line_prefix=%m [%p] ",
}

func main() {
	claimers := flag.Int("claimers", 512, "concurrent claims")
	ids := flag.Int("ids", 1024, "node IDs")
	variants := flag.String("variants", report.HerdLibrary+","+report.HerdSQL, "herd variants to run")
	repeat := flag.Int("repeat", 1, "repetitions")
	flag.Parse()
	if err := run(os.Stdout, *claimers, *ids, strings.Split(*variants, ","), *repeat); err != nil {
		fmt.Fprintln(os.Stderr, "lockwaits:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, claimers, ids int, variants []string, repeat int) error {
	ctx := context.Background()
	srv, err := pgtest.StartOwn(ctx, settings...)
	if err != nil {
		return err
	}
	defer srv.Close()
	name, err := srv.CreateDatabase(ctx)
	if err != nil {
		return err
	}
	cc, err := pgx.ParseConfig(srv.DSN(name))
	if err != nil {
		return err
	}
	cfg := measure.DefaultConfig()
	cfg.Only = []string{report.Herd}
	cfg.HerdClaimers, cfg.HerdIDs, cfg.HerdVariants, cfg.Repeat = claimers, ids, variants, repeat
	cfg.Progress = os.Stderr
	res, err := measure.Run(ctx, measure.Target{Conn: cc, Where: "lock-wait diagnosis", Throwaway: true}, cfg)
	if err != nil {
		return err
	}
	if msg, ok := res.Failed[report.Herd]; ok {
		return fmt.Errorf("herd: %s", msg)
	}
	db, err := sql.Open("pgx", srv.DSN(name))
	if err != nil {
		return err
	}
	defer db.Close()
	var log string
	if err := db.QueryRowContext(ctx, `SELECT pg_read_file('log/lockwaits.log')`).Scan(&log); err != nil {
		return err
	}
	waits, err := parseLog(log, res.Env.Relations)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "variant\trep\twaits > 5 ms\tlock\twhile\n")
	runs := slices.Clone(res.Herd.Runs)
	slices.SortStableFunc(runs, func(a, b report.HerdRun) int { return strings.Compare(a.Variant, b.Variant) })
	for _, r := range runs {
		counts := map[[2]string]int{}
		for _, wt := range waits {
			if !wt.at.Before(r.Start.Add(-time.Millisecond)) && !wt.at.After(r.End.Add(time.Millisecond)) {
				counts[[2]string{wt.lock, wt.while}]++
			}
		}
		keys := make([][2]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int { return counts[b] - counts[a] })
		if len(keys) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t0\t\t\n", r.Variant, r.Rep)
		}
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Variant, r.Rep, counts[k], k[0], k[1])
		}
	}
	return tw.Flush()
}

// wait is one lock wait the server logged.
type wait struct {
	at    time.Time
	lock  string // e.g. "ShareLock on transaction"
	while string // the CONTEXT line, normalised
}

var (
	waitLine  = regexp.MustCompile(`^(\S+ \S+) UTC \[\d+\] LOG:  process \d+ still waiting for (.+?) after [0-9.]+ ms`)
	extension = regexp.MustCompile(`extension of relation (\d+) of database \d+`)
	tupleRef  = regexp.MustCompile(` \(\d+,\d+\)`)
	scratch   = regexp.MustCompile(`"nodeid_bench_[0-9a-f]+_(\w+)"`)
	numbers   = regexp.MustCompile(` \d+`)
	ctxPrefix = "CONTEXT:  "
)

// parseLog returns the lock waits of a server log with the prefix of
// settings; relations names the scratch relations by OID.
func parseLog(log string, relations map[string]string) ([]wait, error) {
	var out []wait
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur *wait
	for sc.Scan() {
		line := sc.Text()
		if m := waitLine.FindStringSubmatch(line); m != nil {
			at, err := time.Parse("2006-01-02 15:04:05.000", m[1])
			if err != nil {
				return nil, err
			}
			lock := extension.ReplaceAllStringFunc(m[2], func(e string) string {
				oid := extension.FindStringSubmatch(e)[1]
				if name, ok := relations[oid]; ok {
					return "extension of " + scratch.ReplaceAllString(`"`+name+`"`, "$1")
				}
				return "extension of relation " + oid
			})
			out = append(out, wait{at: at, lock: numbers.ReplaceAllString(lock, ""), while: "–"})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if i := strings.Index(line, ctxPrefix); i >= 0 {
			c := tupleRef.ReplaceAllString(line[i+len(ctxPrefix):], "")
			cur.while = scratch.ReplaceAllString(c, "$1 table")
			cur = nil
		} else if !strings.HasPrefix(line, "\t") && !strings.Contains(line, "DETAIL:") {
			cur = nil
		}
	}
	return out, sc.Err()
}
