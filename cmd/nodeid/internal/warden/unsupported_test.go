//go:build !linux

package warden

import (
	"errors"
	"testing"
)

// TestUnsupported: without Linux nothing starts, and each entry point says
// why.
func TestUnsupported(t *testing.T) {
	if _, err := Start(Config{Argv: []string{"true"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Start: %v, want ErrUnsupported", err)
	}
	if err := Serve(nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Serve: %v, want ErrUnsupported", err)
	}
	if _, err := NewStepWatch(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewStepWatch: %v, want ErrUnsupported", err)
	}
	if !errors.Is(Supported(), ErrUnsupported) {
		t.Error("Supported() is nil")
	}
}
