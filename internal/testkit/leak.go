package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// LeakWait is how long Leaked waits for goroutines to end before it calls
// them leaked: a goroutine that a test stopped may still be on its way
// out.
const LeakWait = 5 * time.Second

// ignoredStacks are the goroutines that the runtime and the standard
// library start once and keep: they outlive every test by design.
var ignoredStacks = []string{
	"os/signal.signal_recv", // signal.Notify's loop
	"os/signal.loop",
	"runtime.ensureSigM",
	"runtime.ReadTrace",
	"testing.(*M).startAlarm", // -timeout's alarm
}

// Goroutine is a goroutine's id and its stack, as runtime.Stack prints it.
type Goroutine struct {
	ID    string
	Stack string
}

// goroutines returns every goroutine but the caller's.
func goroutines() []Goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []Goroutine
	// The first block is the calling goroutine's.
	for i, block := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue
		}
		s := string(block)
		head, _, _ := strings.Cut(s, "\n")
		fields := strings.Fields(head) // "goroutine", id, "[state]:"
		if len(fields) < 2 || fields[0] != "goroutine" {
			continue
		}
		out = append(out, Goroutine{ID: fields[1], Stack: s})
	}
	return out
}

// Baseline is the set of goroutines running before the tests: Leaked does
// not count them.
type Baseline map[string]bool

// Snapshot returns the goroutines running now (but the caller's) as a
// Baseline.
func Snapshot() Baseline {
	b := Baseline{}
	for _, g := range goroutines() {
		b[g.ID] = true
	}
	return b
}

// leaked returns the goroutines running now that are neither in before
// nor ignored.
func leaked(before Baseline) []Goroutine {
	var out []Goroutine
next:
	for _, g := range goroutines() {
		if before[g.ID] {
			continue
		}
		for _, s := range ignoredStacks {
			if strings.Contains(g.Stack, s) {
				continue next
			}
		}
		out = append(out, g)
	}
	return out
}

// Leaked waits up to within for every goroutine that is not in before
// (nil for none) and not one the runtime keeps to end, and returns an
// error listing the stacks of those still running then, or nil.
func Leaked(before Baseline, within time.Duration) error {
	var left []Goroutine
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := Wait(ctx, func() error {
		left = leaked(before)
		if len(left) == 0 {
			return nil
		}
		return fmt.Errorf("%d goroutines", len(left))
	})
	if err == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutines outlived the tests by %s:", len(left), within)
	for _, g := range left {
		b.WriteString("\n\n")
		b.WriteString(g.Stack)
	}
	return fmt.Errorf("%s", b.String())
}

// Main runs the tests and, if they passed, fails the run if a goroutine
// they started outlives them (after LeakWait), printing its stack: call it
// from TestMain. after, if not nil, runs between the tests and the check
// (to stop what the tests shared).
func Main(m *testing.M, after func()) {
	before := Snapshot()
	code := m.Run()
	if after != nil {
		after()
	}
	if code == 0 {
		if err := Leaked(before, LeakWait); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
