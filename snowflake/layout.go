package snowflake

import (
	"fmt"
	"math"
	"strconv"
	"time"

	bw "github.com/bwmarrin/snowflake"
)

// Layout is the bit layout of an ID. An ID is a non-negative integer below
// 2^Width(); from its most significant bit it holds TimeBits of time units
// (TimeUnit) since Origin, NodeBits of node ID, and StepBits, whose top
// EpochBits hold the lease epoch modulo 2^EpochBits and whose remaining bits
// count IDs within a time unit.
//
// The zero value of TimeUnit and of TotalBits stands for its default, so
// that a Layout written before those fields existed keeps its meaning.
//
// A Layout is a value: each generator has its own, and none reads or writes
// github.com/bwmarrin/snowflake's package-level settings. Choose one per
// table and keep it: see the package documentation.
type Layout struct {
	// Origin is the layout's time zero, in unix milliseconds: the time
	// field counts time units since it. It must not be before 1970 nor
	// more than a day in the future; 0 is 1970-01-01. DefaultLayout's
	// origin is TwitterOrigin.
	Origin int64
	// TimeUnit is the time one step of the time field stands for: a whole
	// number of milliseconds from 1ms to MaxTimeUnit. Default (0) 1ms, as
	// bwmarrin's. A coarser unit stretches the same time bits over a
	// longer life and lets a generator mint a unit's IDs at once, at the
	// cost of the time resolution of IDs and of up to one unit's wait for
	// the next holder of a node ID.
	TimeUnit time.Duration
	// TotalBits is the width of an ID: every ID is below 2^TotalBits. At
	// most MaxTotalBits (63: the sign bit of an int64 stays 0); JSSafeBits
	// (53) keeps IDs exact in JavaScript. Default (0) 63. The time field
	// takes what NodeBits and StepBits leave.
	TotalBits uint8
	// NodeBits is the width of the node ID. DefaultLayout's is 10 (node
	// IDs 0-1023).
	NodeBits uint8
	// StepBits is the width of the step field, including EpochBits.
	// DefaultLayout's is 12 (4096 IDs per millisecond).
	StepBits uint8
	// EpochBits of the step field hold the lease epoch modulo 2^EpochBits,
	// so that IDs minted under different claims of a node ID differ even if
	// every clock lies. Default 0. It costs 2^EpochBits of throughput.
	EpochBits uint8
}

// Limits of a Layout.
const (
	// MinTimeBits is the fewest time bits a layout may leave: 2^32
	// milliseconds are about 49.7 days.
	MinTimeBits = 32
	// MinSeqBits is the fewest bits left to count IDs within a time unit.
	MinSeqBits = 1
	// MaxTotalBits is the widest layout, and the default width: 63 bits,
	// the sign bit of an int64 left 0.
	MaxTotalBits = 63
	// JSSafeBits is the widest layout whose IDs JavaScript's Number holds
	// exactly: every ID is at most Number.MAX_SAFE_INTEGER, 2^53 - 1, so
	// JSON.parse and Number read it unchanged.
	JSSafeBits = 53
	// MaxTimeUnit is the coarsest TimeUnit. A lease must fit many units
	// between renewals: the generator stamps a unit only if all of it is
	// within the horizon the lease has recorded.
	MaxTimeUnit = time.Second
)

// The generator keeps the unit in milliseconds in 32 bits (packing.unitMs).
const _ = uint32(MaxTimeUnit / time.Millisecond)

// String describes the layout, e.g. "63-bit IDs: origin 1288834974657
// (2010-11-04T01:42:54.657Z), 41 time bits of 1ms, 10 node bits, 12 step
// bits (0 epoch bits)".
func (l Layout) String() string {
	return fmt.Sprintf("%d-bit IDs: origin %s, %d time bits of %s, %d node bits, %d step bits (%d epoch bits)",
		l.Width(), exactMs(l.Start()), l.TimeBits(), l.Unit(), l.NodeBits, l.StepBits, l.EpochBits)
}

// Start returns the layout's origin, in unix milliseconds: Origin.
func (l Layout) Start() int64 { return l.Origin }

// Unit returns the time unit: TimeUnit, or 1ms if it is 0.
func (l Layout) Unit() time.Duration {
	if l.TimeUnit == 0 {
		return time.Millisecond
	}
	return l.TimeUnit
}

// Width returns the width of an ID: TotalBits, or MaxTotalBits if it is 0.
// Every ID of the layout is below 2^Width.
func (l Layout) Width() int {
	if l.TotalBits == 0 {
		return MaxTotalBits
	}
	return int(l.TotalBits)
}

// TimeBits returns the width of the time field: Width - NodeBits -
// StepBits.
func (l Layout) TimeBits() int { return l.Width() - int(l.NodeBits) - int(l.StepBits) }

// SeqBits returns the width of the counter within a time unit.
func (l Layout) SeqBits() int { return int(l.StepBits) - int(l.EpochBits) }

// MaxNode returns the largest node ID the layout holds.
func (l Layout) MaxNode() int64 { return l.packing().nodeMask }

// End returns the last unix millisecond the layout can stamp: the last
// millisecond of its last time unit, Start + 2^TimeBits * Unit - 1. The
// result is meaningless, but End does not panic, for a layout that fails
// Validate.
func (l Layout) End() int64 {
	p := l.packing()
	return l.Start() + p.maxT*int64(p.unitMs) - 1
}

// PerUnit returns how many IDs one generator can mint per time unit: the
// layout's physical cap, 2^SeqBits. The result is meaningless, but PerUnit
// does not panic, for a layout that fails Validate.
func (l Layout) PerUnit() int64 { return l.packing().seqMask + 1 }

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
	switch start := l.Start(); {
	case start < 0:
		return fmt.Errorf("layout origin %d is before 1970", start)
	case start > time.Now().Add(24*time.Hour).UnixMilli():
		return fmt.Errorf("layout origin %s is in the future", exactMs(start))
	case l.TimeUnit < 0 || l.TimeUnit%time.Millisecond != 0 || l.TimeUnit > MaxTimeUnit:
		return fmt.Errorf("layout time unit %s is not a whole number of milliseconds from 1ms to %s", l.TimeUnit, MaxTimeUnit)
	case l.Width() > MaxTotalBits:
		return fmt.Errorf("layout total bits %d: at most %d (the sign bit stays 0)", l.TotalBits, MaxTotalBits)
	case l.NodeBits < 1:
		return fmt.Errorf("layout node bits %d: at least 1 is needed", l.NodeBits)
	case l.StepBits < 1:
		return fmt.Errorf("layout step bits %d: at least 1 is needed", l.StepBits)
	case l.TimeBits() < MinTimeBits:
		return fmt.Errorf("layout node bits %d + step bits %d leave %d time bits of %d; at least %d are needed",
			l.NodeBits, l.StepBits, l.TimeBits(), l.Width(), MinTimeBits)
	case l.SeqBits() < MinSeqBits:
		return fmt.Errorf("layout epoch bits %d leave %d of the %d step bits to count IDs; at least %d is needed",
			l.EpochBits, l.SeqBits(), l.StepBits, MinSeqBits)
	case l.packing().maxT > (math.MaxInt64-start)/int64(l.packing().unitMs):
		return fmt.Errorf("layout %d time bits of %s from %s end after the last unix millisecond an int64 holds; use fewer time bits or a shorter unit",
			l.TimeBits(), l.Unit(), exactMs(start))
	}
	return nil
}

// Parts are the fields of an ID.
type Parts struct {
	// Ms is the ID's time in unix milliseconds: the first millisecond of
	// its time unit.
	Ms    int64
	Node  int64
	Epoch int64 // the lease epoch modulo 2^EpochBits (0 without epoch bits)
	Seq   int64 // the counter within the time unit
}

// Time returns the ID's time.
func (p Parts) Time() time.Time { return time.UnixMilli(p.Ms) }

// Decode splits id into its fields. It does not validate the layout or the
// ID: for a layout that fails Validate, or an ID at or above 2^Width (see
// Parse), the fields are meaningless, but Decode does not panic.
func (l Layout) Decode(id bw.ID) Parts {
	p := l.packing()
	v := int64(id)
	return Parts{
		Ms:    (v>>p.timeShift)*int64(p.unitMs) + l.Start(),
		Node:  v >> p.nodeShift & p.nodeMask,
		Epoch: v >> p.seqBits & p.epochMask,
		Seq:   v & p.seqMask,
	}
}

// Encode assembles an ID from its fields. p.Ms is rounded down to the start
// of its time unit, and p.Epoch reduced modulo 2^EpochBits; every other
// field out of range is an error.
func (l Layout) Encode(p Parts) (bw.ID, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	pk := l.packing()
	t := (p.Ms - l.Start()) / int64(pk.unitMs)
	switch {
	case p.Ms < l.Start() || t >= pk.maxT:
		return 0, fmt.Errorf("snowflake: time %d ms is outside the layout's range %d to %d (2^%d units of %s)",
			p.Ms, l.Start(), l.End(), l.TimeBits(), l.Unit())
	case p.Node < 0 || p.Node > pk.nodeMask:
		return 0, fmt.Errorf("snowflake: node ID %d is outside 0-%d (%d node bits)", p.Node, pk.nodeMask, l.NodeBits)
	case p.Epoch < 0:
		return 0, fmt.Errorf("snowflake: epoch %d is negative", p.Epoch)
	case p.Seq < 0 || p.Seq > pk.seqMask:
		return 0, fmt.Errorf("snowflake: sequence %d is outside 0-%d", p.Seq, pk.seqMask)
	}
	return pk.id(t, pk.fields(p.Node, p.Epoch), p.Seq), nil
}

// Parse reads the decimal text of an ID of the layout, as String and JSON
// write it: digits only, at most 2^Width - 1. An ID of a wider layout (a
// 63-bit ID given to a JSSafeBits layout, say) is an error that says so.
func (l Layout) Parse(s string) (bw.ID, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	if s == "" || s[0] < '0' || s[0] > '9' { // ParseInt takes a sign
		return 0, fmt.Errorf("snowflake: ID %q is not a decimal number", s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("snowflake: ID %q is not a decimal number below 2^63", s)
	}
	if w := l.Width(); v>>w != 0 {
		return 0, fmt.Errorf("snowflake: ID %d does not fit the layout: its IDs are %d bits wide, at most %d", v, w, uint64(1)<<w-1)
	}
	return bw.ID(v), nil
}

// packing is where a layout puts each field of an ID, as shifts and masks,
// and how long a time unit is:
//
//	ID = t<<timeShift | node<<nodeShift | epoch<<seqBits | seq
//
// for t the time units since the layout's origin, 0 <= t < maxT. It is the
// one place the bit arithmetic of a layout is written: Encode, Decode and
// the Generator, which keeps a copy for its fast path, all go through it.
type packing struct {
	maxT      int64  // 2^TimeBits: the first t the time field cannot hold
	nodeMask  int64  // 2^NodeBits - 1: the largest node ID
	epochMask int64  // 2^EpochBits - 1
	seqMask   int64  // 2^SeqBits - 1: the largest sequence number
	timeShift uint8  // NodeBits + StepBits
	nodeShift uint8  // StepBits
	seqBits   uint8  // SeqBits: the shift of the epoch field
	unitMs    uint32 // the time unit in milliseconds, at least 1
}

// packing returns the layout's packing. For a layout that fails Validate
// the values are meaningless, but computing them does not panic: every
// shift count is unsigned, and the unit is at least 1 ms.
func (l Layout) packing() packing {
	unit := l.Unit() / time.Millisecond
	if unit < 1 || unit > math.MaxUint32 {
		unit = 1
	}
	return packing{
		maxT:      1 << uint8(l.TimeBits()),
		nodeMask:  1<<l.NodeBits - 1,
		epochMask: 1<<l.EpochBits - 1,
		seqMask:   1<<uint8(l.SeqBits()) - 1,
		timeShift: l.NodeBits + l.StepBits,
		nodeShift: l.StepBits,
		seqBits:   uint8(l.SeqBits()),
		unitMs:    uint32(unit),
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
