package snowflake

import (
	"errors"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
)

// FuzzGenerate: for any layout, lease and clock reading, New and Generate
// never panic; New accepts exactly the valid layouts that hold the node ID
// and the previous horizon; an ID, when minted, decodes to the lease's node
// ID and epoch bits and to a stamp after the previous horizon, and the next
// ID is greater.
func FuzzGenerate(f *testing.F) {
	f.Add(int64(TwitterOrigin), uint8(10), uint8(12), uint8(0), int64(5), int64(3), int64(0), int64(1_800_000_000_000))
	f.Add(int64(0), uint8(16), uint8(12), uint8(3), int64(65535), int64(-9), int64(1<<40), int64(1<<40))
	f.Add(int64(0), uint8(30), uint8(1), uint8(0), int64(1), int64(1), int64(0), int64(1<<32-1))
	f.Add(int64(TwitterOrigin), uint8(10), uint8(12), uint8(2), int64(1024), int64(1), int64(0), int64(-1<<62))
	f.Fuzz(func(t *testing.T, origin int64, nodeBits, stepBits, epochBits uint8, node, leaseEpoch, prev, clockMs int64) {
		lay := Layout{Origin: origin, NodeBits: nodeBits, StepBits: stepBits, EpochBits: epochBits}
		wall := time.UnixMilli(clockMs)
		l := newFake(node, leaseEpoch, prev)
		defer l.release()
		g, err := newGenerator(l, WithLayout(lay), WithClock(func() time.Time { return wall }), WithMaxWait(ShortestMaxWait))
		valid := lay.Validate() == nil && node >= 0 && node <= lay.MaxNode()
		switch {
		case err != nil && !valid:
			if !errors.Is(err, nodeid.ErrInvalidOption) {
				t.Fatalf("New rejected bad input without ErrInvalidOption: %v", err)
			}
			return
		case err != nil && prev >= lay.End():
			if !errors.Is(err, nodeid.ErrTimeOverflow) {
				t.Fatalf("New after a horizon %d past the layout's end: %v", prev, err)
			}
			return
		case err != nil:
			t.Fatalf("New rejected layout %+v, node %d, horizon %d: %v", lay, node, prev, err)
		case !valid:
			t.Fatalf("New accepted layout %+v with node %d", lay, node)
		}

		ms := wall.UnixMilli()
		id, err := g.Generate()
		switch {
		case ms > lay.End():
			if !errors.Is(err, nodeid.ErrTimeOverflow) {
				t.Fatalf("clock %d past the layout's end %d: %v", ms, lay.End(), err)
			}
			return
		case ms <= prev || ms < lay.Start():
			if !errors.Is(err, nodeid.ErrClockBehind) {
				t.Fatalf("clock %d at or behind horizon %d or origin %d: %v", ms, prev, lay.Start(), err)
			}
			return
		case err != nil:
			t.Fatalf("Generate at %d after horizon %d: %v", ms, prev, err)
		}
		want := Parts{Ms: ms, Node: node, Epoch: leaseEpoch & (1<<epochBits - 1)}
		if p := lay.Decode(id); id < 0 || p != want {
			t.Fatalf("ID %d decodes to %+v; want %+v", id, p, want)
		}
		id2, err := g.Generate()
		if err != nil || id2 <= id || lay.Decode(id2) != (Parts{Ms: ms, Node: node, Epoch: want.Epoch, Seq: 1}) {
			t.Fatalf("second ID %d (%+v), %v after %d", id2, lay.Decode(id2), err, id)
		}
	})
}
