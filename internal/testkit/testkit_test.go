package testkit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	if len(args) > 0 {
		f.failed = args[0].(string)
	}
}

func TestUntilWaitsForTheCondition(t *testing.T) {
	n := 0
	Until(t, time.Minute, "the third call", func() error {
		n++
		if n < 3 {
			return errors.New("too early")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

func TestUntilFailsAfterWithin(t *testing.T) {
	f := &fakeTB{}
	start := time.Now()
	Until(f, 20*time.Millisecond, "never", func() error { return errors.New("no") })
	if f.failed != "never" {
		t.Fatalf("Until did not fail the test: %q", f.failed)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("Until gave up before within")
	}
}

func TestUntilStopsAtOnce(t *testing.T) {
	f := &fakeTB{}
	n := 0
	Until(f, time.Hour, "stopped", func() error { n++; return Stop(errors.New("gone")) })
	if f.failed != "stopped" || n != 1 {
		t.Fatalf("failed %q after %d calls, want a failure after 1", f.failed, n)
	}
}

func TestLeakedFindsAndForgets(t *testing.T) {
	before := Snapshot()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-stop
	}()
	err := Leaked(before, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "TestLeakedFindsAndForgets") {
		t.Fatalf("Leaked = %v, want the stack of the blocked goroutine", err)
	}
	close(stop)
	// Leaked waits for the goroutine to end: no wait here.
	if err := Leaked(before, time.Minute); err != nil {
		t.Fatalf("after the goroutine ended: %v", err)
	}
	<-done
}

func TestMain(m *testing.M) { Main(m, nil) }
