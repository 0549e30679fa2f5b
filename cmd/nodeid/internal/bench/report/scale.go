package report

// ScaleResult is Acquire's latency against the fraction of node IDs held by
// live leases, for each range size.
type ScaleResult struct {
	Samples  int          `json:"samples"`
	ExecMode string       `json:"exec_mode"`
	Points   []ScalePoint `json:"points"`
	Plans    []Plan       `json:"plans"`
}

// The states of a scale point.
const (
	// StateHeld: a random Fraction of the node IDs is held by live leases
	// (each with its open history row, as claims leave them), the rest is
	// free, and both tables are vacuumed and analysed: the steady state.
	StateHeld = "held"
	// StateUnvacuumed: the same, measured right after the leases were taken,
	// before any VACUUM or ANALYZE: the free-row index still holds the
	// entries of the rows just claimed.
	StateUnvacuumed = "held-unvacuumed"
	// StateLapsed: Fraction held, and every other node ID's lease lapsed
	// rather than released: holders that crashed, or with Fraction 0 the
	// fleet-wide restart after a crash.
	StateLapsed = "lapsed"
	// StateFresh: a table just made by the DDL of postgres.Schema.SQL, as a
	// fleet's first start finds it (Fraction 0): never vacuumed, with the
	// statistics of the ANALYZE that the DDL ends with.
	StateFresh = "fresh"
)

// ScalePoint is one repetition at one range size, fraction and state.
type ScalePoint struct {
	Rep      int     `json:"rep"`
	IDs      int     `json:"ids"`
	Fraction float64 `json:"fraction"`
	State    string  `json:"state"`
	Held     int     `json:"held"`
	// Latency is the distribution of Acquire's latency, each Acquire
	// followed by an untimed Release so that the state stays the same.
	Latency Dist `json:"latency"`
	// OrderChecked counts the Acquires whose node ID was compared with the
	// lowest claimable one; OrderViolations those that got another.
	OrderChecked    int    `json:"order_checked"`
	OrderViolations int    `json:"order_violations"`
	Violation       string `json:"violation,omitempty"` // the first
}

// Plan is the EXPLAIN (ANALYZE, BUFFERS) of the claim in one state.
type Plan struct {
	IDs      int     `json:"ids"`
	Fraction float64 `json:"fraction"`
	State    string  `json:"state"`
	Kind     string  `json:"kind"` // "custom" (the parameters' values known) or "generic"
	Text     string  `json:"text"`
}
