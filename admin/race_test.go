//go:build race

package admin

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = true
