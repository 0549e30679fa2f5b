package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// claimJSON is a history row in -o json.
type claimJSON struct {
	Epoch        int64      `json:"epoch"`
	Owner        string     `json:"owner"`
	AcquiredAt   time.Time  `json:"acquired_at"`
	AcquiredAtMs int64      `json:"acquired_at_ms"`
	EndedAt      *time.Time `json:"ended_at"`
	EndedAtMs    *int64     `json:"ended_at_ms"`
	EndReason    string     `json:"end_reason"`
	FromMs       int64      `json:"from_ms"`
	HorizonMs    int64      `json:"horizon_ms"`
	Generation   int64      `json:"generation"`
}

func claimToJSON(c store.HistoryRow) claimJSON {
	j := claimJSON{Epoch: c.Epoch, Owner: c.Owner, AcquiredAt: c.AcquiredAt.UTC(), AcquiredAtMs: c.AcquiredAt.UnixMilli(),
		EndReason: string(c.EndReason), FromMs: c.FromMs, HorizonMs: c.HorizonMs, Generation: c.Generation}
	j.EndedAt, j.EndedAtMs = jsonTime(c.EndedAt)
	return j
}

// showJSON is the document of show -o json.
type showJSON struct {
	Table       string      `json:"table"`
	Replication string      `json:"replication"`
	Now         time.Time   `json:"now"`
	NowMs       int64       `json:"now_ms"`
	Node        nodeJSON    `json:"node"`
	History     []claimJSON `json:"history"`
}

func (a *app) showCommand() *cobra.Command {
	var (
		limit  int
		output outputFlag
	)
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
		Args:              exactArgs(1, "one node ID"),
		ValidArgsFunction: a.completeNodes(false),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			node, err := parseNodeID(args[0])
			if err != nil {
				return usage(err)
			}
			if limit < 1 {
				return usagef("--limit %d: show at least 1 claim", limit)
			}
			if err := output.check(); err != nil {
				return err
			}
			a.privileges = "SELECT on " + a.table + ", " + postgres.ConfigTable(a.table) + " and " + postgres.HistoryTable(a.table)
			var (
				row  store.Row
				now  time.Time
				hist []store.HistoryRow
				mode store.Replication
			)
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				st, r, t, err := a.nodeRow(ctx, node, fmt.Sprintf(": \"nodeid init --range %d-%d\" adds it", node, node))
				if err != nil {
					return err
				}
				row, now, mode = r, t, st.Replication()
				hist, err = st.History(ctx, node, limit)
				return err
			})
			if err != nil {
				return err
			}
			return a.writeShow(row, hist, now, mode, output.value)
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "how many claims of the history to show")
	output.register(cmd, outTable, outWide, outJSON, outYAML)
	return cmd
}

func (a *app) writeShow(r store.Row, hist []store.HistoryRow, now time.Time, mode store.Replication, output string) error {
	if output == outJSON || output == outYAML {
		doc := showJSON{Table: a.table, Replication: string(mode), Now: now.UTC(), NowMs: now.UnixMilli(), Node: rowJSON(r, now), History: []claimJSON{}}
		for _, c := range hist {
			doc.History = append(doc.History, claimToJSON(c))
		}
		return writeDoc(a.stdout, output, doc)
	}
	w := a.stdout
	kv := newTable(w)
	kv.row("node", strconv.FormatInt(r.NodeID, 10))
	kv.row("state", string(r.State(now)))
	kv.row("owner", orDash(r.Owner))
	kv.row("epoch", strconv.FormatInt(r.Epoch, 10))
	kv.row("acquired", withRelative(r.AcquiredAt, now))
	kv.row("expires", withRelative(r.ExpiresAt, now))
	if r.HorizonMs == 0 {
		kv.row("horizon", "-")
	} else {
		kv.row("horizon", fmt.Sprintf("%d (%s, %s)", r.HorizonMs, exactMs(r.HorizonMs), relHorizon(r.HorizonMs, now)))
	}
	kv.row("generation", strconv.FormatInt(r.Generation, 10)+" (the table records "+string(mode)+" replication)")
	if r.QuarantinedUntil.After(now) {
		kv.row("quarantine", fmt.Sprintf("until %s: last written before a database failover, move or restore; the next holder stamps after it",
			withRelative(r.QuarantinedUntil, now)))
	}
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(hist) == 0 {
		_, err := fmt.Fprintln(w, "no claims in the history")
		return err
	}
	wide := output == outWide
	t := newTable(w)
	head := []string{"EPOCH", "OWNER", "ACQUIRED", "ENDED", "REASON", "STAMPS FROM (EXCL.)", "STAMPS TO"}
	if wide {
		head = append(head, "ACQUIRED AT", "ENDED AT", "FROM MS", "TO MS", "GENERATION")
	}
	t.row(head...)
	for _, c := range hist {
		ended, reason := relative(c.EndedAt, now), orDash(string(c.EndReason))
		if c.EndedAt.IsZero() {
			ended, reason = "-", "(open)"
		}
		from := "-" // the node ID's first claim: nothing to stamp after
		if c.FromMs != 0 {
			from = exactMs(c.FromMs)
		}
		cells := []string{strconv.FormatInt(c.Epoch, 10), orDash(c.Owner), relative(c.AcquiredAt, now), ended, reason,
			from, exactMs(c.HorizonMs)}
		if wide {
			cells = append(cells, exact(c.AcquiredAt), exact(c.EndedAt), strconv.FormatInt(c.FromMs, 10), strconv.FormatInt(c.HorizonMs, 10),
				strconv.FormatInt(c.Generation, 10))
		}
		t.row(cells...)
	}
	return t.flush()
}

// withRelative formats t exactly and relative to now: "2026-01-02T03:04:05.678Z (3m ago)".
func withRelative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return exact(t) + " (" + relative(t, now) + ")"
}
