package measure

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

func (c Config) json() report.ConfigJSON {
	return report.ConfigJSON{
		Only: c.Only, Repeat: c.Repeat, HerdClaimers: c.HerdClaimers, HerdIDs: c.HerdIDs, HerdVariants: c.HerdVariants,
		Concurrency: c.Concurrency, Duration: report.Duration(c.Duration), ExecModes: c.ExecModes,
		ScaleIDs: c.ScaleIDs, Held: c.Held, Samples: c.Samples, Ops: c.Ops,
		RenewWorkers: c.RenewWorkers, RenewIDs: c.RenewIDs,
	}
}

// HostEnvironment reads what the process can learn of the machine.
func HostEnvironment() report.Environment {
	return report.Environment{
		CPU:        CPUModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart:  LoadAverage(),
		Started:    time.Now().UTC().Truncate(time.Second),
	}
}

// CPUModel returns the CPU's model name from /proc/cpuinfo, or the
// architecture where there is none.
func CPUModel() string {
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

// LoadAverage returns the 1, 5 and 15 minute load averages, or "" where
// the system does not say.
func LoadAverage() string {
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

// pgbenchVersion returns pgbench --version, or "" if it cannot be run.
func pgbenchVersion(ctx context.Context, prog string) string {
	out, err := exec.CommandContext(ctx, prog, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
