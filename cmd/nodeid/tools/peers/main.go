// Command peers measures, side by side in one run, the claim and the
// release of a node ID by three allocators on loopback servers it starts
// itself: nodeid on PostgreSQL (with a one-row durable UPDATE beside it,
// the floor), the lowest-free allocator people write on etcd with its
// official client, and the Redis worker-ID lease of one Lua script. The
// items take turns: every turn runs each of them once, claim then
// release, in an order that rotates from turn to turn, so that the noise
// of a shared machine falls on all of them alike. It prints a Markdown
// report (or, with --json, the raw figures) with the p50 and p99 of every
// operation and the ratios the project tracks, with their targets.
//
// From the repository's root:
//
//	go -C cmd/nodeid/tools run ./peers [--quick | --turns N] [--json] [--out FILE]
//
// It needs the PostgreSQL server programs (or DATABASE_URL: then it works
// in scratch tables of its own, which it drops), etcd and redis-server.
// Every server it starts is stopped, and its directory removed, when it
// returns, also after an error or a Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "peers: interrupted; the servers are stopped and their directories removed")
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// Turns and limits.
const (
	defaultTurns = 2000
	quickTurns   = 200
	minTurns     = 10
	maxTurns     = 1_000_000
	// warmup is the number of untimed turns before the timed ones.
	warmup = 10
)

// config is what the command line asks for.
type config struct {
	turns   int
	quick   bool
	json    bool
	out     string // "" for stdout
	etcd    string // the etcd program
	redis   string // the redis-server program
	command string // the command line, for the report
}

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// parseFlags parses and validates the command line (without the program
// name).
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{command: strings.Join(append([]string{"peers"}, args...), " ")}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.turns, "turns", defaultTurns, fmt.Sprintf("timed turns (%d to %d), after %d untimed ones", minTurns, maxTurns, warmup))
	fs.BoolVar(&c.quick, "quick", false, fmt.Sprintf("a smoke run of %d turns", quickTurns))
	fs.BoolVar(&c.json, "json", false, "print the raw figures as JSON instead of the Markdown report")
	fs.StringVar(&c.out, "out", "", "write the report to this file instead of stdout")
	fs.StringVar(&c.etcd, "etcd", "etcd", "the etcd server program")
	fs.StringVar(&c.redis, "redis-server", "redis-server", "the redis-server program")
	if err := fs.Parse(args); err != nil {
		return c, usagef("%v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return c, usagef("unexpected argument %q: peers takes flags only", fs.Arg(0))
	case c.quick && set["turns"]:
		return c, usagef("--quick and --turns %d: --quick means %d turns; give one or the other", c.turns, quickTurns)
	case c.turns < minTurns || c.turns > maxTurns:
		return c, usagef("--turns %d: the timed turns must be %d to %d", c.turns, minTurns, maxTurns)
	case set["out"] && c.out == "":
		return c, usagef(`--out "": name a file, or leave --out out for stdout`)
	case c.etcd == "":
		return c, usagef(`--etcd "": name the etcd program`)
	case c.redis == "":
		return c, usagef(`--redis-server "": name the redis-server program`)
	}
	if c.quick {
		c.turns = quickTurns
	}
	if c.out != "" {
		if st, err := os.Stat(filepath.Dir(c.out)); err != nil || !st.IsDir() {
			return c, usagef("--out %q: its directory must exist", c.out)
		}
	}
	return c, nil
}

// lookPrograms returns the paths of the etcd and redis-server programs, or
// an error naming every one missing.
func lookPrograms(c config) (etcd, redis string, err error) {
	var missing []string
	if etcd, err = exec.LookPath(c.etcd); err != nil {
		missing = append(missing, fmt.Sprintf("etcd (%q: %v; Debian package etcd-server)", c.etcd, err))
	}
	if redis, err = exec.LookPath(c.redis); err != nil {
		missing = append(missing, fmt.Sprintf("redis-server (%q: %v; Debian package redis-server)", c.redis, err))
	}
	if len(missing) > 0 {
		return "", "", errors.New("missing " + strings.Join(missing, "; "))
	}
	return etcd, redis, nil
}

// run runs the command: args are its flags, getenv reads DATABASE_URL,
// the report goes to stdout or --out, progress to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	res, err := measure(ctx, c, getenv("DATABASE_URL"), stderr)
	if err != nil {
		return err
	}
	var out []byte
	if c.json {
		if out, err = json.MarshalIndent(res, "", "  "); err != nil {
			return err
		}
		out = append(out, '\n')
	} else {
		out = []byte(render(res))
	}
	if c.out == "" {
		_, err = stdout.Write(out)
		return err
	}
	return os.WriteFile(c.out, out, 0o644)
}
