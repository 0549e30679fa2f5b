// Package retry is the one retry schedule of nodeid and its command: a
// delay jittered by ±50% around a base that doubles after every wait, up to
// a bound.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a retry schedule: each delay is jittered by ±50% around Next,
// which then doubles, up to Max.
type Backoff struct{ Next, Max time.Duration }

// Wait sleeps for the next delay; it reports false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	d := Jitter(b.Next)
	b.Next = min(2*b.Next, b.Max)
	return Sleep(ctx, d)
}

// Jitter returns a duration uniformly in [d/2, 3d/2).
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
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
