package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid/internal/timefmt"
)

// Claim is one claim of a node ID as the database's history recorded it.
type Claim struct {
	Node, Epoch int64
	Owner       string
	AcquiredNs  int64 // acquired_at, unix ns
	FromMs      int64 // the previous holder's horizon
	HorizonMs   int64 // the final horizon when ended, else the lease row's current one
	EndedNs     int64 // ended_at, unix ns; 0 while the claim is open
	EndReason   string
	ExpiresNs   int64 // for an open claim: the lease row's expires_at; else 0
}

// endNs is the end of the claim's interval: ended_at, or for a claim still
// open the lease row's expiry.
func (c *Claim) endNs() int64 {
	if c.EndedNs != 0 {
		return c.EndedNs
	}
	return c.ExpiresNs
}

// Row is one row of the lease table, read after the run.
type Row struct {
	Node, Epoch int64
	Owner       string
	HorizonMs   int64
	ExpiresNs   int64 // 0 if free
}

// Pause is one SIGSTOP of a worker process, resumed by SIGCONT.
type Pause struct {
	Worker, Incarnation int64
	StopNs, ContNs      int64 // wall clock just before SIGSTOP and just before SIGCONT
}

// Incarnation names one worker process.
type Incarnation struct{ Worker, Incarnation int64 }

// History is everything the checker looks at.
type History struct {
	Claims []Claim               // every claim of the history table
	Rows   []Row                 // every row of the lease table, after the run
	Files  []*File               // every worker's output
	Pauses []Pause               // every SIGSTOP the nemesis sent
	Deaths map[Incarnation]int64 // when the test killed a worker process (SIGKILL), unix ns
	TTL    time.Duration
}

// Report is the verdict of Check.
type Report struct {
	IDs        int64
	Leases     int // leases recorded by the workers
	Losses     int // of which lost
	Releases   int // of which released by the worker
	Claims     int // claims in the history table
	Duplicates int64
	Violations int            // every broken rule but duplicates
	ByRule     map[string]int // violations (and duplicates) per rule
	Details    []string       // the first maxDetails violations, described
}

const maxDetails = 40

// LostBound is how soon after SIGCONT a paused worker's Lost must have
// closed: its deadline passed during the pause, so it must close as soon
// as the process runs again. The bound is loose so that a loaded machine
// does not fail the check; a Lost that waited for a renewal's answer or a
// timeout would still take longer than the pause itself.
const LostBound = time.Second

// stopSlack: a lease whose deadline fell this soon after SIGSTOP was sent
// may have been lost before the process actually stopped.
const stopSlack = 100 * time.Millisecond

// recordBound: a worker killed this soon after SIGCONT may not have recorded
// its loss yet (the minting loop notices it after a Generate that may wait
// for the clock).
const recordBound = 10 * time.Second

func (r *Report) violate(rule, format string, args ...any) {
	if r.ByRule == nil {
		r.ByRule = map[string]int{}
	}
	r.ByRule[rule]++
	if rule != "duplicate" {
		r.Violations++
	}
	if len(r.Details) < maxDetails {
		r.Details = append(r.Details, rule+": "+fmt.Sprintf(format, args...))
	}
}

type key struct{ node, epoch int64 }

// lease is one lease as a worker recorded it.
type lease struct {
	file *File
	acq  *Acquired
	lost *Lost
	rel  *Released
	ids  int64
	// the first and last minted ID, for sampling
	first, last uint64
}

func fmtNs(ns int64) string {
	if ns == 0 {
		return "never"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000000")
}

func fmtMs(ms int64) string { return fmtNs(ms * 1e6) }

func (f *File) name() string {
	return fmt.Sprintf("worker %d.%d (%s, offset %+dms)", f.Header.Worker, f.Header.Incarnation, f.Header.Owner, f.Header.OffsetMs)
}

// Check checks the whole history:
//
//   - no ID was minted twice, over every ID every worker recorded;
//   - each ID decodes to the node ID (and epoch bits, if the layout has
//     them) of the lease the worker minted it under;
//   - each ID's millisecond, less the worker's injected clock offset, lies
//     in the claim's interval [acquired_at, ended_at] from the history
//     table (the lease row's expires_at for a claim still open), give or
//     take the 1 ms of truncation;
//   - each ID's millisecond lies in the claim's (from_ms, horizon_ms];
//   - each ID of a lease the worker lost was stamped, less the offset, no
//     later than the lease's local deadline, and that deadline was no later
//     than the claim's end in the database;
//   - a generator refused to mint after its lease was lost, and Lost closed;
//   - every lease a worker recorded is a claim of the history table with
//     that worker's owner name, and no claim was recorded by two workers;
//   - per node ID, the claims have epochs 1, 2, 3, ..., each ended before the
//     next began, and each began from the horizon the previous one left;
//   - every lease row agrees with the latest claim of its node ID;
//   - Lost closed no later than LostBound after the local deadline, or, for
//     a worker paused across the deadline, after SIGCONT;
//   - every worker paused for longer than the TTL saw each lease it held
//     lost, within LostBound after SIGCONT, as expired or taken over.
func Check(h History) Report {
	var r Report
	r.Claims = len(h.Claims)
	claims := checkClaims(&r, h.Claims)
	checkRows(&r, h.Rows, h.Claims)

	leases := map[key]*lease{}
	var all []uint64
	for _, f := range h.Files {
		total := 0
		for _, rec := range f.Records {
			if ids, ok := rec.(IDs); ok {
				total += len(ids.IDs)
			}
		}
		all = slices.Grow(all, total)
		all = checkFile(&r, f, claims, leases, all)
	}
	r.IDs = int64(len(all))
	for _, l := range leases {
		r.Leases++
		if l.lost != nil {
			r.Losses++
		}
		if l.rel != nil {
			r.Releases++
		}
	}
	checkPauses(&r, h, leases)
	checkLostInTime(&r, h, leases)
	checkDuplicates(&r, h.Files, all)
	return r
}

// checkClaims checks each node ID's time line and indexes the claims.
func checkClaims(r *Report, cs []Claim) map[key]*Claim {
	sorted := slices.Clone(cs)
	slices.SortFunc(sorted, func(a, b Claim) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Epoch, b.Epoch))
	})
	out := make(map[key]*Claim, len(sorted))
	for i := range sorted {
		c := &sorted[i]
		if _, dup := out[key{c.Node, c.Epoch}]; dup {
			r.violate("claims", "node %d epoch %d is claimed twice in the history", c.Node, c.Epoch)
			continue
		}
		out[key{c.Node, c.Epoch}] = c
		if c.HorizonMs < c.FromMs {
			r.violate("claims", "node %d epoch %d: horizon %d is before from %d", c.Node, c.Epoch, c.HorizonMs, c.FromMs)
		}
		if c.EndedNs != 0 && c.EndedNs < c.AcquiredNs {
			r.violate("claims", "node %d epoch %d ended at %s, before it began at %s", c.Node, c.Epoch, fmtNs(c.EndedNs), fmtNs(c.AcquiredNs))
		}
		first := i == 0 || sorted[i-1].Node != c.Node
		if first {
			if c.Epoch != 1 {
				r.violate("claims", "node %d: the first claim in the history has epoch %d, not 1", c.Node, c.Epoch)
			}
		} else {
			p := &sorted[i-1]
			if c.Epoch != p.Epoch+1 {
				r.violate("claims", "node %d: epoch %d follows epoch %d", c.Node, c.Epoch, p.Epoch)
			}
			if p.EndedNs == 0 {
				r.violate("claims", "node %d: epoch %d began at %s while epoch %d was still open",
					c.Node, c.Epoch, fmtNs(c.AcquiredNs), p.Epoch)
			} else if c.AcquiredNs < p.EndedNs {
				// acquired_at is read after the claim's row lock, so after the
				// commit of the release or the expiry that freed the row.
				r.violate("claims", "node %d: epoch %d began at %s, before epoch %d ended at %s (%s)",
					c.Node, c.Epoch, fmtNs(c.AcquiredNs), p.Epoch, fmtNs(p.EndedNs), p.EndReason)
			}
			if c.FromMs != p.HorizonMs {
				r.violate("claims", "node %d: epoch %d starts from horizon %d, but epoch %d left %d",
					c.Node, c.Epoch, c.FromMs, p.Epoch, p.HorizonMs)
			}
		}
		if c.EndedNs == 0 && c.ExpiresNs == 0 {
			r.violate("claims", "node %d epoch %d is open but the lease row has no expiry", c.Node, c.Epoch)
		}
	}
	return out
}

// checkRows checks that each lease row agrees with the latest claim of its
// node ID: same epoch; free and with the claim's final horizon if the claim
// was released; held by the claim's owner with its horizon if it is open.
func checkRows(r *Report, rows []Row, cs []Claim) {
	latest := map[int64]Claim{}
	for _, c := range cs {
		if l, ok := latest[c.Node]; !ok || c.Epoch > l.Epoch {
			latest[c.Node] = c
		}
	}
	for _, row := range rows {
		c, ok := latest[row.Node]
		switch {
		case !ok:
			if row.Epoch != 0 {
				r.violate("rows", "node %d has epoch %d but no claim in the history", row.Node, row.Epoch)
			}
		case row.Epoch != c.Epoch:
			r.violate("rows", "node %d has epoch %d, but its latest claim in the history has epoch %d", row.Node, row.Epoch, c.Epoch)
		case row.HorizonMs != c.HorizonMs:
			r.violate("rows", "node %d epoch %d has horizon %d, but its claim in the history has %d", row.Node, row.Epoch, row.HorizonMs, c.HorizonMs)
		case c.EndReason == "released" && (row.Owner != "" || row.ExpiresNs != 0):
			r.violate("rows", "node %d epoch %d was released, but the row is held by %q until %s", row.Node, row.Epoch, row.Owner, fmtNs(row.ExpiresNs))
		case c.EndedNs == 0 && row.Owner != c.Owner:
			r.violate("rows", "node %d epoch %d is open in the history for %q, but the row names %q", row.Node, row.Epoch, c.Owner, row.Owner)
		}
	}
}

// checkFile checks the records of one worker file and appends its IDs to
// all.
func checkFile(r *Report, f *File, claims map[key]*Claim, leases map[key]*lease, all []uint64) []uint64 {
	mine := map[key]*lease{}
	for _, rec := range f.Records {
		switch v := rec.(type) {
		case Acquired:
			k := key{v.Node, v.Epoch}
			if other, dup := leases[k]; dup {
				r.violate("lease", "node %d epoch %d is recorded as held by %s and by %s",
					v.Node, v.Epoch, other.file.name(), f.name())
				continue
			}
			l := &lease{file: f, acq: &v}
			leases[k], mine[k] = l, l
			c := claims[k]
			switch {
			case c == nil:
				r.violate("lease", "%s holds node %d epoch %d, which the history table does not record", f.name(), v.Node, v.Epoch)
			case c.Owner != f.Header.Owner:
				r.violate("lease", "%s holds node %d epoch %d, which the history table records for %q",
					f.name(), v.Node, v.Epoch, c.Owner)
			case c.FromMs != v.PrevHorizon:
				r.violate("lease", "%s: node %d epoch %d: the lease's previous horizon %d differs from the history's from_ms %d",
					f.name(), v.Node, v.Epoch, v.PrevHorizon, c.FromMs)
			}
		case Lost:
			if l := mine[key{v.Node, v.Epoch}]; l != nil {
				l.lost = &v
			} else {
				r.violate("lease", "%s lost node %d epoch %d, which it never recorded acquiring", f.name(), v.Node, v.Epoch)
			}
		case Released:
			if l := mine[key{v.Node, v.Epoch}]; l != nil {
				l.rel = &v
			} else {
				r.violate("lease", "%s released node %d epoch %d, which it never recorded acquiring", f.name(), v.Node, v.Epoch)
			}
		}
	}
	for k, l := range mine {
		if l.lost != nil {
			checkLoss(r, f, l, claims[k])
		}
	}

	lay := f.Header.Layout
	off := f.Header.OffsetMs
	for _, rec := range f.Records {
		b, ok := rec.(IDs)
		if !ok {
			continue
		}
		all = append(all, b.IDs...)
		k := key{b.Node, b.Epoch}
		l := mine[k]
		if l == nil {
			r.violate("lease", "%s minted %d IDs under node %d epoch %d, which it never recorded acquiring",
				f.name(), len(b.IDs), b.Node, b.Epoch)
			continue
		}
		if l.ids == 0 {
			l.first = b.IDs[0]
		}
		l.ids += int64(len(b.IDs))
		l.last = b.IDs[len(b.IDs)-1]
		c := claims[k]
		var lo, hi int64
		if c != nil {
			lo, hi = timefmt.FloorMs(c.AcquiredNs)-1, timefmt.FloorMs(c.endNs())+1
		}
		deadline := int64(1<<63 - 1)
		if l.lost != nil {
			deadline = timefmt.FloorMs(l.lost.DeadlineNs) + 1
		}
		epochMask := int64(1)<<lay.EpochBits - 1
		for _, id := range b.IDs {
			p := lay.Decode(bw.ID(id))
			wall := p.Ms - off
			switch {
			case p.Node != b.Node:
				r.violate("node bits", "%s: ID %d under node %d epoch %d has node bits %d", f.name(), id, b.Node, b.Epoch, p.Node)
			case lay.EpochBits > 0 && p.Epoch != b.Epoch&epochMask:
				r.violate("epoch bits", "%s: ID %d under node %d epoch %d has epoch bits %d, want %d",
					f.name(), id, b.Node, b.Epoch, p.Epoch, b.Epoch&epochMask)
			}
			if c == nil {
				continue
			}
			if wall < lo || wall > hi {
				r.violate("interval", "%s: ID %d under node %d epoch %d is stamped %s, i.e. %s less the offset, outside the claim's [%s, %s] (%s)",
					f.name(), id, b.Node, b.Epoch, fmtMs(p.Ms), fmtMs(wall), fmtNs(c.AcquiredNs), fmtNs(c.endNs()), endWhat(c))
			}
			if p.Ms <= c.FromMs || p.Ms > c.HorizonMs {
				r.violate("horizon", "%s: ID %d under node %d epoch %d is stamped %d, outside the claim's horizons (%d, %d]",
					f.name(), id, b.Node, b.Epoch, p.Ms, c.FromMs, c.HorizonMs)
			}
			if wall > deadline {
				r.violate("deadline", "%s: ID %d under node %d epoch %d is stamped %s less the offset, after the lease's deadline %s",
					f.name(), id, b.Node, b.Epoch, fmtMs(wall), fmtNs(l.lost.DeadlineNs))
			}
		}
	}
	return all
}

func endWhat(c *Claim) string {
	if c.EndedNs == 0 {
		return "still open: the lease row's expiry"
	}
	return c.EndReason
}

// checkLoss checks a loss record against the claim it lost.
func checkLoss(r *Report, f *File, l *lease, c *Claim) {
	v := l.lost
	if v.ProbeMinted != 0 {
		r.violate("probe", "%s: after losing node %d epoch %d (%s) the generator still minted ID %d",
			f.name(), v.Node, v.Epoch, CauseName(v.Cause), v.ProbeID)
	}
	if v.LostAtNs == 0 {
		r.violate("lost", "%s: node %d epoch %d: the generator refused to mint, but Lost did not close within a second",
			f.name(), v.Node, v.Epoch)
	}
	if v.Cause == CauseUnknown {
		r.violate("lost", "%s: node %d epoch %d was lost with an error that names no cause", f.name(), v.Node, v.Epoch)
	}
	if c != nil && c.endNs() != 0 && v.DeadlineNs > c.endNs()+int64(time.Millisecond) {
		r.violate("deadline", "%s: node %d epoch %d: the local deadline %s is after the claim's end %s (%s) in the database",
			f.name(), v.Node, v.Epoch, fmtNs(v.DeadlineNs), fmtNs(c.endNs()), endWhat(c))
	}
}

// checkPauses checks that every worker paused for longer than the TTL lost
// each lease it held, promptly after SIGCONT.
func checkPauses(r *Report, h History, leases map[key]*lease) {
	byInc := map[Incarnation][]*lease{}
	for _, l := range leases {
		i := Incarnation{l.file.Header.Worker, l.file.Header.Incarnation}
		byInc[i] = append(byInc[i], l)
	}
	for _, p := range h.Pauses {
		if time.Duration(p.ContNs-p.StopNs) <= h.TTL {
			continue
		}
		inc := Incarnation{p.Worker, p.Incarnation}
		died := h.Deaths[inc]
		for _, l := range byInc[inc] {
			// Held at the stop: acquired before it, not lost or released
			// before it, and not about to be lost anyway.
			if l.acq.AtNs >= p.StopNs ||
				l.lost != nil && l.lost.LostAtNs != 0 && l.lost.LostAtNs < p.StopNs ||
				l.lost != nil && l.lost.DeadlineNs < p.StopNs+int64(stopSlack) ||
				l.rel != nil && l.rel.StartNs < p.StopNs {
				continue
			}
			what := fmt.Sprintf("%s, paused %s-%s (%s), node %d epoch %d",
				l.file.name(), fmtNs(p.StopNs), fmtNs(p.ContNs), time.Duration(p.ContNs-p.StopNs).Round(time.Millisecond),
				l.acq.Node, l.acq.Epoch)
			switch {
			case l.lost == nil && l.rel != nil:
				r.violate("pause", "%s: the worker released the lease at %s instead of seeing it lost", what, fmtNs(l.rel.AtNs))
			case l.lost == nil:
				if died != 0 && died < p.ContNs+int64(recordBound) {
					continue // killed before it could record the loss
				}
				r.violate("pause", "%s: the lease was never seen lost", what)
			case l.lost.LostAtNs == 0:
				// reported by checkLoss
			case l.lost.LostAtNs < p.ContNs-int64(time.Millisecond):
				r.violate("pause", "%s: Lost closed at %s, before SIGCONT", what, fmtNs(l.lost.LostAtNs))
			case l.lost.LostAtNs > p.ContNs+int64(LostBound):
				r.violate("pause", "%s: Lost closed at %s, %s after SIGCONT", what, fmtNs(l.lost.LostAtNs),
					time.Duration(l.lost.LostAtNs-p.ContNs).Round(time.Millisecond))
			case l.lost.Cause != CauseExpired && l.lost.Cause != CauseTakeover:
				r.violate("pause", "%s: the lease was lost as %s, not expired or taken over", what, CauseName(l.lost.Cause))
			case l.lost.DeadlineNs > p.StopNs+int64(h.TTL):
				r.violate("pause", "%s: the local deadline %s is more than a TTL after the stop", what, fmtNs(l.lost.DeadlineNs))
			}
		}
	}
}

// checkLostInTime checks that Lost closed at the local deadline at the
// latest (within LostBound), or, for a worker paused across its deadline,
// within LostBound of SIGCONT.
func checkLostInTime(r *Report, h History, leases map[key]*lease) {
	for _, l := range leases {
		v := l.lost
		if v == nil || v.LostAtNs == 0 || v.LostAtNs <= v.DeadlineNs+int64(LostBound) {
			continue
		}
		late := true
		for _, p := range h.Pauses {
			if p.Worker == l.file.Header.Worker && p.Incarnation == l.file.Header.Incarnation &&
				p.StopNs <= v.LostAtNs && p.ContNs+int64(LostBound) >= v.LostAtNs && p.ContNs >= v.DeadlineNs-int64(stopSlack) {
				late = false // checked by checkPauses
			}
		}
		if late {
			r.violate("lost", "%s: node %d epoch %d: Lost closed at %s, %s after the local deadline %s",
				l.file.name(), v.Node, v.Epoch, fmtNs(v.LostAtNs),
				time.Duration(v.LostAtNs-v.DeadlineNs).Round(time.Millisecond), fmtNs(v.DeadlineNs))
		}
	}
}

// checkDuplicates sorts all and counts the IDs minted more than once; it
// names the workers of the first few.
func checkDuplicates(r *Report, files []*File, all []uint64) {
	slices.Sort(all)
	var dups []uint64
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			r.Duplicates++
			if len(dups) < 10 && (len(dups) == 0 || dups[len(dups)-1] != all[i]) {
				dups = append(dups, all[i])
			}
		}
	}
	if len(dups) == 0 {
		return
	}
	where := map[uint64][]string{}
	for _, f := range files {
		for _, rec := range f.Records {
			if b, ok := rec.(IDs); ok {
				for _, id := range b.IDs {
					if _, hit := slices.BinarySearch(dups, id); hit {
						where[id] = append(where[id], fmt.Sprintf("%s under node %d epoch %d", f.name(), b.Node, b.Epoch))
					}
				}
			}
		}
	}
	for _, id := range dups {
		sort.Strings(where[id])
		r.violate("duplicate", "ID %d was minted by %v", id, where[id])
	}
	// Every extra copy counts once in Duplicates; the rule's count is the
	// number of duplicate IDs, whatever the number of copies.
	r.ByRule["duplicate"] = int(r.Duplicates)
}
