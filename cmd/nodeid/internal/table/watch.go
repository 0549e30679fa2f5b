package table

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// WatchOptions are the flags of watch.
type WatchOptions struct {
	ListOptions
	Interval time.Duration
	Count    int
}

// Validate checks the list's flags, the interval and the count.
func (o *WatchOptions) Validate() error {
	if err := o.ListOptions.Validate(); err != nil {
		return err
	}
	if o.Interval <= 0 {
		return cli.Usagef("--interval %s: the interval must be positive", o.Interval)
	}
	if o.Count < 0 {
		return cli.Usagef("--count %d: the count must be 0 (until interrupted) or more", o.Count)
	}
	return nil
}

// NewCmdWatch returns "nodeid watch". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdWatch(env *cli.Env, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	o := &WatchOptions{ListOptions: ListOptions{Env: env}}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Show the list, refreshed in place until interrupted",
		Long: `Show "nodeid list" and refresh it every --interval until interrupted
(Ctrl-C), or --count times. On a terminal each refresh redraws the screen;
otherwise the frames follow each other. A failed refresh shows the error in
place of the list and the next one tries again, also when the database is
unreachable from the start (an outage, a restart, a failover): watch resumes
when it answers. Only a first refresh that fails for a reason that does not
go away by itself (a missing table or privilege, a failed login) ends the
command; with --count, so does a last refresh that failed (exit code 1).

With -o json each refresh is one JSON document on one line, and nothing else
is written to stdout (for jq and other readers of JSON streams); with -o yaml
each is a YAML document that starts with "---". Errors of later refreshes go
to stderr.`,
		Example: `  nodeid watch
  nodeid watch --state held --interval 500ms
  nodeid watch --count 3 -o wide > frames.txt
  nodeid watch -o json | jq --unbuffered '.summary.held'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			return cli.Run(cmd.Context(), o, runF, watchRun)
		}),
	}
	o.register(cmd)
	cmd.Flags().Var(cli.NewDurationValue(&o.Interval, 2*time.Second), "interval", "time between refreshes")
	cmd.Flags().IntVar(&o.Count, "count", 0, "stop after this many refreshes (0: until interrupted)")
	return cmd
}

func watchRun(ctx context.Context, o *WatchOptions) error {
	env, c := o.Env, o.Conn
	ctx, stop := env.Interrupted(ctx)
	defer stop()
	tty := isTerminal(env.Out)
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	var last error // of the last refresh
	for i := 0; o.Count == 0 || i < o.Count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		n, err := timedSnapshot(ctx, c)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil && i == 0 && !postgres.Retryable(err):
			return err
		}
		last = err
		frame, ferr := watchFrame(env, c, n, err, o, i, tty)
		if ferr != nil {
			return ferr
		}
		if _, err := env.Out.Write(frame); err != nil {
			return err
		}
	}
	if last != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Msg: fmt.Sprintf("the last of %d refreshes failed", o.Count)}
	}
	return nil
}

// watchFrame renders refresh i of watch: the snapshot n, or the error of
// the refresh if err is not nil. In a document format a frame is one
// document (a JSON one on one line), and an error goes to stderr instead.
func watchFrame(env *cli.Env, c *cli.Conn, n Nodes, err error, o *WatchOptions, i int, tty bool) ([]byte, error) {
	var frame bytes.Buffer
	switch {
	case o.Output.Document() && err != nil:
		fmt.Fprintln(env.Err, c.Describe(err))
		return nil, nil
	case o.Output.Value == cli.OutJSON:
		return cli.MarshalJSON(n.doc(n.filter(o.All, admin.State(o.State))), "")
	case o.Output.Value == cli.OutYAML:
		frame.WriteString("---\n")
		err := n.Write(&frame, &o.ListOptions)
		return frame.Bytes(), err
	case tty:
		frame.WriteString(clearScreen)
	case i > 0:
		frame.WriteString("\n")
	}
	if !o.NoHeaders {
		fmt.Fprintf(&frame, "Every %s: nodeid list --table %s    %s\n\n", o.Interval, c.Table(), env.Now().Format("15:04:05"))
	}
	if err != nil {
		fmt.Fprintf(&frame, "%s\n(trying again every %s)\n", c.Describe(err), o.Interval)
		return frame.Bytes(), nil
	}
	werr := n.Write(&frame, &o.ListOptions)
	return frame.Bytes(), werr
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
