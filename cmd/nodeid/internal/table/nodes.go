package table

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// Nodes is a snapshot of the lease table at the server's now().
type Nodes struct {
	Table       string
	Replication admin.Replication // as the table records it
	Rows        []admin.Row
	Now         time.Time // the server's now() of the snapshot
}

// summary counts the rows of a snapshot by state.
type summary struct {
	Held        int `json:"held"`
	Free        int `json:"free"`
	Expired     int `json:"expired"`
	Evicted     int `json:"evicted,omitempty"`
	Cooling     int `json:"cooling,omitempty"`
	Quarantined int `json:"quarantined"`
	Total       int `json:"total"`
}

func (n Nodes) summary() summary {
	var s summary
	for _, r := range n.Rows {
		switch r.State(n.Now) {
		case admin.Held:
			s.Held++
		case admin.Free:
			s.Free++
		case admin.Expired:
			s.Expired++
		case admin.Evicted:
			s.Evicted++
		case admin.Cooling:
			s.Cooling++
		case admin.Quarantined:
			s.Quarantined++
		}
	}
	s.Total = len(n.Rows)
	return s
}

func (s summary) String() string {
	q := ""
	for _, c := range []struct {
		name string
		n    int
	}{{"evicted", s.Evicted}, {"cooling", s.Cooling}, {"quarantined", s.Quarantined}} {
		if c.n > 0 {
			q += fmt.Sprintf(" / %s %d", c.name, c.n)
		}
	}
	return fmt.Sprintf("held %d / free %d / expired %d%s / total %d", s.Held, s.Free, s.Expired, q, s.Total)
}

// filter returns the rows to show: those ever claimed (epoch > 0) unless
// all, and only those in state if it is not empty.
func (n Nodes) filter(all bool, state admin.State) []admin.Row {
	var out []admin.Row
	for _, r := range n.Rows {
		if (all || r.Epoch > 0) && (state == "" || r.State(n.Now) == state) {
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
	// QuarantinedUntil is set while a row last claimed before a failover
	// or a restore is not claimable; RestorePending while it waits for an
	// operator to declare a restore, with no end yet.
	QuarantinedUntil   *time.Time `json:"quarantined_until,omitempty"`
	QuarantinedUntilMs *int64     `json:"quarantined_until_ms,omitempty"`
	RestorePending     bool       `json:"restore_pending,omitempty"`
	// CreationPending is set while the table's creation waits for its
	// standbys to replay it, when no row is claimable.
	CreationPending bool `json:"creation_pending,omitempty"`
	// ClaimableAfter is set while a row that is not held is not claimable
	// yet (evicted, cooling, quarantined): the instant after which it is.
	ClaimableAfter   *time.Time `json:"claimable_after,omitempty"`
	ClaimableAfterMs *int64     `json:"claimable_after_ms,omitempty"`
}

func rowJSON(r admin.Row, now time.Time) nodeJSON {
	j := nodeJSON{NodeID: r.NodeID, State: string(r.State(now)), Owner: r.Owner, Epoch: r.Epoch, HorizonMs: r.HorizonMs, Generation: r.Generation}
	j.AcquiredAt, j.AcquiredAtMs = cli.JSONTime(r.AcquiredAt)
	j.ExpiresAt, j.ExpiresAtMs = cli.JSONTime(r.ExpiresAt)
	if r.QuarantinedUntil.After(now) {
		j.QuarantinedUntil, j.QuarantinedUntilMs = cli.JSONTime(r.QuarantinedUntil)
	}
	switch r.State(now) {
	case admin.Evicted, admin.Cooling, admin.Quarantined:
		j.RestorePending, j.CreationPending = r.RestorePending, r.CreationPending
		if !r.RestorePending && !r.CreationPending {
			j.ClaimableAfter, j.ClaimableAfterMs = cli.JSONTime(r.ClaimableAfter)
		}
	}
	return j
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
func (n Nodes) doc(rows []admin.Row) listJSON {
	doc := listJSON{Table: n.Table, Replication: string(n.Replication), Now: n.Now.UTC(), NowMs: n.Now.UnixMilli(), Summary: n.summary(), Nodes: []nodeJSON{}}
	for _, r := range rows {
		doc.Nodes = append(doc.Nodes, rowJSON(r, n.Now))
	}
	return doc
}

// Write prints the rows of the snapshot that o selects, in o's format:
// a document, or a table followed by the summary line of the whole snapshot
// (only the rows with --no-headers). A table with no rows says why instead.
func (n Nodes) Write(w io.Writer, o *ListOptions) error {
	rows := n.filter(o.All, admin.State(o.State))
	if o.Output.Document() {
		return cli.WriteDoc(w, o.Output.Value, n.doc(rows))
	}
	if len(rows) == 0 {
		if o.NoHeaders {
			return nil
		}
		_, err := fmt.Fprintln(w, n.empty(o))
		return err
	}
	wide := o.Output.Value == cli.OutWide
	t := cli.NewTable(w)
	if !o.NoHeaders {
		head := []string{"NODE", "STATE", "OWNER", "EPOCH", "ACQUIRED", "EXPIRES", "HORIZON"}
		if wide {
			head = append(head, "ACQUIRED AT", "EXPIRES AT", "HORIZON MS", "GENERATION")
		}
		t.Row(head...)
	}
	for _, r := range rows {
		state, horizon := r.State(n.Now), relHorizon(r.HorizonMs, n.Now)
		switch {
		case r.CreationPending && state == admin.Quarantined:
			horizon = "creation not confirmed"
		case r.RestorePending && state == admin.Quarantined:
			horizon = "restore not declared"
		case state == admin.Quarantined: // the next holder stamps after the quarantine
			horizon = cli.Relative(r.QuarantinedUntil, n.Now)
		case state == admin.Evicted || state == admin.Cooling: // claimable after it
			horizon = cli.Relative(r.ClaimableAfter, n.Now)
		}
		cells := []string{
			strconv.FormatInt(r.NodeID, 10),
			string(state),
			cli.OrDash(r.Owner),
			strconv.FormatInt(r.Epoch, 10),
			cli.Relative(r.AcquiredAt, n.Now),
			cli.Relative(r.ExpiresAt, n.Now),
			horizon,
		}
		if wide {
			cells = append(cells, cli.Exact(r.AcquiredAt), cli.Exact(r.ExpiresAt), strconv.FormatInt(r.HorizonMs, 10), strconv.FormatInt(r.Generation, 10))
		}
		t.Row(cells...)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	_, err := fmt.Fprintf(w, "%s; replication %s\n", n.summary(), n.Replication)
	return err
}

// empty says why o selects no row of the snapshot.
func (n Nodes) empty(o *ListOptions) string {
	s := n.summary()
	never := len(n.filter(true, admin.Free)) - len(n.filter(false, admin.Free))
	switch {
	case s.Total == 0:
		return fmt.Sprintf("table %s has no rows: \"%s\" adds the node range", n.Table, o.Conn.Command("init"))
	case o.State == "" && n.Rows[0].CreationPending:
		return fmt.Sprintf("no node IDs in use: the %d of table %s were never claimed (--all lists them), and none is handed out until every standby has replayed the table's creation (creation not confirmed: nodeid init, or the first Acquire, confirms it)",
			s.Total, n.Table)
	case o.State == "":
		return fmt.Sprintf("no node IDs in use: the %d of table %s were never claimed (--all lists them)", s.Total, n.Table)
	case o.State == string(admin.Free) && !o.All && never > 0:
		return fmt.Sprintf("no node ID in use is free; %d were never claimed (--all lists them); %s", never, s)
	}
	return fmt.Sprintf("no node ID is %s; %s", o.State, s)
}

// relHorizon describes a horizon: "-" if none was ever recorded.
func relHorizon(ms int64, now time.Time) string {
	if ms == 0 {
		return "-"
	}
	return cli.Relative(time.UnixMilli(ms), now)
}
