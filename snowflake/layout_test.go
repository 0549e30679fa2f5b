package snowflake

import (
	"fmt"
	"slices"
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
	if DefaultLayout.TimeBits() != 41 || DefaultLayout.PerUnit() != 4096 || DefaultLayout.MaxNode() != 1023 {
		t.Fatalf("default layout: %d time bits, %d per ms, max node %d", DefaultLayout.TimeBits(), DefaultLayout.PerUnit(), DefaultLayout.MaxNode())
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
		{Layout{Origin: time.Now().Add(48 * time.Hour).UnixMilli(), NodeBits: 10, StepBits: 12}, "origin"},
		{Layout{Origin: time.Now().Add(48 * time.Hour).UnixMilli(), NodeBits: 10, StepBits: 12}, "future"},
		{Layout{TimeUnit: -time.Millisecond, NodeBits: 10, StepBits: 12}, "time unit -1ms"},
		{Layout{TimeUnit: time.Microsecond, NodeBits: 10, StepBits: 12}, "time unit 1µs is not a whole number of milliseconds"},
		{Layout{TimeUnit: 2 * time.Second, NodeBits: 10, StepBits: 12}, "time unit 2s is not a whole number of milliseconds from 1ms to 1s"},
		{Layout{TotalBits: 64, NodeBits: 10, StepBits: 12}, "total bits 64: at most 63"},
		{Layout{TotalBits: 255, NodeBits: 10, StepBits: 12}, "total bits 255"},
		{Layout{NodeBits: 0, StepBits: 12}, "node bits 0"},
		{Layout{NodeBits: 10, StepBits: 0}, "step bits 0"},
		{Layout{NodeBits: 20, StepBits: 12}, "leave 31 time bits of 63"},
		{Layout{TotalBits: 40, NodeBits: 10, StepBits: 2}, "leave 28 time bits of 40"},
		{Layout{NodeBits: 10, StepBits: 4, EpochBits: 4}, "leave 0 of the 4 step bits"},
		{Layout{TimeUnit: time.Second, NodeBits: 1, StepBits: 1}, "61 time bits of 1s from 0 (1970-01-01T00:00:00.000Z) end after the last unix millisecond"},
	} {
		err := c.l.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.l, err, c.want)
		}
	}
	for _, l := range []Layout{
		DefaultLayout, JS53,
		{NodeBits: 16, StepBits: 12},
		{Origin: 1, NodeBits: 1, StepBits: 1},
		{Origin: 7, NodeBits: 10, StepBits: 12},
		{NodeBits: 10, StepBits: 12, EpochBits: 11},
		{TimeUnit: 10 * time.Millisecond, TotalBits: JSSafeBits, NodeBits: 10, StepBits: 6},
		{Origin: TwitterOrigin, TimeUnit: time.Second, NodeBits: 10, StepBits: 12},
		{TimeUnit: time.Second, NodeBits: 1, StepBits: 9}, // 53 time bits of 1 s: ends in the year 285 million
		{TotalBits: 34, NodeBits: 1, StepBits: 1},
	} {
		if err := l.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", l, err)
		}
	}
}

// DefaultLayout's origin is TwitterOrigin, bwmarrin's time zero.
func TestDefaultLayoutOrigin(t *testing.T) {
	if DefaultLayout.Origin != TwitterOrigin || DefaultLayout.Start() != TwitterOrigin {
		t.Fatalf("DefaultLayout: Origin %d, Start() %d; want %d", DefaultLayout.Origin, DefaultLayout.Start(), TwitterOrigin)
	}
}

// The presets, by name: what a command's --layout flag offers.
func TestPresets(t *testing.T) {
	if got := Presets(); !slices.Equal(got, []string{"bwmarrin", "js53"}) {
		t.Fatalf("Presets() = %q", got)
	}
	for _, c := range []struct {
		name string
		want Layout
	}{{"bwmarrin", DefaultLayout}, {"js53", JS53}, {"JS53", JS53}, {"BwMarrin", DefaultLayout}} {
		l, err := Preset(c.name)
		if err != nil || l != c.want || l.Validate() != nil {
			t.Errorf("Preset(%q) = %+v, %v; want %+v", c.name, l, err, c.want)
		}
	}
	for _, name := range []string{"", "js", "js53 ", "sonyflake"} {
		_, err := Preset(name)
		if want := fmt.Sprintf("snowflake: layout %q is not a preset; the presets are bwmarrin, js53", name); err == nil || err.Error() != want {
			t.Errorf("Preset(%q) = %v; want %q", name, err, want)
		}
	}
}

// JS53's capacity, as its documentation states it; its largest ID is
// Number.MAX_SAFE_INTEGER.
func TestJS53Capacity(t *testing.T) {
	l := JS53
	origin := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.UnixMilli(l.End()).UTC()
	years := end.Sub(origin).Hours() / 24 / 365.2425
	if l.Start() != origin.UnixMilli() || l.Width() != JSSafeBits || l.TimeBits() != 41 || l.Unit() != time.Millisecond ||
		l.MaxNode() != 1023 || l.PerUnit() != 4 || end.Format(time.DateOnly) != "2094-09-07" || years < 69.6 || years > 69.7 {
		t.Fatalf("JS53: origin %d, %d bits, %d time bits of %s, max node %d, %d per unit, ends %s (%.2f years)",
			l.Start(), l.Width(), l.TimeBits(), l.Unit(), l.MaxNode(), l.PerUnit(), end, years)
	}
	largest, err := l.Encode(Parts{Ms: l.End(), Node: l.MaxNode(), Seq: l.PerUnit() - 1})
	if err != nil || largest != 1<<53-1 {
		t.Fatalf("JS53's largest ID = %d, %v; want 2^53-1", largest, err)
	}
	if _, err := l.Encode(Parts{Ms: l.End() + 1}); err == nil || !strings.Contains(err.Error(), "outside the layout's range") {
		t.Fatalf("Encode after the end: %v", err)
	}
}

// A coarse time unit: Encode rounds a time down to its unit, Decode gives
// the unit's first millisecond, End is the last millisecond of the last
// unit, and PerUnit counts IDs per unit.
func TestCoarseUnitEncodeDecode(t *testing.T) {
	l := Layout{Origin: 1_700_000_000_000, TimeUnit: 10 * time.Millisecond, TotalBits: JSSafeBits, NodeBits: 10, StepBits: 6}
	if l.TimeBits() != 37 || l.PerUnit() != 64 || l.End() != l.Start()+(1<<37)*10-1 {
		t.Fatalf("%s: %d time bits, %d per unit, end %d", l, l.TimeBits(), l.PerUnit(), l.End())
	}
	for _, c := range []struct{ ms, want int64 }{
		{l.Start(), l.Start()},
		{l.Start() + 9, l.Start()},
		{l.Start() + 10, l.Start() + 10},
		{l.Start() + 12_345, l.Start() + 12_340},
		{l.End(), l.End() - 9},
	} {
		id, err := l.Encode(Parts{Ms: c.ms, Node: 1023, Seq: 63})
		if err != nil {
			t.Fatal(err)
		}
		if p := l.Decode(id); p != (Parts{Ms: c.want, Node: 1023, Seq: 63}) {
			t.Errorf("Decode(Encode(time %d)) = %+v; want time %d", c.ms, p, c.want)
		}
	}
	if id, _ := l.Encode(Parts{Ms: l.End(), Node: 1023, Seq: 63}); id != 1<<53-1 {
		t.Errorf("the largest ID is %d; want 2^53-1", id)
	}
	for _, ms := range []int64{l.Start() - 1, l.End() + 1} {
		if _, err := l.Encode(Parts{Ms: ms}); err == nil || !strings.Contains(err.Error(), "2^37 units of 10ms") {
			t.Errorf("Encode(time %d) = %v", ms, err)
		}
	}
}

// Parse reads an ID's decimal text and refuses an ID wider than the layout.
func TestLayoutParse(t *testing.T) {
	for _, c := range []struct {
		l    Layout
		s    string
		want bw.ID
	}{
		{JS53, "0", 0},
		{JS53, "9007199254740991", 1<<53 - 1},
		{JS53, "007", 7},
		{DefaultLayout, "9223372036854775807", 1<<63 - 1},
		{DefaultLayout, "1816231948463198208", 1816231948463198208},
	} {
		if id, err := c.l.Parse(c.s); err != nil || id != c.want {
			t.Errorf("%s: Parse(%q) = %d, %v; want %d", c.l, c.s, id, err, c.want)
		}
	}
	for _, c := range []struct {
		l       Layout
		s, want string
	}{
		{JS53, "9007199254740992", "ID 9007199254740992 does not fit the layout: its IDs are 53 bits wide, at most 9007199254740991"},
		{JS53, "1816231948463198208", "does not fit the layout"},
		{DefaultLayout, "9223372036854775808", `ID "9223372036854775808" is not a decimal number below 2^63`},
		{DefaultLayout, "-1", `ID "-1" is not a decimal number`},
		{DefaultLayout, "+1", `ID "+1" is not a decimal number`},
		{DefaultLayout, "", `ID "" is not a decimal number`},
		{DefaultLayout, "1e3", `ID "1e3" is not a decimal number`},
		{DefaultLayout, " 1", `ID " 1" is not a decimal number`},
		{Layout{NodeBits: 10}, "1", "step bits 0"},
	} {
		if id, err := c.l.Parse(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse(%q) = %d, %v; want %q", c.l, c.s, id, err, c.want)
		}
	}
}

// FuzzLayoutRoundTrip: for any layout, Validate and the methods that do
// not validate (Decode, End, MaxNode, PerUnit, Start, String) never panic,
// and for a valid one Decode(Encode(p)) == p with the time rounded down to
// its unit and the epoch reduced modulo 2^EpochBits; the ID fits the
// layout's width, and Parse reads its decimal text back.
func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add(DefaultLayout.Start(), int64(0), uint8(0), uint8(10), uint8(12), uint8(0), int64(1700000000000), int64(5), int64(7), int64(99))
	f.Add(JS53.Origin, int64(0), JS53.TotalBits, uint8(10), uint8(2), uint8(0), JS53.End(), int64(1023), int64(0), int64(3))
	f.Add(int64(0), int64(10*time.Millisecond), uint8(53), uint8(10), uint8(6), uint8(1), int64(1<<40+7), int64(3), int64(5), int64(31))
	f.Add(int64(0), int64(0), uint8(0), uint8(16), uint8(12), uint8(3), int64(1<<34), int64(65535), int64(12), int64(511))
	f.Add(int64(0), int64(0), uint8(0), uint8(10), uint8(4), uint8(5), int64(1<<40), int64(1), int64(1), int64(1))        // more epoch bits than step bits
	f.Add(int64(0), int64(0), uint8(0), uint8(200), uint8(100), uint8(0), int64(-1), int64(1), int64(1), int64(1))        // wider than 63 bits
	f.Add(int64(-5), int64(-3), uint8(99), uint8(0), uint8(0), uint8(255), int64(1<<62), int64(-1), int64(-1), int64(-1)) // every field out of range
	f.Add(int64(0), int64(time.Second), uint8(0), uint8(1), uint8(1), uint8(0), int64(1), int64(1), int64(1), int64(1))   // ends past int64
	f.Add(int64(0), int64(1<<62), uint8(0), uint8(10), uint8(12), uint8(0), int64(1), int64(1), int64(1), int64(1))       // a unit of 146 years
	f.Fuzz(func(t *testing.T, origin, unit int64, totalBits, nodeBits, stepBits, epochBits uint8, ms, node, lepoch, seq int64) {
		l := Layout{Origin: origin, TimeUnit: time.Duration(unit), TotalBits: totalBits,
			NodeBits: nodeBits, StepBits: stepBits, EpochBits: epochBits}
		_, _, _, _, _ = l.Decode(bw.ID(ms)), l.End(), l.MaxNode(), l.PerUnit(), l.Start()
		_ = l.String()
		p := Parts{Ms: ms, Node: node, Epoch: lepoch, Seq: seq}
		if l.Validate() != nil {
			if _, err := l.Encode(p); err == nil {
				t.Fatalf("Encode accepted invalid layout %+v", l)
			}
			if _, err := l.Parse("1"); err == nil {
				t.Fatalf("Parse accepted invalid layout %+v", l)
			}
			return
		}
		id, err := l.Encode(p)
		if err != nil {
			return
		}
		if id < 0 || id>>l.Width() != 0 {
			t.Fatalf("ID %d outside [0, 2^%d) from %+v", id, l.Width(), l)
		}
		unitMs := int64(l.Unit() / time.Millisecond)
		want := Parts{Ms: ms - (ms-l.Start())%unitMs, Node: node, Epoch: lepoch % (1 << l.EpochBits), Seq: seq}
		if got := l.Decode(id); got != want || got.Ms < l.Start() || got.Ms+unitMs-1 > l.End() {
			t.Fatalf("layout %+v: Decode(Encode(%+v)) = %+v; want %+v", l, p, got, want)
		}
		if back, err := l.Parse(id.String()); err != nil || back != id {
			t.Fatalf("layout %+v: Parse(%q) = %d, %v", l, id.String(), back, err)
		}
	})
}

// FuzzLayoutParse: for any text and width, Parse never panics, and what it
// accepts is an ID of the layout whose decimal text is the input's.
func FuzzLayoutParse(f *testing.F) {
	for _, s := range []string{"0", "9007199254740991", "9007199254740992", "-1", "+5", "", "00012", "9223372036854775808", "1_000", "٣"} {
		f.Add(uint8(53), s)
	}
	f.Add(uint8(0), "9223372036854775807")
	f.Fuzz(func(t *testing.T, width uint8, s string) {
		l := Layout{TotalBits: width, NodeBits: 10, StepBits: 2}
		id, err := l.Parse(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "snowflake: ") {
				t.Fatalf("Parse(%q) error %q", s, err)
			}
			return
		}
		if id < 0 || id>>l.Width() != 0 || strings.TrimLeft(s, "0") != strings.TrimLeft(id.String(), "0") {
			t.Fatalf("%s: Parse(%q) = %d", l, s, id)
		}
	})
}

// FuzzPreset: any name either is a preset, in some case, and gives a valid
// layout, or is an error that quotes it.
func FuzzPreset(f *testing.F) {
	for _, s := range []string{"bwmarrin", "js53", "JS53", "", "js5", "ｊs53"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		l, err := Preset(name)
		known := slices.ContainsFunc(Presets(), func(p string) bool { return strings.EqualFold(p, name) })
		switch {
		case known && (err != nil || l.Validate() != nil):
			t.Fatalf("Preset(%q) = %+v, %v", name, l, err)
		case !known && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", name))):
			t.Fatalf("Preset(%q) = %+v, %v; want an error quoting the name", name, l, err)
		}
	})
}

// String writes the origin as its number and its UTC time to the
// millisecond, as the error messages write every time, and every width.
func TestLayoutString(t *testing.T) {
	for _, c := range []struct {
		l    Layout
		want string
	}{
		{DefaultLayout, "63-bit IDs: origin 1288834974657 (2010-11-04T01:42:54.657Z), 41 time bits of 1ms, 10 node bits, 12 step bits (0 epoch bits)"},
		{JS53, "53-bit IDs: origin 1735689600000 (2025-01-01T00:00:00.000Z), 41 time bits of 1ms, 10 node bits, 2 step bits (0 epoch bits)"},
		{Layout{Origin: 1735689600000, TimeUnit: 10 * time.Millisecond, TotalBits: 53, NodeBits: 10, StepBits: 6, EpochBits: 1},
			"53-bit IDs: origin 1735689600000 (2025-01-01T00:00:00.000Z), 37 time bits of 10ms, 10 node bits, 6 step bits (1 epoch bits)"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("String() = %q; want %q", got, c.want)
		}
	}
}
