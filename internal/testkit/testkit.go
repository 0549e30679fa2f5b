// Package testkit holds what the tests of every package share and that
// needs nothing beyond the standard library: waiting for a condition
// (Until) and finding goroutines that outlive the tests (Leaked, Main).
// Its subpackages are the heavier harnesses: pgtest (PostgreSQL servers,
// databases and clusters), chaos, metrictest and syncbuf.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Until calls cond until it returns nil, and fails t, saying what did not
// happen and cond's last error, once within has passed, or at once if cond
// returns an error made by Stop. It checks every few milliseconds at
// first, backing off to 100 ms between checks. It is the one polling loop
// of the tests; Wait is the same loop for a goroutine that cannot fail a
// test.
func Until(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := Wait(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// True adapts a condition that reports whether it holds to Until and Wait.
func True(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	}
}

// stopError ends the wait of Until and Wait at once.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Stop wraps err so that Until and Wait give up at once instead of
// checking again: for a condition that can no longer come true (the lease
// it waits on was lost, the process exited).
func Stop(err error) error { return stopError{err} }

// Wait calls cond, as Until does, until it returns nil, returns an error
// made by Stop, or ctx ends, and returns nil or why it gave up (with
// cond's last error).
func Wait(ctx context.Context, cond func() error) error {
	interval := 2 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (last: %v)", context.Cause(ctx), err)
		case <-timer.C:
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
}
