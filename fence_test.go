package nodeid

import (
	"errors"
	"testing"
)

// The zero Fence has no lease: Check and Bind refuse, nothing panics.
func TestZeroFence(t *testing.T) {
	var m Fence
	if err := m.Check(0, 0); err == nil || !errors.Is(err, errNoLease) {
		t.Errorf("zero Fence's Check = %v, want an error saying it has no lease", err)
	}
	if err := m.Bind(func() int64 { return 0 }); !errors.Is(err, errNoLease) {
		t.Errorf("zero Fence's Bind = %v, want an error saying it has no lease", err)
	}
	if b := m.Base(); !b.IsZero() {
		t.Errorf("zero Fence's Base = %v, want the zero time", b)
	}
	if m := NewFence(nil); m.Check(0, 0) == nil {
		t.Error("NewFence(nil).Check admitted an ID")
	}
}
