package holder

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// Flags are the flags of a command that holds a lease: --ttl, --grace,
// --owner, --create with --yes, and the node range (--nodes, --range).
type Flags struct {
	TTL      time.Duration
	Grace    time.Duration // 0 until Validate: TTL/6 unless --grace is given
	Owner    string
	Create   bool
	Yes      bool // with --create, create a table of more than cli.ConfirmRows rows
	Range    cli.RangeFlags
	cmd      *cobra.Command
	graceSet bool
}

// Register adds the flags to cmd; graceHelp says what the grace is for.
func (f *Flags) Register(cmd *cobra.Command, graceHelp string) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.Var(cli.NewDurationValue(&f.TTL, nodeid.DefaultTTL), "ttl",
		fmt.Sprintf("lease TTL, %s to %s; a crashed holder's node ID frees up after it", nodeid.MinTTL, nodeid.MaxTTL))
	fl.Var(&cli.DefaultedDuration{DurationValue: cli.NewDurationValue(&f.Grace, 0), Def: "TTL/6"}, "grace", graceHelp)
	fl.StringVar(&f.Owner, "owner", "", "holder name recorded in the table (default host-pid-random)")
	fl.BoolVar(&f.Create, "create", false, "create the lease table if it is missing (else a missing table is an error)")
	fl.BoolVar(&f.Yes, "yes", false, fmt.Sprintf("with --create, allow a missing table to be created with more than %s rows (--range)", cli.Count(cli.ConfirmRows)))
	f.Range.RegisterDefault(cmd, "the table's", "the table's")
}

// ValidateGrace checks the TTL, in the words of the other flags' errors,
// and settles the grace: TTL/6 unless --grace is given, and at most half
// the TTL.
func (f *Flags) ValidateGrace() error {
	if f.TTL < nodeid.MinTTL || f.TTL > nodeid.MaxTTL {
		return cli.Usagef("--ttl %s: it must be %s to %s", f.TTL, nodeid.MinTTL, nodeid.MaxTTL)
	}
	if !f.cmd.Flags().Changed("grace") {
		f.Grace = f.TTL / 6
	}
	if f.Grace <= 0 || f.Grace > f.TTL/2 {
		return cli.Usagef("--grace %s: it must be positive and at most half the TTL (%s)", f.Grace, f.TTL/2)
	}
	return nil
}

// Nodes resolves the node range (--nodes, --range), and refuses a
// --create that would create a missing table of more than cli.ConfirmRows
// rows unless --yes confirms it.
func (f *Flags) Nodes() (cli.NodeRange, error) {
	r, err := f.Range.Resolve()
	if err != nil {
		return r, err
	}
	if f.Create && !f.Yes && f.Range.Given() && r.Size() > cli.ConfirmRows {
		return r, cli.Usagef("%s with --create: a missing table would be created with %s rows, and more than %s are created only when confirmed: add --yes",
			f.Range.Flag(), cli.Count(r.Size()), cli.Count(cli.ConfirmRows))
	}
	return r, nil
}

// Options returns the Registry's options the flags set but the node range:
// the TTL, the table, --create, and the owner if given.
func (f *Flags) Options(table string) []nodeid.Option {
	opts := []nodeid.Option{nodeid.WithTTL(f.TTL), nodeid.WithTable(table), nodeid.WithCreateTable(f.Create)}
	if f.Owner != "" {
		opts = append(opts, nodeid.WithOwner(f.Owner))
	}
	return opts
}

// CreateHint returns err, explained, with the advice to add --create when
// it says the table is missing and --create was not given; else err.
func (f *Flags) CreateHint(c *cli.Conn, err error) error {
	if err != nil && !f.Create && postgres.SQLSTATE(err) == "42P01" {
		return fmt.Errorf("%s; or add --create", c.Explain(err))
	}
	return err
}

// Privileges are what a holder of a lease of table needs.
func Privileges(table string) string {
	return "EXECUTE on the client functions of " + table + " and SELECT on its tables (nodeid init --grant ROLE)"
}

// Waiting says how Acquire waits for a node ID.
type Waiting struct {
	Wait    bool          // wait for a node ID to free up, instead of failing with ErrNoNodeIDAvailable
	Timeout time.Duration // the wait's limit, for the message (0: none)
	Every   time.Duration // how often to say that it still waits
	Which   string        // "a node ID of 0-63", for the message
	Table   string
	Log     io.Writer
}

// Acquire claims a node ID with a Registry on db with opts; with w.Wait,
// when none is free, it says so and waits for one, saying every w.Every
// that it still waits. The returned function closes the registry.
func Acquire(ctx context.Context, db *sql.DB, opts []nodeid.Option, w Waiting) (*nodeid.Lease, func(), error) {
	reg, err := nodeid.New(db, opts...)
	if err != nil {
		return nil, func() {}, err
	}
	closeReg := func() { _ = reg.Close() }
	lease, err := reg.TryAcquire(ctx)
	if err == nil || !w.Wait || !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
		return lease, closeReg, err
	}
	until := ""
	if w.Timeout > 0 {
		until = ", for at most " + w.Timeout.String()
	}
	fmt.Fprintf(w.Log, "nodeid: %s; waiting for one to free up (--wait%s)\n", strings.TrimPrefix(err.Error(), "nodeid: "), until)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(w.Every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w.Log, "nodeid: still waiting for %s in table %s (%s so far)\n",
					w.Which, w.Table, time.Since(start).Round(time.Second))
			}
		}
	}()
	first := err
	lease, err = reg.Acquire(ctx)
	close(done)
	wg.Wait()
	if err != nil && ctx.Err() != nil && !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
		// Interrupted, or --timeout passed, while a claim was under way.
		err = fmt.Errorf("%w: stopped waiting: %w", first, context.Cause(ctx))
	}
	return lease, closeReg, err
}

// ReleaseUnused releases a lease under which nothing ran: the node ID
// keeps the previous holder's horizon.
func ReleaseUnused(lease *nodeid.Lease) {
	_ = lease.ReleaseStamped(context.Background(), lease.PreviousHorizon())
}

// Clock is the wall clock a holder stamps with, in unix milliseconds.
type Clock interface{ NowMs() int64 }

// SystemClock is the system's wall clock.
type SystemClock struct{}

// NowMs returns the system's wall clock in unix milliseconds.
func (SystemClock) NowMs() int64 { return time.Now().UnixMilli() }

// WaitPastHorizon waits until clock is past the previous holder's horizon
// of lease: up to ttl/5, or if wait as long as ctx allows, saying so on log
// if it is more than a second.
func WaitPastHorizon(ctx context.Context, log io.Writer, lease *nodeid.Lease, clock Clock, ttl time.Duration, wait bool) error {
	prev := lease.PreviousHorizon()
	behind := func() time.Duration { return time.Duration(prev+1-clock.NowMs()) * time.Millisecond }
	left := behind()
	if left <= 0 {
		return nil
	}
	tooFar := fmt.Errorf("%w: node ID %d may be stamped only after %s, %s from now by this host's clock; check the clocks of this host and of the node ID's previous holder",
		nodeid.ErrClockBehind, lease.NodeID(), cli.ExactMs(prev), left.Round(time.Millisecond))
	if !wait && left > ttl/5 {
		return fmt.Errorf("%w (--wait waits for it)", tooFar)
	}
	if left > time.Second {
		fmt.Fprintf(log, "nodeid: node ID %d may be stamped only after %s, %s from now by this host's clock: waiting\n",
			lease.NodeID(), cli.ExactMs(prev), left.Round(time.Millisecond))
	}
	t := time.NewTimer(left)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: stopped waiting: %w", tooFar, context.Cause(ctx))
		case <-t.C:
		}
		if left = behind(); left <= 0 {
			return nil
		}
		t.Reset(left) // the clock was set back meanwhile
	}
}
