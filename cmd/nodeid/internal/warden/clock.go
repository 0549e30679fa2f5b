package warden

import (
	"sync/atomic"
	"time"
)

// Offset returns milliseconds to add to the system's wall clock: a hook for
// tests, which step a clock that the supervisor, its warden and their
// commands share without stepping the host's. A change of the offset counts
// as a clock step. An error keeps the offset last read.
type Offset func() (int64, error)

// WallClock is the wall clock of the supervisor and its warden: the
// system's, plus an Offset if one is given.
type WallClock struct {
	off  Offset // nil: the system's clock alone
	last atomic.Int64
}

// NewWallClock returns the system's wall clock plus off (nil for none). It
// fails if off fails at once.
func NewWallClock(off Offset) (*WallClock, error) {
	w := &WallClock{off: off}
	if off != nil {
		o, err := off()
		if err != nil {
			return nil, err
		}
		w.last.Store(o)
	}
	return w, nil
}

// hooked reports whether the clock has an Offset, which is then polled
// every hookPoll.
func (w *WallClock) hooked() bool { return w.off != nil }

// hookPoll is how often an Offset is read, where the kernel cannot say
// that it changed.
const hookPoll = 2 * time.Millisecond

// Offset returns the current offset in milliseconds (0 without one).
func (w *WallClock) Offset() int64 {
	if w.off == nil {
		return 0
	}
	if o, err := w.off(); err == nil {
		w.last.Store(o)
	}
	return w.last.Load()
}

// NowMs returns the wall clock in unix milliseconds.
func (w *WallClock) NowMs() int64 {
	off := w.Offset()
	return time.Now().UnixMilli() + off
}
