package bench

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

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

func (c Config) json() ConfigJSON {
	return ConfigJSON{
		Only: c.Only, Repeat: c.Repeat, HerdClaimers: c.HerdClaimers, HerdIDs: c.HerdIDs, HerdVariants: c.HerdVariants,
		Concurrency: c.Concurrency, Duration: Duration(c.Duration), ExecModes: c.ExecModes,
		ScaleIDs: c.ScaleIDs, Held: c.Held, Samples: c.Samples, Ops: c.Ops,
		RenewWorkers: c.RenewWorkers, RenewIDs: c.RenewIDs,
	}
}

// hostEnvironment reads what the process can learn of the machine.
func hostEnvironment() Environment {
	return Environment{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart:  loadAverage(),
		Started:    time.Now().UTC().Truncate(time.Second),
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "" where
// the system does not say.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// serverEnvironment fills in the server's version and the settings that
// differ from the built-in defaults (from the command line, the
// configuration files or ALTER SYSTEM; not those a client session set).
func serverEnvironment(ctx context.Context, db *sql.DB, env *Environment) error {
	if err := db.QueryRowContext(ctx, `SELECT version(), current_setting('server_version')`).Scan(&env.Server, &env.ServerVer); err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, `SELECT name, setting || coalesce(unit, ''), source FROM pg_settings
		WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s Setting
		if err := rows.Scan(&s.Name, &s.Value, &s.Source); err != nil {
			return err
		}
		env.Settings = append(env.Settings, s)
	}
	return rows.Err()
}

// pgbenchVersion returns pgbench --version, or "" if it cannot be run.
func pgbenchVersion(ctx context.Context, prog string) string {
	out, err := exec.CommandContext(ctx, prog, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
