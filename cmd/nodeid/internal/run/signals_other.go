//go:build !unix

package run

import "os"

// signalsForCommand is not used: "nodeid run" refuses to start here (see
// package warden).
func signalsForCommand() (<-chan os.Signal, func()) { return nil, func() {} }
