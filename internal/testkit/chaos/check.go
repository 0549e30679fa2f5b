package chaos

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid/admin"
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
	Timeline    int64 // the server's timeline when the claim was made
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
	Timeline    int64 // the server's timeline at the row's last write by a holder
}

// FailoverEvent is one failover of the database that the nemesis caused.
type FailoverEvent struct {
	Kind    FaultKind // KillLeader, Switchover or Failover
	StartNs int64     // wall clock just before the nemesis acted
	// PromotedNs is when a new primary was first seen taking writes on a
	// later timeline; the old primary took none after it.
	PromotedNs int64
	Timeline   int64 // the new primary's timeline then
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
	Claims    []Claim               // every claim of the history table
	Rows      []Row                 // every row of the lease table, after the run
	Files     []*File               // every worker's output
	Pauses    []Pause               // every SIGSTOP the nemesis sent
	Deaths    map[Incarnation]int64 // when the test killed a worker process (SIGKILL), unix ns
	Failovers []FailoverEvent       // every failover, in order
	Timeline  int64                 // the server's timeline after the run
	// TTL is the workers' lease TTL, and the table's maximum TTL, from
	// which a failover's quarantine is counted.
	TTL time.Duration
}

// promotedAfter reports whether a failover's new primary took writes after
// unix ns: a claim made (committed) before that may be lost.
func (h *History) promotedAfter(ns int64) bool {
	for _, f := range h.Failovers {
		if f.PromotedNs > ns {
			return true
		}
	}
	return false
}

// failoverTo returns the failover that brought timeline tl about: the first
// whose new primary is on tl or a later one; nil if none is.
func (h *History) failoverTo(tl int64) *FailoverEvent {
	for i := range h.Failovers {
		if h.Failovers[i].Timeline >= tl {
			return &h.Failovers[i]
		}
	}
	return nil
}

// Quarantine is how long after a failover's new timeline is first seen a
// row last written on an earlier timeline stays unclaimable: the table's
// maximum TTL and a tenth.
func Quarantine(maxTTL time.Duration) time.Duration {
	ms := maxTTL.Milliseconds()
	return time.Duration(ms+ms/10) * time.Millisecond
}

// Report is the verdict of Check.
type Report struct {
	IDs      int64
	Leases   int // leases recorded by the workers
	Losses   int // of which lost
	Releases int // of which released by the worker
	Claims   int // claims in the history table
	// LostInFailover counts the leases that the workers recorded and the
	// history lacks: claims lost in a failover.
	LostInFailover int
	// LateExcused counts the losses whose Lost closed more than LostBound
	// after the deadline, but within it of the firing of the worker's
	// control timer, which was late across the deadline too.
	LateExcused int
	// FirstClaim is, for each failover, the time from its start to the
	// first claim made on its new primary, and FirstQuarantined to the
	// first of a row last written before the failover, which waited for the
	// quarantine; -1 if there was none. A claim comes sooner than the
	// quarantine only on a row whose lease lived on through the failover,
	// renewed on the new primary, and was released.
	FirstClaim, FirstQuarantined []time.Duration
	Duplicates                   int64
	Violations                   int            // every broken rule but duplicates
	ByRule                       map[string]int // violations (and duplicates) per rule
	Details                      []string       // the first maxDetails violations, described
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
	// the least and the greatest millisecond stamped (math.MaxInt64 and 0
	// while none is)
	minMs, maxMs int64
	// the history lacks the claim, and a failover may have lost it
	lostInFailover bool
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
//     no lease was lost as evicted (nobody evicts), nor as lost in a
//     failover unless a failover's new primary took writes after the claim
//     began;
//   - every lease a worker recorded is a claim of the history table with
//     that worker's owner name, and no claim was recorded by two workers;
//   - per node ID, the claims have epochs 1, 2, 3, ..., each ended before the
//     next began, and each began from the horizon the previous one left;
//   - every lease row agrees with the latest claim of its node ID;
//   - Lost closed no later than LostBound after the local deadline, or, for
//     a worker paused across the deadline, after SIGCONT; or, if the
//     worker's control timer (due every ControlEvery) was due before that
//     instant and fired after it, no later than LostBound after it fired:
//     the loaded machine delayed every timer of the process as much;
//   - every worker paused for longer than the TTL saw each lease it held
//     lost, within LostBound after SIGCONT, as expired or taken over (or
//     lost in a failover, if one came after the claim);
//   - per node ID, the epochs of the leases the workers recorded strictly
//     increase: a lease acquired (Acquire returned) before another's
//     Acquire was called has the lower epoch;
//   - per node ID, every ID of a lease is stamped before every ID of the
//     leases of higher epochs.
//
// Failovers (History.Failovers) relax three rules, and only where the new
// primary cannot know better:
//
//   - A lease that the history lacks is accepted as lost in a failover
//     (Report.LostInFailover) only when a failover's new primary took
//     writes after the lease's Acquire was called. Its IDs must still lie
//     after the lease's previous horizon, after the call of Acquire (less
//     the offset), before its deadline, at or below the from_ms of every
//     claim of the node ID with a higher epoch, and be unique.
//   - A claim made on a row last written on an earlier timeline jumps to
//     an epoch of a new era (the database clock's seconds since
//     store.EraOrigin, at the claim, in the high 31 bits) plus the count
//     (one more than the claim before it, in the low 32 bits), and starts
//     from a horizon at or after the previous one and at least
//     Quarantine(TTL) after the start of the failover that made its
//     timeline. (The table's generation counts the timelines here: the
//     table is made on timeline 1, and every failover is seen by a lease
//     statement before the next.)
//   - A claim ended as expired by such a claim, or still open on a row
//     last written before the run's last timeline, may have had renewals
//     or its release lost: its end in the database may precede the
//     holder's, so its IDs are bound by the holder's own end (its
//     deadline, its call of Release, or its death) instead.
func Check(h History) Report {
	var r Report
	r.Claims = len(h.Claims)
	claims, stale := checkClaims(&r, &h)
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
		all = checkFile(&r, &h, f, claims, stale, leases, all)
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
		if l.lostInFailover {
			r.LostInFailover++
		}
	}
	checkLostClaims(&r, h.Claims, leases)
	checkEpochOrder(&r, leases)
	checkStampOrder(&r, leases)
	checkPauses(&r, h, leases)
	checkLostInTime(&r, h, leases)
	checkDuplicates(&r, h.Files, all)
	r.FirstClaim, r.FirstQuarantined = firstClaims(&h)
	return r
}

// firstClaims returns, for each failover, the time from its start to the
// first claim of the history made on its new primary, and to the first
// such claim of a row last written before the failover (an epoch jumped to
// the new timeline): the end of the quarantine; -1 if there is none.
func firstClaims(h *History) (first, quarantined []time.Duration) {
	since := func(f FailoverEvent, ns int64) time.Duration {
		if ns == 0 {
			return -1
		}
		return time.Duration(ns - f.StartNs)
	}
	for i, f := range h.Failovers {
		next := int64(1<<63 - 1) // the next failover's new timeline
		if i+1 < len(h.Failovers) {
			next = h.Failovers[i+1].Timeline
		}
		var any, jumped int64
		for _, c := range h.Claims {
			if c.Timeline < f.Timeline || c.Timeline >= next || c.AcquiredNs < f.StartNs {
				continue
			}
			if any == 0 || c.AcquiredNs < any {
				any = c.AcquiredNs
			}
			if c.Epoch>>32 >= eraAt(f.StartNs) && (jumped == 0 || c.AcquiredNs < jumped) {
				jumped = c.AcquiredNs
			}
		}
		first, quarantined = append(first, since(f, any)), append(quarantined, since(f, jumped))
	}
	return first, quarantined
}

// jumped reports whether epoch e follows epoch prev across a failover: on a
// higher timeline in its high 32 bits, with prev's count plus one in its
// low 32 bits.
func jumped(prev, e int64) bool {
	const low = 1<<32 - 1
	return e>>32 > prev>>32 && e&low == (prev+1)&low
}

// checkClaims checks each node ID's time line and indexes the claims. It
// returns the claims whose end in the database may precede their holder's
// (see Check).
func checkClaims(r *Report, h *History) (map[key]*Claim, map[key]bool) {
	sorted := slices.Clone(h.Claims)
	slices.SortFunc(sorted, func(a, b Claim) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Epoch, b.Epoch))
	})
	rowTimeline := map[int64]int64{}
	for _, row := range h.Rows {
		rowTimeline[row.Node] = row.Timeline
	}
	out := make(map[key]*Claim, len(sorted))
	stale := map[key]bool{}
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
		if f := h.failoverTo(c.Timeline); c.Timeline > 1 && (f == nil || c.AcquiredNs < f.StartNs) {
			r.violate("claims", "node %d epoch %d was claimed on timeline %d at %s, before any failover to it began",
				c.Node, c.Epoch, c.Timeline, fmtNs(c.AcquiredNs))
		}
		first := i == 0 || sorted[i-1].Node != c.Node
		var prev int64 // the epoch before c's
		if !first {
			prev = sorted[i-1].Epoch
		}
		jump := jumped(prev, c.Epoch)
		switch {
		case c.Epoch == prev+1:
		case !jump && first:
			r.violate("claims", "node %d: the first claim in the history has epoch %d, not 1", c.Node, c.Epoch)
		case !jump:
			r.violate("claims", "node %d: epoch %d follows epoch %d", c.Node, c.Epoch, prev)
		default:
			checkJump(r, h, c, prev)
		}
		if !first {
			p := &sorted[i-1]
			if p.EndedNs == 0 {
				r.violate("claims", "node %d: epoch %d began at %s while epoch %d was still open",
					c.Node, c.Epoch, fmtNs(c.AcquiredNs), p.Epoch)
			} else if c.AcquiredNs < p.EndedNs {
				// acquired_at is read after the claim's row lock, so after the
				// commit of the release or the expiry that freed the row.
				r.violate("claims", "node %d: epoch %d began at %s, before epoch %d ended at %s (%s)",
					c.Node, c.Epoch, fmtNs(c.AcquiredNs), p.Epoch, fmtNs(p.EndedNs), p.EndReason)
			}
			switch {
			case !jump && c.FromMs != p.HorizonMs:
				r.violate("claims", "node %d: epoch %d starts from horizon %d, but epoch %d left %d",
					c.Node, c.Epoch, c.FromMs, p.Epoch, p.HorizonMs)
			case jump && c.FromMs < p.HorizonMs:
				r.violate("claims", "node %d: epoch %d starts from horizon %d, before the %d that epoch %d left",
					c.Node, c.Epoch, c.FromMs, p.HorizonMs, p.Epoch)
			}
			if jump && p.EndReason == "expired" {
				stale[key{p.Node, p.Epoch}] = true
			}
		}
		if c.EndedNs == 0 && c.ExpiresNs == 0 {
			r.violate("claims", "node %d epoch %d is open but the lease row has no expiry", c.Node, c.Epoch)
		}
		last := i == len(sorted)-1 || sorted[i+1].Node != c.Node
		if last && c.EndedNs == 0 && rowTimeline[c.Node] < h.Timeline {
			stale[key{c.Node, c.Epoch}] = true
		}
	}
	return out, stale
}

// checkJump checks claim c, whose epoch jumped from prev across a failover:
// a failover made its timeline, its era is of a time after the failover
// began and not after the claim, and it starts from a horizon no earlier
// than the quarantine's end.
func checkJump(r *Report, h *History, c *Claim, prev int64) {
	tl, era := c.Timeline, c.Epoch>>32
	f := h.failoverTo(tl)
	switch {
	case f == nil:
		r.violate("claims", "node %d: epoch %#x follows epoch %#x on timeline %d, but no failover made that timeline",
			c.Node, c.Epoch, prev, tl)
	case c.AcquiredNs < f.StartNs:
		r.violate("claims", "node %d: epoch %#x of timeline %d was claimed at %s, before the failover to it began at %s",
			c.Node, c.Epoch, tl, fmtNs(c.AcquiredNs), fmtNs(f.StartNs))
	case era < eraAt(f.StartNs) || era > eraAt(c.AcquiredNs)+1:
		r.violate("claims", "node %d: epoch %#x of timeline %d, claimed at %s, has era %d, not of a time between the failover's start at %s and the claim",
			c.Node, c.Epoch, tl, fmtNs(c.AcquiredNs), era, fmtNs(f.StartNs))
	case c.FromMs < floorMs(f.StartNs)+Quarantine(h.TTL).Milliseconds():
		r.violate("quarantine", "node %d: epoch %#x, the first claim of its row on timeline %d, starts from horizon %s,"+
			" less than the quarantine of %s after the failover began at %s",
			c.Node, c.Epoch, tl, fmtMs(c.FromMs), Quarantine(h.TTL), fmtNs(f.StartNs))
	}
}

// eraAt is the era of epochs claimed at unix nanosecond ns.
func eraAt(ns int64) int64 { return ns/int64(time.Second) - admin.EraOrigin }

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

// ownEnd returns the latest wall time at which the holder of l may have
// stamped an ID, by its own record: its local deadline if it lost the
// lease, its call of Release if it released it, its death if it was
// killed; 0 if it recorded none of these.
func ownEnd(h *History, l *lease) int64 {
	switch {
	case l.lost != nil:
		return l.lost.DeadlineNs
	case l.rel != nil:
		return l.rel.StartNs
	}
	return h.Deaths[Incarnation{l.file.Header.Worker, l.file.Header.Incarnation}]
}

// checkFile checks the records of one worker file and appends its IDs to
// all.
func checkFile(r *Report, h *History, f *File, claims map[key]*Claim, stale map[key]bool, leases map[key]*lease, all []uint64) []uint64 {
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
			l := &lease{file: f, acq: &v, minMs: math.MaxInt64}
			leases[k], mine[k] = l, l
			c := claims[k]
			switch {
			case c == nil && h.promotedAfter(v.ClaimedBeforeNs):
				l.lostInFailover = true
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
			checkLoss(r, h, f, l, claims[k], stale[k])
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
		// The bounds of the IDs: the claim's interval and horizons in the
		// database; for a claim lost in a failover, the lease's own.
		c := claims[k]
		check := c != nil || l.lostInFailover
		var lo, hi, from, horizon int64
		var what string
		switch {
		case c != nil:
			lo, hi, from, horizon = floorMs(c.AcquiredNs)-1, floorMs(c.endNs())+1, c.FromMs, c.HorizonMs
			what = "the claim's [" + fmtNs(c.AcquiredNs) + ", " + fmtNs(c.endNs()) + "] (" + endWhat(c) + ")"
			if end := ownEnd(h, l); stale[k] && end != 0 && floorMs(end)+1 > hi {
				hi = floorMs(end) + 1
				what = "the claim's [" + fmtNs(c.AcquiredNs) + ", " + fmtNs(end) + "] (its end in the database, " +
					fmtNs(c.endNs()) + ", may be stale after a failover: the holder's own end)"
			}
		case l.lostInFailover:
			lo, hi, from, horizon = floorMs(l.acq.ClaimedBeforeNs)-1, 1<<63-1, l.acq.PrevHorizon, 1<<63-1
			what = "the lease's [" + fmtNs(l.acq.ClaimedBeforeNs) + ", ...) (the claim was lost in a failover)"
		}
		deadline := int64(1<<63 - 1)
		if l.lost != nil {
			deadline = floorMs(l.lost.DeadlineNs) + 1
		}
		epochMask := int64(1)<<lay.EpochBits - 1
		for _, id := range b.IDs {
			p := lay.Decode(bw.ID(id))
			l.minMs, l.maxMs = min(l.minMs, p.Ms), max(l.maxMs, p.Ms)
			wall := p.Ms - off
			switch {
			case p.Node != b.Node:
				r.violate("node bits", "%s: ID %d under node %d epoch %d has node bits %d", f.name(), id, b.Node, b.Epoch, p.Node)
			case lay.EpochBits > 0 && p.Epoch != b.Epoch&epochMask:
				r.violate("epoch bits", "%s: ID %d under node %d epoch %d has epoch bits %d, want %d",
					f.name(), id, b.Node, b.Epoch, p.Epoch, b.Epoch&epochMask)
			}
			if !check {
				continue
			}
			if wall < lo || wall > hi {
				r.violate("interval", "%s: ID %d under node %d epoch %d is stamped %s, i.e. %s less the offset, outside %s",
					f.name(), id, b.Node, b.Epoch, fmtMs(p.Ms), fmtMs(wall), what)
			}
			if p.Ms <= from || p.Ms > horizon {
				r.violate("horizon", "%s: ID %d under node %d epoch %d is stamped %d, outside the horizons (%d, %d] of %s",
					f.name(), id, b.Node, b.Epoch, p.Ms, from, horizon, what)
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

// checkLoss checks a loss record against the claim it lost (nil if the
// history lacks it); stale says that the claim's end in the database may
// precede the holder's (see Check).
func checkLoss(r *Report, h *History, f *File, l *lease, c *Claim, stale bool) {
	v := l.lost
	if v.ProbeMinted != 0 {
		r.violate("probe", "%s: after losing node %d epoch %d (%s) the generator still minted ID %d",
			f.name(), v.Node, v.Epoch, CauseName(v.Cause), v.ProbeID)
	}
	if v.LostAtNs == 0 {
		r.violate("lost", "%s: node %d epoch %d: the generator refused to mint, but Lost did not close within %s",
			f.name(), v.Node, v.Epoch, LostWait)
	}
	switch {
	case v.Cause == CauseUnknown:
		r.violate("lost", "%s: node %d epoch %d was lost with an error that names no cause", f.name(), v.Node, v.Epoch)
	case v.Cause == CauseEvicted:
		r.violate("lost", "%s: node %d epoch %d was lost as evicted, but nobody evicts in a chaos run", f.name(), v.Node, v.Epoch)
	case v.Cause == CauseFailover && !h.promotedAfter(l.acq.ClaimedBeforeNs):
		r.violate("failover", "%s: node %d epoch %d was lost in a failover, but no failover's new primary took writes after Acquire was called at %s",
			f.name(), v.Node, v.Epoch, fmtNs(l.acq.ClaimedBeforeNs))
	}
	if c != nil && !stale && c.endNs() != 0 && v.DeadlineNs > c.endNs()+int64(time.Millisecond) {
		r.violate("deadline", "%s: node %d epoch %d: the local deadline %s is after the claim's end %s (%s) in the database",
			f.name(), v.Node, v.Epoch, fmtNs(v.DeadlineNs), fmtNs(c.endNs()), endWhat(c))
	}
}

// checkLostClaims checks the leases whose claims were lost in a failover
// against the claims of the history that followed them: each of their IDs
// is stamped at or below the from_ms of every claim of the node ID with a
// higher epoch, so strictly before every ID of that claim.
func checkLostClaims(r *Report, cs []Claim, leases map[key]*lease) {
	for _, l := range leases {
		if !l.lostInFailover || l.ids == 0 {
			continue
		}
		for _, c := range cs {
			if c.Node == l.acq.Node && c.Epoch > l.acq.Epoch && l.maxMs > c.FromMs {
				r.violate("failover", "%s: node %d epoch %d, lost in a failover, stamped %s, after the from_ms %s of the later claim epoch %#x (%s)",
					l.file.name(), l.acq.Node, l.acq.Epoch, fmtMs(l.maxMs), fmtMs(c.FromMs), c.Epoch, c.Owner)
			}
		}
	}
}

// byNode groups the leases by node ID.
func byNode(leases map[key]*lease) map[int64][]*lease {
	out := map[int64][]*lease{}
	for _, l := range leases {
		out[l.acq.Node] = append(out[l.acq.Node], l)
	}
	return out
}

// checkEpochOrder checks that, per node ID, a lease acquired before
// another's Acquire was called has the lower epoch: the claims committed
// in that order, and a claim after a failover gets an epoch above any the
// old primary could have granted.
func checkEpochOrder(r *Report, leases map[key]*lease) {
	for node, ls := range byNode(leases) {
		got := slices.Clone(ls)
		slices.SortFunc(got, func(a, b *lease) int { return cmp.Compare(a.acq.AtNs, b.acq.AtNs) })
		called := slices.Clone(ls)
		slices.SortFunc(called, func(a, b *lease) int { return cmp.Compare(a.acq.ClaimedBeforeNs, b.acq.ClaimedBeforeNs) })
		var top *lease // of the leases acquired so far, the one of the highest epoch
		i := 0
		for _, b := range called {
			for ; i < len(got) && got[i].acq.AtNs < b.acq.ClaimedBeforeNs; i++ {
				if top == nil || got[i].acq.Epoch > top.acq.Epoch {
					top = got[i]
				}
			}
			if top != nil && top.acq.Epoch >= b.acq.Epoch {
				r.violate("epoch order", "node %d: %s acquired epoch %#x at %s, before %s called Acquire at %s and got epoch %#x",
					node, top.file.name(), top.acq.Epoch, fmtNs(top.acq.AtNs), b.file.name(), fmtNs(b.acq.ClaimedBeforeNs), b.acq.Epoch)
			}
		}
	}
}

// checkStampOrder checks that, per node ID, every ID of a lease is stamped
// before every ID of the leases of higher epochs: the horizon chain.
func checkStampOrder(r *Report, leases map[key]*lease) {
	for node, ls := range byNode(leases) {
		slices.SortFunc(ls, func(a, b *lease) int { return cmp.Compare(a.acq.Epoch, b.acq.Epoch) })
		var prev *lease
		for _, l := range ls {
			if l.ids == 0 {
				continue
			}
			if prev != nil && l.minMs <= prev.maxMs {
				r.violate("order", "node %d: %s stamped %s under epoch %#x, not after the %s that %s stamped under epoch %#x",
					node, l.file.name(), fmtMs(l.minMs), l.acq.Epoch, fmtMs(prev.maxMs), prev.file.name(), prev.acq.Epoch)
			}
			prev = l
		}
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
			case l.lost.LostAtNs > p.ContNs+int64(LostBound) && l.lost.LostAtNs > stalledUntil(l.file, p.ContNs)+int64(LostBound):
				r.violate("pause", "%s: Lost closed at %s, %s after SIGCONT%s", what, fmtNs(l.lost.LostAtNs),
					time.Duration(l.lost.LostAtNs-p.ContNs).Round(time.Millisecond), stallNote(p.ContNs, stalledUntil(l.file, p.ContNs)))
			case l.lost.Cause != CauseExpired && l.lost.Cause != CauseTakeover &&
				(l.lost.Cause != CauseFailover || !h.promotedAfter(l.acq.ClaimedBeforeNs)):
				r.violate("pause", "%s: the lease was lost as %s, not expired or taken over", what, CauseName(l.lost.Cause))
			case l.lost.DeadlineNs > p.StopNs+int64(h.TTL):
				r.violate("pause", "%s: the local deadline %s is more than a TTL after the stop", what, fmtNs(l.lost.DeadlineNs))
			}
		}
	}
}

// checkLostInTime checks that Lost closed at the local deadline at the
// latest (within LostBound, counted from the end of a stall of the
// worker's timers across the deadline, if the control timer shows one),
// or, for a worker paused across its deadline, within LostBound of
// SIGCONT.
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
		if !late {
			continue
		}
		if resumed := stalledUntil(l.file, v.DeadlineNs); v.LostAtNs > resumed+int64(LostBound) {
			r.violate("lost", "%s: node %d epoch %d: Lost closed at %s, %s after the local deadline %s%s",
				l.file.name(), v.Node, v.Epoch, fmtNs(v.LostAtNs),
				time.Duration(v.LostAtNs-v.DeadlineNs).Round(time.Millisecond), fmtNs(v.DeadlineNs), stallNote(v.DeadlineNs, resumed))
		} else {
			r.LateExcused++
		}
	}
}

// stalledUntil returns when the timers of the worker of f ran again after
// instant at: the firing of its control timer if that was due at or before
// at and fired after it (the process ran no timer in between: a loaded
// machine), else at itself.
func stalledUntil(f *File, at int64) int64 {
	until := at
	for _, rec := range f.Records {
		if v, ok := rec.(Late); ok && v.DueNs <= at && v.FiredNs > until {
			until = v.FiredNs
		}
	}
	return until
}

// stallNote describes a stall of a worker's timers from at to resumed, if
// there was one.
func stallNote(at, resumed int64) string {
	if resumed == at {
		return " (the control timer ran in time)"
	}
	return fmt.Sprintf(" (the control timer, late across it, fired at %s)", fmtNs(resumed))
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

// floorMs returns unix nanoseconds ns in whole milliseconds, rounded down,
// as the generator stamps them.
func floorMs(ns int64) int64 {
	if ns < 0 {
		return (ns+1)/1e6 - 1
	}
	return ns / 1e6
}
