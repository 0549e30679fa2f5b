package nodeid

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// wantCause checks that ctx has ended with the lease's error as its cause:
// a *EndError of l matching ErrLeaseLost and want, and no other cause.
func wantCause(t *testing.T, l *Lease, ctx context.Context, want error) {
	t.Helper()
	if ctx.Err() != context.Canceled {
		t.Fatalf("ctx.Err() = %v, want context.Canceled", ctx.Err())
	}
	cause := context.Cause(ctx)
	var le *EndError
	if !errors.As(cause, &le) || le.NodeID != l.NodeID() || le.Epoch != l.Epoch() {
		t.Fatalf("Cause = %v, want an *EndError of node ID %d, epoch %d", cause, l.NodeID(), l.Epoch())
	}
	// A loss matches ErrLeaseLost; your own release does not.
	if errors.Is(cause, ErrLeaseLost) != (want != ErrReleased) || !errors.Is(cause, want) {
		t.Errorf("Cause = %v, want %v, and ErrLeaseLost only for a loss", cause, want)
	}
	for _, other := range []error{ErrTakenOver, ErrReleased, ErrExpired, ErrEvicted, ErrFailover} {
		if other != want && errors.Is(cause, other) {
			t.Errorf("Cause = %v also matches %v", cause, other)
		}
	}
	if cause != l.Err() {
		t.Errorf("Cause = %v, Err = %v: want the same error", cause, l.Err())
	}
}

// Context lives while the lease is held and ends when Release ends the
// lease, with the *EndError as its cause; contexts derived from it end
// with it, with the same cause.
func TestContextEndsOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st)
		defer r.Close()
		l := mustAcquire(t, r)
		ctx := l.Context()
		if l.Context() != ctx {
			t.Error("Context returned a different context on a second call")
		}
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		ran := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { close(ran) })
		defer stop()

		time.Sleep(2 * testTTL) // renewed meanwhile
		synctest.Wait()
		if ctx.Err() != nil || context.Cause(ctx) != nil {
			t.Fatalf("Context ended while the lease is held: %v", context.Cause(ctx))
		}
		if _, ok := ctx.Deadline(); ok {
			t.Error("Context has a deadline")
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Release returns with the context cancelled: no goroutine stands
		// between the two.
		wantCause(t, l, ctx, ErrReleased)
		wantCause(t, l, child, ErrReleased)
		synctest.Wait()
		if !isClosed(ran) {
			t.Error("a function registered with context.AfterFunc did not run")
		}
	})
}

// A takeover found at a renewal, and a local deadline passed without a
// renewal, end the Context at that instant with the cause.
func TestContextEndsOnLoss(t *testing.T) {
	t.Run("taken over", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := newFakeStore(0, 0)
			r := fakeRegistry(t, st)
			defer r.Close()
			l := mustAcquire(t, r)
			st.set(func() {
				st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
					return admin.Outcome{Now: time.Now(), Exists: true, Owner: "other", Epoch: k.Epoch + 1}, nil
				}
			})
			start := time.Now()
			<-l.Done()
			if got := time.Since(start); got != testTTL/3 {
				t.Errorf("Lost closed %s after the claim, want at the first renewal (%s)", got, testTTL/3)
			}
			if l.Context().Err() == nil {
				t.Fatal("Lost closed before the Context ended")
			}
			wantCause(t, l, l.Context(), ErrTakenOver)
		})
	})
	t.Run("expired", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := newFakeStore(0, 0)
			r := fakeRegistry(t, st)
			defer r.Close()
			l := mustAcquire(t, r)
			deadline := l.Deadline()
			st.set(func() {
				st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
					return admin.Outcome{}, io.ErrUnexpectedEOF // retried until the deadline
				}
			})
			<-l.Context().Done()
			if !time.Now().Equal(deadline) {
				t.Errorf("Context ended at deadline%+v, want at the deadline", time.Now().Sub(deadline))
			}
			wantCause(t, l, l.Context(), ErrExpired)
			// Release after the deadline still frees the row, which the
			// database holds for the lease until its expiry; the cause stays.
			st.set(func() { st.renewHook = nil })
			if err := l.Release(context.Background()); err != nil {
				t.Errorf("Release = %v, want nil", err)
			}
			wantCause(t, l, l.Context(), ErrExpired)
		})
	})
}

// Close ends the Context of every lease of the Registry with ErrReleased.
func TestContextEndsOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore(0, 1)
		r := fakeRegistry(t, st)
		a, b := mustAcquire(t, r), mustAcquire(t, r)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		wantCause(t, a, a.Context(), ErrReleased)
		wantCause(t, b, b.Context(), ErrReleased)
	})
}

// TestAcquireReturnsWithinItsContextWhileAnotherChecksTheTable: a new
// Registry's first Acquire checks the table, holding the lock of that
// check for as long as its statements run; a second Acquire waiting for
// the lock gives up when its own context ends, not when the first's does.
func TestAcquireReturnsWithinItsContextWhileAnotherChecksTheTable(t *testing.T) {
	t.Parallel()
	st := newFakeStore(0, 3)
	st.set(func() { st.latency = time.Hour }) // the server does not answer
	r := fakeRegistry(t, st)
	defer r.Close()
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	firstDone := make(chan error, 1)
	go func() { _, err := r.Acquire(first); firstDone <- err }()
	for len(st.callsOf("config")) == 0 { // the first Acquire holds the lock, reading the configuration
		select {
		case err := <-firstDone:
			t.Fatalf("the first Acquire returned before reading the configuration: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	for _, try := range []struct {
		name    string
		acquire func(context.Context) (*Lease, error)
	}{{"Acquire", r.Acquire}, {"TryAcquire", r.TryAcquire}} {
		second, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		done := make(chan error, 1)
		go func() { _, err := try.acquire(second); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with a context that ended: %v; want context.DeadlineExceeded", try.name, err)
			}
		case err := <-firstDone:
			t.Fatalf("the first Acquire returned (%v) before the second %s", err, try.name)
		case <-time.After(time.Minute):
			t.Fatalf("%s has not returned a minute after its context of 100ms ended, while another Acquire held the table's check", try.name)
		}
		cancel()
	}
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Errorf("the first Acquire, cancelled: %v", err)
	}
}
