package snowflake

import (
	"fmt"
	"strings"
)

// TwitterOrigin is DefaultLayout's origin in unix milliseconds:
// 2010-11-04 01:42:54.657 UTC, the time zero of Twitter's Snowflake and of
// github.com/bwmarrin/snowflake.
const TwitterOrigin = 1288834974657

// DefaultLayout, the preset "bwmarrin", is bit for bit the layout of
// github.com/bwmarrin/snowflake with its default settings:
//
//	origin  TwitterOrigin, 2010-11-04T01:42:54.657Z
//	time    41 bits of 1 ms: until 2080-07-10, 69.7 years
//	node    10 bits: node IDs 0-1023
//	step    12 bits: 4096 IDs per millisecond per node ID
//
// Its IDs are 63 bits wide and, from this origin, already near 1.8e18:
// past 2^53, so JavaScript's Number rounds them (JSON.parse included). A
// table whose IDs reach JavaScript as numbers needs JS53.
//
// It is a literal, not read from bwmarrin's package variables, so that a
// program that changes those does not change this package.
var DefaultLayout = Layout{Origin: TwitterOrigin, NodeBits: 10, StepBits: 12}

// JS53, the preset "js53", is a layout whose IDs are below 2^53
// (JSSafeBits), so that JavaScript's Number, and JSON.parse, holds every
// one of them exactly:
//
//	origin  2025-01-01T00:00:00Z
//	time    41 bits of 1 ms: until 2094-09-07, 69.7 years
//	node    10 bits: node IDs 0-1023, the range of nodeid's default table
//	step    2 bits: 4 IDs per millisecond per node ID (4,000 per second;
//	        about 4.1 million per second over 1024 node IDs)
//
// It is DefaultLayout with the 10 bits it must give up all taken from the
// step field, and a recent origin: the same life, node IDs and millisecond
// resolution, but a generator's cap is 4 IDs per millisecond instead of
// 4096; a burst beyond it waits for the next millisecond. Any 53-bit
// layout trades the same way: per node ID, IDs per second times years of
// life is fixed by the bits left after the node field. A custom Layout
// moves the line: 8 node bits and 4 step bits give 256 node IDs at 16 IDs
// per millisecond each for the same 69.7 years; a TimeUnit of 10 ms, 37
// time bits and 6 step bits give 1024 node IDs at 64 IDs per 10 ms for
// 43.5 years.
//
// It has no room for epoch bits beyond one, which would halve its cap. Its
// IDs are for new tables: see the package documentation.
var JS53 = Layout{
	Origin:    1735689600000, // 2025-01-01T00:00:00Z
	TotalBits: JSSafeBits,
	NodeBits:  10,
	StepBits:  2,
}

// presets are the named layouts, in the order Presets lists them.
var presets = [...]struct {
	name   string
	layout *Layout
}{
	{"bwmarrin", &DefaultLayout},
	{"js53", &JS53},
}

// Presets returns the names of the preset layouts, in the order a command
// lists them: "bwmarrin" (DefaultLayout) and "js53" (JS53).
func Presets() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	return names
}

// Preset returns the preset layout called name, one of Presets, in any
// case. Another name is an error that names it and lists the presets.
func Preset(name string) (Layout, error) {
	for _, p := range presets {
		if strings.EqualFold(name, p.name) {
			return *p.layout, nil
		}
	}
	return Layout{}, fmt.Errorf("snowflake: layout %q is not a preset; the presets are %s",
		name, strings.Join(Presets(), ", "))
}
