package report

// OverheadResult compares Acquire+Release through the library with pgbench
// running the same two statements on the same table, at each concurrency
// and exec mode, and with pgbench's floor of two plain single-row UPDATEs.
type OverheadResult struct {
	IDs      int      `json:"ids"`
	Duration Duration `json:"duration"`
	Pgbench  string   `json:"pgbench"` // the pgbench version, or why it did not run
	Script   string   `json:"script"`  // claim+release, as pgbench ran it
	Floor    string   `json:"floor"`   // the floor script
	Vars     []string `json:"vars"`    // pgbench -D definitions
	// Each side of a run takes Chunks turns of Chunk each.
	Chunks int           `json:"chunks"`
	Chunk  Duration      `json:"chunk"`
	Runs   []OverheadRun `json:"runs"`
}

// OverheadRun is one repetition at one exec mode and concurrency. Rates are
// per second: Acquire+Release pairs for the library, transactions of the
// script (one claim and one release; two UPDATEs for the floor) for
// pgbench.
type OverheadRun struct {
	Rep         int     `json:"rep"`
	Mode        string  `json:"mode"`
	PgbenchMode string  `json:"pgbench_mode"`
	Concurrency int     `json:"concurrency"`
	Library     float64 `json:"library"`
	// Store is the same pair through admin.Store alone: the statements
	// through pgx on a connection from database/sql, without the lease's
	// renewal goroutine, timer and bookkeeping.
	Store float64 `json:"store"`
	// Emptied is the library's rate when every turn starts with an emptied
	// history table, as a new deployment's: the other sides keep the
	// history, vacuumed, as a long-running table does.
	Emptied float64 `json:"emptied"`
	Pgbench float64 `json:"pgbench"`
	Floor   float64 `json:"floor"`
	// LibraryCPU and PgbenchCPU are the client's CPU time per pair or
	// transaction, in microseconds: this process's, pgbench's. Client and
	// server share the machine, so client CPU is taken from the server.
	LibraryCPU float64 `json:"library_cpu_us"`
	StoreCPU   float64 `json:"store_cpu_us"`
	PgbenchCPU float64 `json:"pgbench_cpu_us"`
	Error      string  `json:"error,omitempty"`
}
