//go:build race

package audit

// raceEnabled: the race detector slows the audit tenfold; the memory test
// audits fewer IDs under it.
const raceEnabled = true
