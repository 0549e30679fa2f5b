//go:build unix

package demo

// demoSupported returns nil: the demo's workers are POSIX processes it
// stops with signals.
func demoSupported() error { return nil }

// unixLike says whether this system has POSIX processes and signals.
const unixLike = true
