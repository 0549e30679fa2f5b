package table

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// showJSON is the document of show -o json.
type showJSON struct {
	Table       string          `json:"table"`
	Replication string          `json:"replication"`
	Now         time.Time       `json:"now"`
	NowMs       int64           `json:"now_ms"`
	Node        nodeJSON        `json:"node"`
	History     []cli.ClaimJSON `json:"history"`
}

// ShowOptions are the argument and flags of show.
type ShowOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Node   int64
	Limit  int
	Output cli.OutputFlag
}

// Validate checks the limit and the output format.
func (o *ShowOptions) Validate() error {
	if o.Limit < 1 {
		return cli.Usagef("--limit %d: show at least 1 claim", o.Limit)
	}
	return o.Output.Check()
}

// NewCmdShow returns "nodeid show". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdShow(env *cli.Env, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	o := &ShowOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "show NODE",
		Short: "Show one node ID and its recent history of claims",
		Long: `Show one node ID's row and its latest claims, newest first: owner, epoch,
when each was acquired and ended and why (released, expired, evicted), and
the milliseconds (FROM, TO] in which each holder may have stamped IDs. Times
in the history are relative to the server's clock; -o wide adds them exactly,
and FROM and TO as unix milliseconds; -o json and -o yaml have every value
exactly.`,
		Example: `  nodeid show 7
  nodeid show 7 -o wide
  nodeid show 7 --limit 50 -o json`,
		Args:              cli.ExactArgs(1, "one node ID"),
		ValidArgsFunction: completeNodes(env, false),
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, c *cli.Conn) error {
			node, err := cli.ParseNodeID(args[0])
			if err != nil {
				return cli.Usage(err)
			}
			o.Conn, o.Node = c, node
			return cli.Run(cmd.Context(), o, runF, showRun)
		}),
	}
	cmd.Flags().IntVar(&o.Limit, "limit", 10, "how many claims of the history to show")
	o.Output.Register(cmd, cli.OutTable, cli.OutWide, cli.OutJSON, cli.OutYAML)
	return cmd
}

func showRun(ctx context.Context, o *ShowOptions) error {
	c, table, node := o.Conn, o.Conn.Table(), o.Node
	var (
		row  admin.Row
		now  time.Time
		hist []admin.HistoryRow
		mode admin.Replication
	)
	err := c.Timed(ctx, func(ctx context.Context) error {
		st, r, t, err := c.NodeRow(ctx, node, true)
		if err != nil {
			return err
		}
		row, now, mode = r, t, st.Replication()
		hist, err = st.History(ctx, node, o.Limit)
		return err
	})
	if err != nil {
		return cli.Needs("SELECT on "+table+", "+postgres.ConfigTable(table)+" and "+postgres.HistoryTable(table), err)
	}
	return WriteShow(o.Env.Out, table, row, hist, now, mode, o.Output.Value)
}

// WriteShow prints to w the row r of table, its history hist and the
// replication mode the table records, as of the server's time now, in the
// format output (of -o), as "nodeid show" does.
func WriteShow(w io.Writer, table string, r admin.Row, hist []admin.HistoryRow, now time.Time, mode admin.Replication, output string) error {
	if output == cli.OutJSON || output == cli.OutYAML {
		doc := showJSON{Table: table, Replication: string(mode), Now: now.UTC(), NowMs: now.UnixMilli(), Node: rowJSON(r, now), History: []cli.ClaimJSON{}}
		for _, c := range hist {
			doc.History = append(doc.History, cli.NewClaimJSON(c))
		}
		return cli.WriteDoc(w, output, doc)
	}
	kv := cli.NewTable(w)
	kv.Row("node", strconv.FormatInt(r.NodeID, 10))
	kv.Row("state", string(r.State(now)))
	kv.Row("owner", cli.OrDash(r.Owner))
	kv.Row("epoch", strconv.FormatInt(r.Epoch, 10))
	kv.Row("acquired", withRelative(r.AcquiredAt, now))
	kv.Row("expires", withRelative(r.ExpiresAt, now))
	if r.HorizonMs == 0 {
		kv.Row("horizon", "-")
	} else {
		kv.Row("horizon", fmt.Sprintf("%d (%s, %s)", r.HorizonMs, cli.ExactMs(r.HorizonMs), relHorizon(r.HorizonMs, now)))
	}
	kv.Row("generation", strconv.FormatInt(r.Generation, 10)+" (the table records "+string(mode)+" replication)")
	switch st := r.State(now); {
	case st == admin.Quarantined && r.CreationPending:
		kv.Row("quarantine", "until every standby has replayed the table's creation (nodeid init, or the first Acquire, confirms it)")
	case st == admin.Quarantined && r.RestorePending:
		kv.Row("quarantine", "until a restore is declared (nodeid init --restored --max-ttl): the table is on another server than the one it records")
	case st == admin.Quarantined:
		kv.Row("quarantine", fmt.Sprintf("until %s: last claimed before a database failover or restore; the next holder stamps after it",
			withRelative(r.QuarantinedUntil, now)))
	case st == admin.Evicted:
		kv.Row("claimable", fmt.Sprintf("after %s: the evicted lease's expiry and horizon (its holder may mint until its deadline)",
			withRelative(r.ClaimableAfter, now)))
	case st == admin.Cooling:
		kv.Row("claimable", fmt.Sprintf("after %s: the previous holder's horizon", withRelative(r.ClaimableAfter, now)))
	}
	if err := kv.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(hist) == 0 {
		_, err := fmt.Fprintln(w, "no claims in the history")
		return err
	}
	wide := output == cli.OutWide
	t := cli.NewTable(w)
	head := []string{"EPOCH", "OWNER", "ACQUIRED", "ENDED", "REASON", "STAMPS FROM (EXCL.)", "STAMPS TO"}
	if wide {
		head = append(head, "ACQUIRED AT", "ENDED AT", "FROM MS", "TO MS", "GENERATION")
	}
	t.Row(head...)
	for _, c := range hist {
		ended, reason := cli.Relative(c.EndedAt, now), cli.OrDash(string(c.EndReason))
		if c.EndedAt.IsZero() {
			ended, reason = "-", "(open)"
		}
		from := "-" // the node ID's first claim: nothing to stamp after
		if c.FromMs != 0 {
			from = cli.ExactMs(c.FromMs)
		}
		to := "-" // nothing stamped (a first claim released before it minted), or still open
		if c.HorizonMs != 0 {
			to = cli.ExactMs(c.HorizonMs)
		}
		cells := []string{strconv.FormatInt(c.Epoch, 10), cli.OrDash(c.Owner), cli.Relative(c.AcquiredAt, now), ended, reason,
			from, to}
		if wide {
			cells = append(cells, cli.Exact(c.AcquiredAt), cli.Exact(c.EndedAt), strconv.FormatInt(c.FromMs, 10), strconv.FormatInt(c.HorizonMs, 10),
				strconv.FormatInt(c.Generation, 10))
		}
		t.Row(cells...)
	}
	return t.Flush()
}

// withRelative formats t exactly and relative to now: "2026-01-02T03:04:05.678Z (3m ago)".
func withRelative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return cli.Exact(t) + " (" + cli.Relative(t, now) + ")"
}
