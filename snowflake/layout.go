package snowflake

import (
	"fmt"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid/internal/timefmt"
)

// Layout is the bit layout of an ID. From the most significant bit: one sign
// bit (always 0), TimeBits of milliseconds since Origin, NodeBits of node ID,
// and StepBits, whose top EpochBits hold the lease epoch modulo 2^EpochBits
// and whose remaining bits count IDs within a millisecond.
//
// A Layout is a value: each generator has its own, and none reads or writes
// github.com/bwmarrin/snowflake's package-level settings.
type Layout struct {
	// Origin is the layout's time zero, in unix milliseconds: the time
	// field counts milliseconds since it. It must not be before 1970 nor
	// more than a day in the future. When Origin is 0 the deprecated Epoch
	// field is the origin (0 too: 1970-01-01); DefaultLayout's is
	// TwitterOrigin.
	Origin int64
	// NodeBits is the width of the node ID. Default 10 (node IDs 0-1023).
	NodeBits uint8
	// StepBits is the width of the step field, including EpochBits.
	// Default 12 (4096 IDs per millisecond).
	StepBits uint8
	// EpochBits of the step field hold the lease epoch modulo 2^EpochBits,
	// so that IDs minted under different claims of a node ID differ even if
	// every clock lies. Default 0. It costs 2^EpochBits of throughput.
	EpochBits uint8

	// Epoch is the former name of Origin. When both are non-zero they must
	// be equal (Validate fails otherwise), and Origin is the origin.
	//
	// Deprecated: set Origin; "epoch" names the lease's fencing token.
	// Start returns the origin a layout has, whichever field holds it.
	Epoch int64
}

// Limits of a Layout.
const (
	// MinTimeBits is the fewest time bits a layout may leave: 2^32 ms is
	// about 49.7 days.
	MinTimeBits = 32
	// MinSeqBits is the fewest bits left to count IDs within a millisecond.
	MinSeqBits = 1
)

// DefaultLayout is bit for bit the layout of github.com/bwmarrin/snowflake
// with its default settings: 41 time bits from TwitterOrigin, 10 node
// bits, 12 step bits.
//
// It is a literal, not read from bwmarrin's package variables, so that a
// program that changes those does not change this package. For one release
// it keeps its origin in the deprecated Epoch field, so that programs that
// read DefaultLayout.Epoch keep working; Start returns it. A copy given
// another Origin must clear Epoch, or Validate reports the two.
var DefaultLayout = Layout{Epoch: TwitterOrigin, NodeBits: 10, StepBits: 12}

// TwitterOrigin is DefaultLayout's origin in unix milliseconds:
// 2010-11-04 01:42:54.657 UTC, the time zero of Twitter's Snowflake and of
// github.com/bwmarrin/snowflake.
const TwitterOrigin = 1288834974657

// TwitterEpoch is TwitterOrigin.
//
// Deprecated: use TwitterOrigin; "epoch" names the lease's fencing token.
const TwitterEpoch = TwitterOrigin

// String describes the layout, e.g. "origin 1288834974657
// (2010-11-04T01:42:54.657Z), 41 time bits, 10 node bits, 12 step bits (0
// epoch bits)".
func (l Layout) String() string {
	return fmt.Sprintf("origin %s, %d time bits, %d node bits, %d step bits (%d epoch bits)",
		timefmt.Ms(l.Start()), l.TimeBits(), l.NodeBits, l.StepBits, l.EpochBits)
}

// Start returns the layout's origin, in unix milliseconds: Origin, or the
// deprecated Epoch if Origin is 0.
func (l Layout) Start() int64 {
	if l.Origin != 0 {
		return l.Origin
	}
	return l.Epoch
}

// TimeBits returns the width of the time field: 63 - NodeBits - StepBits.
func (l Layout) TimeBits() int { return 63 - int(l.NodeBits) - int(l.StepBits) }

// SeqBits returns the width of the per-millisecond counter.
func (l Layout) SeqBits() int { return int(l.StepBits) - int(l.EpochBits) }

// MaxNode returns the largest node ID the layout holds.
func (l Layout) MaxNode() int64 { return l.packing().nodeMask }

// End returns the last unix millisecond the layout can stamp:
// Start + 2^TimeBits - 1. The result is meaningless, but End does not
// panic, for a layout that fails Validate.
func (l Layout) End() int64 { return l.Start() + l.packing().maxT - 1 }

// PerMillisecond returns how many IDs one generator can mint per
// millisecond: the layout's physical cap. The result is meaningless, but
// PerMillisecond does not panic, for a layout that fails Validate.
func (l Layout) PerMillisecond() int64 { return l.packing().seqMask + 1 }

// Validate checks the layout and names the first field that breaks a rule.
func (l Layout) Validate() error {
	if err := l.check(); err != nil {
		return fmt.Errorf("snowflake: %w", err)
	}
	return nil
}

// check is Validate without the package's name, for the callers that put
// the error in a context of their own (WithLayout).
func (l Layout) check() error {
	origin := "origin"
	if l.Origin == 0 {
		origin = "epoch" // the deprecated field holds it: name the one set
	}
	switch start := l.Start(); {
	case l.Origin != 0 && l.Epoch != 0 && l.Origin != l.Epoch:
		return fmt.Errorf("layout origin %s and epoch %s differ: Epoch is the deprecated name of Origin; set Origin only",
			timefmt.Ms(l.Origin), timefmt.Ms(l.Epoch))
	case start < 0:
		return fmt.Errorf("layout %s %d is before 1970", origin, start)
	case start > time.Now().Add(24*time.Hour).UnixMilli():
		return fmt.Errorf("layout %s %s is in the future", origin, timefmt.Ms(start))
	case l.NodeBits < 1:
		return fmt.Errorf("layout node bits %d: at least 1 is needed", l.NodeBits)
	case l.StepBits < 1:
		return fmt.Errorf("layout step bits %d: at least 1 is needed", l.StepBits)
	case l.TimeBits() < MinTimeBits:
		return fmt.Errorf("layout node bits %d + step bits %d leave %d time bits; at least %d are needed",
			l.NodeBits, l.StepBits, l.TimeBits(), MinTimeBits)
	case l.SeqBits() < MinSeqBits:
		return fmt.Errorf("layout epoch bits %d leave %d of the %d step bits to count IDs; at least %d is needed",
			l.EpochBits, l.SeqBits(), l.StepBits, MinSeqBits)
	}
	return nil
}

// Parts are the fields of an ID.
type Parts struct {
	Ms    int64 // unix milliseconds
	Node  int64
	Epoch int64 // the lease epoch modulo 2^EpochBits (0 without epoch bits)
	Seq   int64 // the counter within the millisecond
}

// Time returns the ID's time.
func (p Parts) Time() time.Time { return time.UnixMilli(p.Ms) }

// Decode splits id into its fields. It does not validate the layout: for a
// layout that fails Validate the fields are meaningless, but Decode does
// not panic.
func (l Layout) Decode(id bw.ID) Parts {
	p := l.packing()
	v := int64(id)
	return Parts{
		Ms:    v>>p.timeShift + l.Start(),
		Node:  v >> p.nodeShift & p.nodeMask,
		Epoch: v >> p.seqBits & p.epochMask,
		Seq:   v & p.seqMask,
	}
}

// Encode assembles an ID from its fields. p.Epoch is reduced modulo
// 2^EpochBits; every other field out of range is an error.
func (l Layout) Encode(p Parts) (bw.ID, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	pk := l.packing()
	t := p.Ms - l.Start()
	switch {
	case t < 0 || t >= pk.maxT:
		return 0, fmt.Errorf("snowflake: time %d ms is outside the layout's range (%d + [0, 2^%d))", p.Ms, l.Start(), l.TimeBits())
	case p.Node < 0 || p.Node > pk.nodeMask:
		return 0, fmt.Errorf("snowflake: node ID %d is outside 0-%d (%d node bits)", p.Node, pk.nodeMask, l.NodeBits)
	case p.Epoch < 0:
		return 0, fmt.Errorf("snowflake: epoch %d is negative", p.Epoch)
	case p.Seq < 0 || p.Seq > pk.seqMask:
		return 0, fmt.Errorf("snowflake: sequence %d is outside 0-%d", p.Seq, pk.seqMask)
	}
	return pk.id(t, pk.fields(p.Node, p.Epoch), p.Seq), nil
}

// packing is where a layout puts each field of an ID, as shifts and masks:
//
//	ID = t<<timeShift | node<<nodeShift | epoch<<seqBits | seq
//
// for t the milliseconds since the layout's origin, 0 <= t < maxT. It is the
// one place the bit arithmetic of a layout is written: Encode, Decode and
// the Generator, which keeps a copy for its fast path, all go through it.
type packing struct {
	maxT      int64 // 2^TimeBits: the first t the time field cannot hold
	nodeMask  int64 // 2^NodeBits - 1: the largest node ID
	epochMask int64 // 2^EpochBits - 1
	seqMask   int64 // 2^SeqBits - 1: the largest sequence number
	timeShift uint8 // NodeBits + StepBits
	nodeShift uint8 // StepBits
	seqBits   uint8 // SeqBits: the shift of the epoch field
}

// packing returns the layout's packing. For a layout that fails Validate
// the values are meaningless, but computing them does not panic: every
// shift count is unsigned.
func (l Layout) packing() packing {
	return packing{
		maxT:      1 << uint8(l.TimeBits()),
		nodeMask:  1<<l.NodeBits - 1,
		epochMask: 1<<l.EpochBits - 1,
		seqMask:   1<<uint8(l.SeqBits()) - 1,
		timeShift: l.NodeBits + l.StepBits,
		nodeShift: l.StepBits,
		seqBits:   uint8(l.SeqBits()),
	}
}

// fields returns the node and epoch fields of an ID: node must be in range;
// epoch is reduced modulo 2^EpochBits.
func (p *packing) fields(node, epoch int64) int64 {
	return node<<p.nodeShift | (epoch&p.epochMask)<<p.seqBits
}

// id packs an ID from t, in range, the node and epoch fields (see fields)
// and the low SeqBits of seq. It is on the generator's fast path: the
// shift count is masked so that the compiler needs no check of it.
func (p *packing) id(t, fields, seq int64) bw.ID {
	return bw.ID(t<<(p.timeShift&63) | fields | seq&p.seqMask)
}
