package timefmt

import (
	"testing"
	"time"
)

func TestFloorMs(t *testing.T) {
	for _, c := range []struct{ ns, want int64 }{
		{0, 0}, {999_999, 0}, {1_000_000, 1}, {-1, -1}, {-1_000_000, -1}, {-1_000_001, -2},
	} {
		if got := FloorMs(c.ns); got != c.want {
			t.Errorf("FloorMs(%d) = %d, want %d", c.ns, got, c.want)
		}
	}
}

func TestMs(t *testing.T) {
	if got, want := Ms(1288834974657), "1288834974657 (2010-11-04T01:42:54.657Z)"; got != want {
		t.Errorf("Ms = %q, want %q", got, want)
	}
	if got, want := Time(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("X", 3600))), "2026-01-02T02:04:05.006Z"; got != want {
		t.Errorf("Time = %q, want %q", got, want)
	}
}
