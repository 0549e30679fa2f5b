// Package timefmt writes times the way nodeid's messages and the nodeid
// command's tables do: in UTC, to the millisecond. It holds the one layout
// of an exact time.
package timefmt

import (
	"fmt"
	"time"
)

// Layout is the layout of an exact time.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// Time writes t in Layout, in UTC.
func Time(t time.Time) string { return t.UTC().Format(Layout) }

// Ms writes unix millisecond ms as the number and its time.
func Ms(ms int64) string { return fmt.Sprintf("%d (%s)", ms, Time(time.UnixMilli(ms))) }

// FloorMs returns unix nanoseconds ns in whole milliseconds, rounded down.
func FloorMs(ns int64) int64 {
	if ns < 0 {
		return (ns+1)/1e6 - 1
	}
	return ns / 1e6
}
