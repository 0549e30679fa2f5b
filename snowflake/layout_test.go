package snowflake

import (
	"strings"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"
)

// An ID of the default layout decodes with bwmarrin's own accessors, which
// read bwmarrin's default package settings.
func TestDefaultLayoutIsBwmarrins(t *testing.T) {
	if bw.Epoch != 1288834974657 || bw.NodeBits != 10 || bw.StepBits != 12 {
		t.Fatal("bwmarrin's package settings are not its defaults")
	}
	if DefaultLayout.TimeBits() != 41 || DefaultLayout.PerMillisecond() != 4096 || DefaultLayout.MaxNode() != 1023 {
		t.Fatalf("default layout: %d time bits, %d per ms, max node %d", DefaultLayout.TimeBits(), DefaultLayout.PerMillisecond(), DefaultLayout.MaxNode())
	}
	ms := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMilli()
	id, err := DefaultLayout.Encode(Parts{Ms: ms, Node: 777, Seq: 4095})
	if err != nil {
		t.Fatal(err)
	}
	if id.Time() != ms || id.Node() != 777 || id.Step() != 4095 {
		t.Fatalf("bwmarrin decodes %d as time %d node %d step %d", id, id.Time(), id.Node(), id.Step())
	}
	if p := DefaultLayout.Decode(id); p != (Parts{Ms: ms, Node: 777, Seq: 4095}) {
		t.Fatalf("Decode = %+v", p)
	}
}

func TestLayoutValidate(t *testing.T) {
	for _, c := range []struct {
		l    Layout
		want string
	}{
		{Layout{Origin: -1, NodeBits: 10, StepBits: 12}, "origin -1 is before 1970"},
		{Layout{Epoch: -1, NodeBits: 10, StepBits: 12}, "epoch -1 is before 1970"},
		{Layout{Origin: time.Now().Add(48 * time.Hour).UnixMilli(), NodeBits: 10, StepBits: 12}, "origin"},
		{Layout{Epoch: time.Now().Add(48 * time.Hour).UnixMilli(), NodeBits: 10, StepBits: 12}, "future"},
		{Layout{Origin: TwitterOrigin, Epoch: TwitterOrigin + 1, NodeBits: 10, StepBits: 12}, "differ"},
		{Layout{NodeBits: 0, StepBits: 12}, "node bits 0"},
		{Layout{NodeBits: 10, StepBits: 0}, "step bits 0"},
		{Layout{NodeBits: 20, StepBits: 12}, "leave 31 time bits"},
		{Layout{NodeBits: 10, StepBits: 4, EpochBits: 4}, "leave 0 of the 4 step bits"},
	} {
		err := c.l.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.l, err, c.want)
		}
	}
	for _, l := range []Layout{DefaultLayout, {NodeBits: 16, StepBits: 12}, {Epoch: 1, NodeBits: 1, StepBits: 1}, {Origin: 7, Epoch: 7, NodeBits: 10, StepBits: 12}, {NodeBits: 10, StepBits: 12, EpochBits: 11}} {
		if err := l.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", l, err)
		}
	}
}

// FuzzLayoutRoundTrip: for any layout, Validate and the methods that do
// not validate (Decode, End, MaxNode, PerMillisecond, Start, String) never panic,
// and for a valid one Decode(Encode(p)) == p with the epoch reduced modulo
// 2^EpochBits.
func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add(DefaultLayout.Start(), int64(0), uint8(10), uint8(12), uint8(0), int64(1700000000000), int64(5), int64(7), int64(99))
	f.Add(int64(0), int64(TwitterOrigin), uint8(10), uint8(12), uint8(0), int64(1700000000000), int64(5), int64(7), int64(99)) // the deprecated field
	f.Add(int64(0), int64(0), uint8(16), uint8(12), uint8(3), int64(1<<34), int64(65535), int64(12), int64(511))
	f.Add(int64(5), int64(6), uint8(10), uint8(12), uint8(0), int64(7), int64(1), int64(1), int64(1))         // origin and epoch differ
	f.Add(int64(0), int64(0), uint8(10), uint8(4), uint8(5), int64(1<<40), int64(1), int64(1), int64(1))      // more epoch bits than step bits
	f.Add(int64(0), int64(0), uint8(200), uint8(100), uint8(0), int64(-1), int64(1), int64(1), int64(1))      // wider than 63 bits
	f.Add(int64(-5), int64(0), uint8(0), uint8(0), uint8(255), int64(1<<62), int64(-1), int64(-1), int64(-1)) // every field out of range
	f.Fuzz(func(t *testing.T, origin, epoch int64, nodeBits, stepBits, epochBits uint8, ms, node, lepoch, seq int64) {
		l := Layout{Origin: origin, Epoch: epoch, NodeBits: nodeBits, StepBits: stepBits, EpochBits: epochBits}
		_, _, _, _, _ = l.Decode(bw.ID(ms)), l.End(), l.MaxNode(), l.PerMillisecond(), l.Start()
		_ = l.String()
		if l.Validate() != nil {
			if _, err := l.Encode(Parts{Ms: ms, Node: node, Epoch: lepoch, Seq: seq}); err == nil {
				t.Fatalf("Encode accepted invalid layout %+v", l)
			}
			return
		}
		id, err := l.Encode(Parts{Ms: ms, Node: node, Epoch: lepoch, Seq: seq})
		if err != nil {
			return
		}
		if id < 0 {
			t.Fatalf("negative ID %d from %+v", id, l)
		}
		want := Parts{Ms: ms, Node: node, Epoch: lepoch % (1 << l.EpochBits), Seq: seq}
		if got := l.Decode(id); got != want {
			t.Fatalf("layout %+v: Decode(Encode(%+v)) = %+v", l, want, got)
		}
	})
}

// String writes the origin as its number and its UTC time to the
// millisecond, as the error messages write every time.
func TestLayoutString(t *testing.T) {
	const want = "origin 1288834974657 (2010-11-04T01:42:54.657Z), 41 time bits, 10 node bits, 12 step bits (0 epoch bits)"
	if got := DefaultLayout.String(); got != want {
		t.Fatalf("DefaultLayout.String() = %q; want %q", got, want)
	}
}

// The origin is Origin when it is set, else the deprecated Epoch: a layout
// written with Epoch mints, encodes and decodes as the same layout written
// with Origin.
func TestOriginAndDeprecatedEpoch(t *testing.T) {
	if TwitterEpoch != TwitterOrigin || DefaultLayout.Start() != TwitterOrigin || DefaultLayout.Epoch != TwitterOrigin {
		t.Fatalf("TwitterEpoch %d, DefaultLayout.Start() %d, DefaultLayout.Epoch %d; want %d", TwitterEpoch, DefaultLayout.Start(), DefaultLayout.Epoch, TwitterOrigin)
	}
	const x = 1_600_000_000_000
	old := Layout{Epoch: x, NodeBits: 12, StepBits: 10, EpochBits: 2}
	for _, l := range []Layout{{Origin: x, NodeBits: 12, StepBits: 10, EpochBits: 2}, {Origin: x, Epoch: x, NodeBits: 12, StepBits: 10, EpochBits: 2}} {
		if l.Start() != x || old.Start() != x || l.End() != old.End() {
			t.Fatalf("%+v: start %d, end %d; %+v: start %d, end %d", l, l.Start(), l.End(), old, old.Start(), old.End())
		}
		p := Parts{Ms: x + 12345, Node: 4000, Epoch: 3, Seq: 200}
		a, errA := l.Encode(p)
		b, errB := old.Encode(p)
		if errA != nil || errB != nil || a != b || l.Decode(a) != p || old.Decode(a) != p {
			t.Fatalf("Encode(%+v): %d, %v with Origin; %d, %v with Epoch", p, a, errA, b, errB)
		}
		clock := WithClock(func() time.Time { return time.UnixMilli(x + 999) })
		ga := mustNew(t, newFake(77, 5, 0), WithLayout(l), clock)
		gb := mustNew(t, newFake(77, 5, 0), WithLayout(old), clock)
		if ia, ib := mustGenerate(t, ga), mustGenerate(t, gb); ia != ib || ia.Ms != x+999 {
			t.Fatalf("minted %+v with Origin, %+v with Epoch", ia, ib)
		}
	}
	// Origin wins: a layout whose Origin is set ignores an Epoch of 0.
	if l := (Layout{Origin: x}); l.Start() != x {
		t.Fatalf("Start() = %d; want Origin %d", l.Start(), x)
	}
}
