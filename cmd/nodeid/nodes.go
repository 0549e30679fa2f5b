package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nodeid/nodeid/internal/store"
)

// nodes is a snapshot of the lease table at the server's now().
type nodes struct {
	table       string
	replication store.Replication // as the table records it
	rows        []store.Row
	now         time.Time // the server's now() of the snapshot
}

// summary counts the rows of a snapshot by state.
type summary struct {
	Held        int `json:"held"`
	Free        int `json:"free"`
	Expired     int `json:"expired"`
	Quarantined int `json:"quarantined"`
	Total       int `json:"total"`
}

func (n nodes) summary() summary {
	var s summary
	for _, r := range n.rows {
		switch r.State(n.now) {
		case store.Held:
			s.Held++
		case store.Free:
			s.Free++
		case store.Expired:
			s.Expired++
		case store.Quarantined:
			s.Quarantined++
		}
	}
	s.Total = len(n.rows)
	return s
}

func (s summary) String() string {
	q := ""
	if s.Quarantined > 0 {
		q = fmt.Sprintf(" / quarantined %d", s.Quarantined)
	}
	return fmt.Sprintf("held %d / free %d / expired %d%s / total %d", s.Held, s.Free, s.Expired, q, s.Total)
}

// filter returns the rows to show: those ever claimed (epoch > 0) unless
// all, and only those in state if it is not empty.
func (n nodes) filter(all bool, state store.State) []store.Row {
	var out []store.Row
	for _, r := range n.rows {
		if (all || r.Epoch > 0) && (state == "" || r.State(n.now) == state) {
			out = append(out, r)
		}
	}
	return out
}

// nodeJSON is a row in -o json: exact times, as RFC 3339 and as unix ms;
// null where the row has none.
type nodeJSON struct {
	NodeID       int64      `json:"node_id"`
	State        string     `json:"state"`
	Owner        string     `json:"owner"`
	Epoch        int64      `json:"epoch"`
	AcquiredAt   *time.Time `json:"acquired_at"`
	AcquiredAtMs *int64     `json:"acquired_at_ms"`
	ExpiresAt    *time.Time `json:"expires_at"`
	ExpiresAtMs  *int64     `json:"expires_at_ms"`
	HorizonMs    int64      `json:"horizon_ms"`
	Generation   int64      `json:"generation"`
	// QuarantinedUntil is set while a row last written before a failover
	// is not claimable.
	QuarantinedUntil   *time.Time `json:"quarantined_until,omitempty"`
	QuarantinedUntilMs *int64     `json:"quarantined_until_ms,omitempty"`
}

func rowJSON(r store.Row, now time.Time) nodeJSON {
	j := nodeJSON{NodeID: r.NodeID, State: string(r.State(now)), Owner: r.Owner, Epoch: r.Epoch, HorizonMs: r.HorizonMs, Generation: r.Generation}
	j.AcquiredAt, j.AcquiredAtMs = jsonTime(r.AcquiredAt)
	j.ExpiresAt, j.ExpiresAtMs = jsonTime(r.ExpiresAt)
	if r.QuarantinedUntil.After(now) {
		j.QuarantinedUntil, j.QuarantinedUntilMs = jsonTime(r.QuarantinedUntil)
	}
	return j
}

func jsonTime(t time.Time) (*time.Time, *int64) {
	if t.IsZero() {
		return nil, nil
	}
	u, ms := t.UTC(), t.UnixMilli()
	return &u, &ms
}

// listJSON is the document of list -o json.
type listJSON struct {
	Table       string     `json:"table"`
	Replication string     `json:"replication"`
	Now         time.Time  `json:"now"`
	NowMs       int64      `json:"now_ms"`
	Summary     summary    `json:"summary"`
	Nodes       []nodeJSON `json:"nodes"`
}

// doc is the document of list -o json and -o yaml: the rows, with the
// summary of the whole snapshot.
func (n nodes) doc(rows []store.Row) listJSON {
	doc := listJSON{Table: n.table, Replication: string(n.replication), Now: n.now.UTC(), NowMs: n.now.UnixMilli(), Summary: n.summary(), Nodes: []nodeJSON{}}
	for _, r := range rows {
		doc.Nodes = append(doc.Nodes, rowJSON(r, n.now))
	}
	return doc
}

// write prints the rows of the snapshot that o selects, in o's format:
// a document, or a table followed by the summary line of the whole snapshot
// (only the rows with --no-headers). A table with no rows says why instead.
func (n nodes) write(w io.Writer, o *listOptions) error {
	rows := n.filter(o.all, store.State(o.state))
	if o.output.document() {
		return writeDoc(w, o.output.value, n.doc(rows))
	}
	if len(rows) == 0 {
		if o.noHeaders {
			return nil
		}
		_, err := fmt.Fprintln(w, n.empty(o))
		return err
	}
	wide := o.output.value == outWide
	t := newTable(w)
	if !o.noHeaders {
		head := []string{"NODE", "STATE", "OWNER", "EPOCH", "ACQUIRED", "EXPIRES", "HORIZON"}
		if wide {
			head = append(head, "ACQUIRED AT", "EXPIRES AT", "HORIZON MS", "GENERATION")
		}
		t.row(head...)
	}
	for _, r := range rows {
		state, horizon := r.State(n.now), relHorizon(r.HorizonMs, n.now)
		if state == store.Quarantined { // the next holder stamps after the quarantine
			horizon = relative(r.QuarantinedUntil, n.now)
		}
		cells := []string{
			strconv.FormatInt(r.NodeID, 10),
			string(state),
			orDash(r.Owner),
			strconv.FormatInt(r.Epoch, 10),
			relative(r.AcquiredAt, n.now),
			relative(r.ExpiresAt, n.now),
			horizon,
		}
		if wide {
			cells = append(cells, exact(r.AcquiredAt), exact(r.ExpiresAt), strconv.FormatInt(r.HorizonMs, 10), strconv.FormatInt(r.Generation, 10))
		}
		t.row(cells...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if o.noHeaders {
		return nil
	}
	_, err := fmt.Fprintf(w, "%s; replication %s\n", n.summary(), n.replication)
	return err
}

// empty says why o selects no row of the snapshot.
func (n nodes) empty(o *listOptions) string {
	s := n.summary()
	never := len(n.filter(true, store.Free)) - len(n.filter(false, store.Free))
	switch {
	case s.Total == 0:
		return fmt.Sprintf("table %s has no rows: \"nodeid init\" adds the node range", n.table)
	case o.state == "":
		return fmt.Sprintf("no node IDs in use: the %d of table %s were never claimed (--all lists them)", s.Total, n.table)
	case o.state == string(store.Free) && !o.all && never > 0:
		return fmt.Sprintf("no node ID in use is free; %d were never claimed (--all lists them); %s", never, s)
	}
	return fmt.Sprintf("no node ID is %s; %s", o.state, s)
}

// relHorizon describes a horizon: "-" if none was ever recorded.
func relHorizon(ms int64, now time.Time) string {
	if ms == 0 {
		return "-"
	}
	return relative(time.UnixMilli(ms), now)
}
