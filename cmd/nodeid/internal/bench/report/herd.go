package report

import "time"

// HerdResult is the herd start: Claimers concurrent claims, each on its own
// connection, against IDs node IDs, in each variant of the claim.
type HerdResult struct {
	Claimers int       `json:"claimers"`
	IDs      int       `json:"ids"`
	ExecMode string    `json:"exec_mode"`
	Runs     []HerdRun `json:"runs"`
}

// The variants of the herd.
const (
	// HerdLibrary: Registry.Acquire, one Registry and connection per
	// claimer, as many processes starting at once.
	HerdLibrary = "library"
	// HerdSQL: the library's claim statement alone.
	HerdSQL = "sql"
	// HerdNoSkip: the same statement with FOR UPDATE instead of FOR UPDATE
	// SKIP LOCKED: claimers queue on the lowest free row.
	HerdNoSkip = "sql-no-skip-locked"
	// HerdAdvisory: the claim inside a transaction that first takes a
	// transaction-scoped advisory lock on the table: claimers take turns.
	HerdAdvisory = "sql-advisory-lock"
)

// HerdVariants lists the variants in the order of the first repetition.
var HerdVariants = []string{HerdLibrary, HerdSQL, HerdNoSkip, HerdAdvisory}

// HerdRun is one variant's start of the whole herd.
type HerdRun struct {
	Rep     int    `json:"rep"`
	Variant string `json:"variant"`
	// Latency is the distribution of the latencies of the claims that
	// succeeded, each timed by its caller from the call to its return.
	Latency Dist `json:"latency"`
	// Wall is the time from the release of all claimers at once until the
	// last one returned.
	Wall      Duration `json:"wall"`
	Succeeded int      `json:"succeeded"`
	Failed    int      `json:"failed"`
	Distinct  int      `json:"distinct"`
	Error     string   `json:"error,omitempty"` // the first failure
	Waits     Waits    `json:"waits"`
	// Millis are the latencies of Latency in milliseconds, ascending, for
	// plots.
	Millis []float64 `json:"millis"`
	// Start and End bound the timed claims, by this machine's clock.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}
