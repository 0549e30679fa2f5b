package audit

import (
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
)

// keyer turns an ID into its sort key and back into its fields: the key
// holds, from the top, the node ID, the time field, the sequence and the
// epoch bits, so that sorting by key groups the IDs of a node field in
// time order, puts an ID's copies side by side, and an ID's step beside
// the same step with other epoch bits. The key is a permutation of the
// ID's bits: two IDs have the same key only if they are the same ID.
type keyer struct {
	l                             idlayout.IDLayout
	dec                           *idlayout.Decoder
	nodeShift, timeShift, seqBits uint8
	epochBits                     uint8
	timeMask, seqMask, epochMask  uint64
	unitMs                        int64
}

func newKeyer(l idlayout.IDLayout) *keyer {
	step := uint8(l.StepBits)
	return &keyer{
		l: l, dec: l.Decoder(),
		nodeShift: uint8(l.TimeBits()) + step, timeShift: step,
		seqBits: uint8(l.SeqBits()), epochBits: l.EpochBits,
		timeMask:  1<<uint8(l.TimeBits()) - 1,
		seqMask:   1<<uint8(l.SeqBits()) - 1,
		epochMask: 1<<l.EpochBits - 1,
		unitMs:    int64(l.Unit() / time.Millisecond),
	}
}

// key returns the sort key of id, an ID of the layout.
func (k *keyer) key(id int64) uint64 {
	p := k.dec.Decode(id)
	return uint64(p.Node)<<k.nodeShift | uint64(p.Units)<<k.timeShift | uint64(p.Seq)<<k.epochBits | uint64(p.Epoch)
}

// fields are the parts of a key.
type fields struct {
	node, units, seq, epoch int64
}

func (k *keyer) fields(key uint64) fields {
	return fields{
		node:  int64(key >> k.nodeShift),
		units: int64(key >> k.timeShift & k.timeMask),
		seq:   int64(key >> k.epochBits & k.seqMask),
		epoch: int64(key & k.epochMask),
	}
}

// ms returns the first unix millisecond of a time unit.
func (k *keyer) ms(units int64) int64 { return k.l.Start() + units*k.unitMs }

// seen is where a process was last seen on the node field being judged.
type seen struct {
	units, id int64
}

// judge reads the sorted records of an audit, one pass, and builds its
// report: the duplicates, and per node field the evidence of two users.
type judge struct {
	k        *keyer
	names    []string // the --by values, by index; nil without --by
	window   int64    // --within, in time units
	examples int      // how many examples of each kind a node field keeps

	rep Report
	cur *NodeReport // the node field being judged; nil before the first
	ev  bool        // cur has evidence
	// open is the evidence range of cur still open, in units.
	open             [2]int64
	haveOpen         bool
	prev             record
	prevF            fields
	havePrev, inDups bool
	last             map[uint32]seen
	involved         map[uint32]bool
	kinds            map[string]int // examples kept per kind, for cur
}

func newJudge(k *keyer, names []string, within time.Duration, examples int) *judge {
	unit := k.l.Unit()
	return &judge{
		k: k, names: names, examples: examples,
		window:   int64((within + unit - 1) / unit),
		last:     map[uint32]seen{},
		involved: map[uint32]bool{},
		kinds:    map[string]int{},
	}
}

// add judges the next record, in key order.
func (j *judge) add(r record) {
	f := j.k.fields(r.key)
	j.rep.IDs++
	if j.cur == nil || f.node != j.cur.Node {
		j.endNode()
		j.cur = &NodeReport{Node: f.node, Ranges: []Range{}, Examples: []Example{}}
		if j.k.l.SwapNodeHalves {
			nf := j.k.dec.Decode(r.id).NodeField
			j.cur.NodeField = &nf
		}
		j.rep.NodesSeen++
		j.havePrev = false
	}
	j.cur.IDs++
	if j.havePrev {
		p, pf := j.prev, j.prevF
		switch {
		case p.key == r.key:
			j.rep.Duplicates++
			j.cur.Duplicates++
			if !j.inDups {
				j.evidence("duplicate", f.units, f.units, []int64{r.id}, []uint32{p.by, r.by})
			} else {
				j.involve(r.by)
			}
			j.inDups = true
		case pf.units == f.units && pf.seq == f.seq:
			j.inDups = false
			j.cur.RepeatedSteps++
			j.evidence("repeated step", f.units, f.units, []int64{p.id, r.id}, []uint32{p.by, r.by})
		default:
			j.inDups = false
		}
		if j.names != nil && p.by != r.by {
			if pf.units == f.units {
				j.cur.TwoPlaces++
				if p.key != r.key {
					j.evidence("two places", f.units, f.units, []int64{p.id, r.id}, []uint32{p.by, r.by})
				}
			} else if s, ok := j.last[r.by]; ok && f.units-s.units <= j.window {
				j.cur.TwoPlaces++
				j.evidence("two places", s.units, f.units, []int64{s.id, p.id, r.id}, []uint32{r.by, p.by, r.by})
			}
		}
	}
	if j.names != nil {
		j.last[r.by] = seen{units: f.units, id: r.id}
	}
	j.prev, j.prevF, j.havePrev = r, f, true
}

// evidence records that two processes used the node field between the
// time units from and to, with the IDs that show it. Evidence less than
// --within after the range still open extends it.
func (j *judge) evidence(kind string, from, to int64, ids []int64, by []uint32) {
	j.ev = true
	for _, b := range by {
		j.involve(b)
	}
	switch {
	case !j.haveOpen:
		j.open, j.haveOpen = [2]int64{from, to}, true
	case from <= j.open[1]+max(1, j.window):
		j.open[0], j.open[1] = min(j.open[0], from), max(j.open[1], to)
	default:
		j.closeRange()
		j.open, j.haveOpen = [2]int64{from, to}, true
	}
	if j.kinds[kind] >= j.examples {
		return
	}
	j.kinds[kind]++
	ms := j.k.ms(to)
	ex := Example{Kind: kind, Time: time.UnixMilli(ms).UTC(), UnixMs: ms}
	for _, id := range ids {
		ex.IDs = append(ex.IDs, formatID(id))
	}
	if j.names != nil {
		for _, b := range by {
			ex.By = append(ex.By, j.names[b])
		}
	}
	j.cur.Examples = append(j.cur.Examples, ex)
}

func (j *judge) involve(b uint32) {
	if j.names != nil && !j.involved[b] {
		j.involved[b] = true
		if len(j.cur.By) < maxListed {
			j.cur.By = append(j.cur.By, j.names[b])
		}
	}
}

// maxListed bounds the ranges and processes a node field's report lists.
const maxListed = 10

func (j *judge) closeRange() {
	if !j.haveOpen {
		return
	}
	j.cur.RangeCount++
	if len(j.cur.Ranges) < maxListed {
		from, to := j.k.ms(j.open[0]), j.k.ms(j.open[1]+1)-1
		j.cur.Ranges = append(j.cur.Ranges, Range{
			From: time.UnixMilli(from).UTC(), To: time.UnixMilli(to).UTC(), FromMs: from, ToMs: to,
		})
	}
	j.haveOpen = false
}

// endNode closes the node field being judged, keeping its report if it
// has evidence.
func (j *judge) endNode() {
	if j.cur == nil {
		return
	}
	j.closeRange()
	if j.ev {
		j.rep.Nodes = append(j.rep.Nodes, *j.cur)
	}
	j.cur, j.ev, j.inDups = nil, false, false
	clear(j.last)
	clear(j.involved)
	clear(j.kinds)
}

// report ends the pass and returns the report.
func (j *judge) report() Report {
	j.endNode()
	if j.rep.Nodes == nil {
		j.rep.Nodes = []NodeReport{}
	}
	return j.rep
}
