package report

import "time"

// Environment describes where the figures were measured.
type Environment struct {
	CPU        string    `json:"cpu"`
	Cores      int       `json:"cores"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	GoVersion  string    `json:"go_version"`
	OS         string    `json:"os"`
	LoadStart  string    `json:"load_start"` // /proc/loadavg: 1, 5 and 15 minutes
	LoadEnd    string    `json:"load_end"`
	Server     string    `json:"server"` // version()
	ServerVer  string    `json:"server_version"`
	Where      string    `json:"where"` // how the server was reached, without secrets
	Settings   []Setting `json:"settings"`
	Pgbench    string    `json:"pgbench"` // pgbench --version, or why there is none
	Started    time.Time `json:"started"`
	Elapsed    Duration  `json:"elapsed"`
	Extensions []string  `json:"extensions,omitempty"`
	Notes      []string  `json:"notes,omitempty"`
	Tables     []string  `json:"tables"` // the scratch tables created and dropped
	// Relations maps the OIDs of the scratch tables and their indexes to
	// their names, for reading the server's log.
	Relations map[string]string `json:"relations,omitempty"`
	Dropped   bool              `json:"dropped"`
	Config    ConfigJSON        `json:"config"`
}

// Setting is a server setting that differs from PostgreSQL's built-in
// default.
type Setting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Duration is a time.Duration that reads and writes as a string in JSON.
type Duration time.Duration

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses what MarshalText writes.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// ConfigJSON is the Config of a run as recorded in the results.
type ConfigJSON struct {
	Only         []string  `json:"only,omitempty"`
	Repeat       int       `json:"repeat"`
	HerdClaimers int       `json:"herd_claimers"`
	HerdIDs      int       `json:"herd_ids"`
	HerdVariants []string  `json:"herd_variants,omitempty"`
	Concurrency  []int     `json:"concurrency"`
	Duration     Duration  `json:"duration"`
	ExecModes    []string  `json:"exec_modes"`
	ScaleIDs     []int     `json:"scale_ids"`
	Held         []float64 `json:"held"`
	Samples      int       `json:"samples"`
	Ops          int       `json:"ops"`
	RenewWorkers []int     `json:"renew_workers"`
	RenewIDs     int       `json:"renew_ids"`
}
