package admin

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the retry schedule of the library and the nodeid command: each
// delay is jittered by ±50% around Next, which then doubles, up to Max.
type Backoff struct{ Next, Max time.Duration }

// Wait sleeps for the next delay; it reports false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	d := b.Next
	if d > 0 {
		d = d/2 + rand.N(d)
	}
	b.Next = min(2*b.Next, b.Max)
	return Sleep(ctx, d)
}

// Sleep sleeps for d; it reports false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
