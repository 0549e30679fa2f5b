package report

// RenewalResult is the renewals per second one server sustains:
// store.Store.Renew, the statement the library's background renewal
// sends, driven from Workers goroutines with a connection each, over IDs
// live leases.
type RenewalResult struct {
	IDs      int          `json:"ids"`
	Duration Duration     `json:"duration"`
	ExecMode string       `json:"exec_mode"`
	Runs     []RenewalRun `json:"runs"`
}

// RenewalRun is one repetition at one number of workers.
type RenewalRun struct {
	Rep     int     `json:"rep"`
	Workers int     `json:"workers"`
	Rate    float64 `json:"rate"` // successful renewals per second
	Renewed int64   `json:"renewed"`
	// Refused counts renewals that changed nothing: none should.
	Refused int64  `json:"refused"`
	Latency Dist   `json:"latency"`
	Error   string `json:"error,omitempty"`
}
