package snowflake

import (
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
)

// FuzzGenerate: for any layout, lease and clock reading, New and Generate
// never panic; New accepts exactly the valid layouts that hold the node ID
// and leave a time unit after the previous horizon; an ID, when minted,
// decodes to the lease's node ID and epoch bits and to the clock's time
// unit, which begins after the previous horizon, and the next ID is
// greater.
func FuzzGenerate(f *testing.F) {
	f.Add(int64(TwitterOrigin), int64(0), uint8(0), uint8(10), uint8(12), uint8(0), int64(5), int64(3), int64(0), int64(1_800_000_000_000))
	f.Add(JS53.Origin, int64(0), JS53.TotalBits, uint8(10), uint8(2), uint8(1), int64(1023), int64(3), JS53.Origin+5, JS53.End())
	f.Add(int64(0), int64(10*time.Millisecond), uint8(53), uint8(10), uint8(6), uint8(0), int64(7), int64(1), int64(1<<40+4), int64(1<<40+9))  // the horizon's unit
	f.Add(int64(0), int64(10*time.Millisecond), uint8(53), uint8(10), uint8(6), uint8(0), int64(7), int64(1), int64(1<<40+4), int64(1<<40+10)) // the unit after it
	f.Add(int64(0), int64(0), uint8(0), uint8(16), uint8(12), uint8(3), int64(65535), int64(-9), int64(1<<40), int64(1<<40))
	f.Add(int64(0), int64(0), uint8(0), uint8(30), uint8(1), uint8(0), int64(1), int64(1), int64(0), int64(1<<32-1))
	f.Add(int64(TwitterOrigin), int64(0), uint8(0), uint8(10), uint8(12), uint8(2), int64(1024), int64(1), int64(0), int64(-1<<62))
	f.Add(int64(0), int64(3*time.Millisecond), uint8(0), uint8(28), uint8(1), uint8(0), int64(3), int64(1), int64(3<<34-4), int64(3<<34-1)) // the last unit
	f.Fuzz(func(t *testing.T, origin, unit int64, totalBits, nodeBits, stepBits, epochBits uint8, node, leaseEpoch, prev, clockMs int64) {
		lay := Layout{Origin: origin, TimeUnit: time.Duration(unit), TotalBits: totalBits, NodeBits: nodeBits, StepBits: stepBits, EpochBits: epochBits}
		valid := lay.Validate() == nil && node >= 0 && node <= lay.MaxNode()
		if valid && lay.Unit() > 16*time.Millisecond {
			t.Skip("a clock behind a long unit waits for up to the unit")
		}
		wall := time.UnixMilli(clockMs)
		l := newFake(node, leaseEpoch, prev)
		defer l.release()
		g, err := newGenerator(l, WithLayout(lay), WithClock(func() time.Time { return wall }), WithMaxWait(max(ShortestMaxWait, lay.Unit())))
		u := int64(lay.Unit() / time.Millisecond)
		switch {
		case err != nil && !valid:
			if !errors.Is(err, nodeid.ErrInvalidOption) {
				t.Fatalf("New rejected bad input without ErrInvalidOption: %v", err)
			}
			return
		case err != nil && prev > lay.End()-u:
			if !errors.Is(err, nodeid.ErrTimeOverflow) {
				t.Fatalf("New after a horizon %d in or past the layout's last unit (end %d): %v", prev, lay.End(), err)
			}
			return
		case err != nil:
			t.Fatalf("New rejected layout %+v, node %d, horizon %d: %v", lay, node, prev, err)
		case !valid:
			t.Fatalf("New accepted layout %+v with node %d", lay, node)
		}

		ms := wall.UnixMilli()
		unitStart := ms - (ms-lay.Start())%u // for ms >= Start
		id, err := g.Generate()
		switch {
		case ms > lay.End():
			if !errors.Is(err, nodeid.ErrTimeOverflow) {
				t.Fatalf("clock %d past the layout's end %d: %v", ms, lay.End(), err)
			}
			return
		case ms < lay.Start() || unitStart <= prev:
			if !errors.Is(err, nodeid.ErrClockBehind) {
				t.Fatalf("clock %d before origin %d, or in a unit from %d not after horizon %d: %v", ms, lay.Start(), unitStart, prev, err)
			}
			return
		case err != nil:
			t.Fatalf("Generate at %d after horizon %d: %v", ms, prev, err)
		}
		want := Parts{Ms: unitStart, Node: node, Epoch: leaseEpoch & (1<<epochBits - 1)}
		if p := lay.Decode(id); id < 0 || id>>lay.Width() != 0 || p != want {
			t.Fatalf("ID %d decodes to %+v; want %+v", id, p, want)
		}
		id2, err := g.Generate()
		if err != nil || id2 <= id || lay.Decode(id2) != (Parts{Ms: unitStart, Node: node, Epoch: want.Epoch, Seq: 1}) {
			t.Fatalf("second ID %d (%+v), %v after %d", id2, lay.Decode(id2), err, id)
		}
		if h := l.sealOnly(); h != unitStart+u-1 {
			t.Fatalf("the seal returned %d; want %d, the last millisecond of the unit from %d", h, unitStart+u-1, unitStart)
		}
	})
}
