package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/session"
)

// pgbenchVars substitutes pgbench variables (or literals) for the $N
// parameters of a statement. Every parameter must have a substitute.
func pgbenchVars(stmt string, vars map[int]string) (string, error) {
	var missing []string
	out := regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(stmt, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		v, ok := vars[n]
		if !ok {
			missing = append(missing, m)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no pgbench variable for parameter %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// claimReleaseScript returns a pgbench script of the library's claim (its
// result columns stored with \gset) followed by the library's release of
// the node ID it got: the same two statements as Acquire then Release.
func claimReleaseScript(s session.Statements) (string, error) {
	// The claim function's parameters: owner, TTL, horizon, the range, and
	// the limit of a first claim on a table whose range is unknown (none).
	claim, err := pgbenchVars(s.Claim, map[int]string{1: ":owner", 2: ":ttl", 3: ":horizon", 4: ":lo", 5: ":hi", 6: "NULL"})
	if err != nil {
		return "", fmt.Errorf("claim: %w", err)
	}
	// Release with the exact horizon of a generator that stamped nothing:
	// the previous holder's (the claim's after_ms), so that the node ID is
	// claimable again at once.
	release, err := pgbenchVars(s.Release, map[int]string{1: ":node_id", 2: ":owner", 3: ":epoch", 4: ":after_ms"})
	if err != nil {
		return "", fmt.Errorf("release: %w", err)
	}
	return strings.TrimSpace(claim) + " \\gset\n" + strings.TrimSpace(release) + ";\n", nil
}

// floorScript returns a pgbench script of two plain single-row UPDATEs by
// primary key, of random node IDs: as many statements as claimReleaseScript.
func floorScript(table string, ids int) string {
	return fmt.Sprintf(`\set n random(0, %[2]d)
UPDATE %[1]s SET horizon_ms = horizon_ms + 1 WHERE node_id = :n;
\set m random(0, %[2]d)
UPDATE %[1]s SET horizon_ms = horizon_ms + 1 WHERE node_id = :m;
`, table, ids-1)
}

// pgbenchEnv returns the libpq environment that connects pgbench where cfg
// connects, so that no password appears on a command line.
func pgbenchEnv(cfg *pgx.ConnConfig) []string {
	env := os.Environ()
	env = append(env,
		"PGHOST="+cfg.Host,
		"PGPORT="+strconv.Itoa(int(cfg.Port)),
		"PGUSER="+cfg.User,
		"PGDATABASE="+cfg.Database,
		"PGPASSWORD="+cfg.Password,
		"PGAPPNAME=nodeid-bench",
	)
	switch {
	case cfg.TLSConfig == nil:
		env = append(env, "PGSSLMODE=disable")
	case len(cfg.Fallbacks) > 0 && cfg.Fallbacks[len(cfg.Fallbacks)-1].TLSConfig == nil:
		env = append(env, "PGSSLMODE=prefer")
	default:
		env = append(env, "PGSSLMODE=require")
	}
	return env
}

// pgbenchResult is what one pgbench run reported.
type pgbenchResult struct {
	tps    float64
	failed int64
	cpu    time.Duration // pgbench's own CPU time
}

var (
	tpsLine    = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	failedLine = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
)

// parsePgbench reads pgbench's summary.
func parsePgbench(out string) (pgbenchResult, error) {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return pgbenchResult{}, fmt.Errorf("pgbench printed no tps line: %s", lastLines(out, 3))
	}
	var r pgbenchResult
	r.tps, _ = strconv.ParseFloat(m[1], 64)
	if f := failedLine.FindStringSubmatch(out); f != nil {
		r.failed, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return r, nil
}

// pgbench runs script (written to a file named name) with clients clients
// and threads for secs seconds in query mode mode, defining vars with -D.
func (r *runner) pgbench(ctx context.Context, name, script, mode string, clients, secs int, vars []string) (pgbenchResult, error) {
	path := filepath.Join(r.tmp, name)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return pgbenchResult{}, err
	}
	args := []string{"-n", "-M", mode, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients), "-T", strconv.Itoa(secs), "-f", path}
	for _, v := range vars {
		args = append(args, "-D", v)
	}
	cmd := exec.CommandContext(ctx, r.cfg.Pgbench, args...)
	cmd.Env = pgbenchEnv(r.Target.Conn)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench: %w: %s", err, lastLines(stderr.String(), 3))
	}
	res, err := parsePgbench(stdout.String())
	res.cpu = session.ChildCPU(cmd.ProcessState)
	if err != nil {
		return res, err
	}
	if res.failed > 0 {
		return res, fmt.Errorf("pgbench: %d transactions failed: %s", res.failed, lastLines(stderr.String(), 3))
	}
	return res, nil
}

// lastLines returns the last n non-empty lines of s, joined by " / ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
