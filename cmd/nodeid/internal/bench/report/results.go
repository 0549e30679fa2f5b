package report

// Results are the figures of one run. Fields of scenarios not run are nil.
type Results struct {
	// Command is the command line that produced the results, without
	// secrets.
	Command    string            `json:"command"`
	Env        Environment       `json:"environment"`
	Herd       *HerdResult       `json:"herd,omitempty"`
	Overhead   *OverheadResult   `json:"overhead,omitempty"`
	Scale      *ScaleResult      `json:"scale,omitempty"`
	RoundTrips *RoundTripResult  `json:"round_trips,omitempty"`
	Renewal    *RenewalResult    `json:"renewal,omitempty"`
	Floor      *FloorResult      `json:"floor,omitempty"`  // nodeid bench --floor, which runs nothing else
	Failed     map[string]string `json:"failed,omitempty"` // scenario: error
}
