package run

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/warden"
)

// EnvTestClockFile is the tests' clock hook: it names a file holding an
// offset in milliseconds that "nodeid run", its warden and the tests'
// commands (all of them this test binary) add to the wall clock, so that
// tests can step a clock all of them share without stepping the host's. A
// change of the offset counts as a clock step. It is set up here, in the
// tests only: the shipped binary has no such hook (TestPlainBinaryHasNoClockHook).
const EnvTestClockFile = "NODEID_RUN_TEST_CLOCK_FILE"

func init() { testClockOffset = clockFileOffset }

// clockFileOffset returns the offset of the file EnvTestClockFile names,
// or nil if it is not set.
func clockFileOffset(getenv func(string) string) warden.Offset {
	path := getenv(EnvTestClockFile)
	if path == "" {
		return nil
	}
	return func() (int64, error) { return readClockFile(path) }
}

// readClockFile reads the offset in path; a missing or empty file is 0.
func readClockFile(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s (test hook): %w", EnvTestClockFile, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	const limit = int64(100 * 365 * 24 * time.Hour / time.Millisecond)
	off, err := strconv.ParseInt(s, 10, 64)
	if err != nil || off < -limit || off > limit {
		return 0, fmt.Errorf("%s (test hook): %s holds %q; it must hold a whole number of milliseconds within ±100 years", EnvTestClockFile, path, s)
	}
	return off, nil
}

// testWallClock is the wall clock of the tests' commands: the one "nodeid
// run" and its warden read.
func testWallClock(getenv func(string) string) (*warden.WallClock, error) {
	return warden.NewWallClock(clockFileOffset(getenv))
}
