package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

func (a *app) watchCommand() *cobra.Command {
	var (
		o        listOptions
		interval time.Duration
		count    int
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Show the list, refreshed in place until interrupted",
		Long: `Show "nodeid list" and refresh it every --interval until interrupted
(Ctrl-C), or --count times. On a terminal each refresh redraws the screen;
otherwise the frames follow each other. A failed refresh shows the error and
the next one tries again; only a failure of the first one ends the command.

With -o json each refresh is one JSON document on one line, and nothing else
is written to stdout (for jq and other readers of JSON streams); with -o yaml
each is a YAML document that starts with "---". Errors of later refreshes go
to stderr.`,
		Example: `  nodeid watch
  nodeid watch --state held --interval 500ms
  nodeid watch --count 3 -o wide > frames.txt
  nodeid watch -o json | jq --unbuffered '.summary.held'`,
		Args: exactArgs(0, "no arguments"),
		RunE: a.action(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if interval <= 0 {
				return usagef("--interval %s: the interval must be positive", interval)
			}
			if count < 0 {
				return usagef("--count %d: the count must be 0 (until interrupted) or more", count)
			}
			ctx, stop := a.interrupted(cmd.Context())
			defer stop()
			tty := isTerminal(a.stdout)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for i := 0; count == 0 || i < count; i++ {
				if i > 0 {
					select {
					case <-ctx.Done():
						return nil
					case <-tick.C:
					}
				}
				n, err := a.timedSnapshot(ctx)
				switch {
				case err != nil && ctx.Err() != nil:
					return nil
				case err != nil && i == 0:
					return err
				}
				frame, err := a.watchFrame(n, err, &o, i, interval, tty)
				if err != nil {
					return err
				}
				if _, err := a.stdout.Write(frame); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	o.register(cmd)
	cmd.Flags().Var(newDurationValue(&interval, 2*time.Second), "interval", "time between refreshes")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many refreshes (0: until interrupted)")
	return cmd
}

// watchFrame renders refresh i of watch: the snapshot n, or the error of
// the refresh if err is not nil. In a document format a frame is one
// document (a JSON one on one line), and an error goes to stderr instead.
func (a *app) watchFrame(n nodes, err error, o *listOptions, i int, interval time.Duration, tty bool) ([]byte, error) {
	var frame bytes.Buffer
	switch {
	case o.output.document() && err != nil:
		fmt.Fprintln(a.stderr, a.describe(err))
		return nil, nil
	case o.output.value == outJSON:
		return marshalJSON(n.doc(n.filter(o.all, store.State(o.state))), "")
	case o.output.value == outYAML:
		frame.WriteString("---\n")
		err := n.write(&frame, o)
		return frame.Bytes(), err
	case tty:
		frame.WriteString(clearScreen)
	case i > 0:
		frame.WriteString("\n")
	}
	if !o.noHeaders {
		fmt.Fprintf(&frame, "Every %s: nodeid list --table %s    %s\n\n", interval, a.table, a.now().Format("15:04:05"))
	}
	if err != nil {
		fmt.Fprintln(&frame, a.describe(err))
		return frame.Bytes(), nil
	}
	werr := n.write(&frame, o)
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
