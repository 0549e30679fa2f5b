package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// properties says, per allocator, whether a claim survives a crash of its
// server once acknowledged, and whether the holder gets a fencing token.
var properties = map[string][2]string{
	"nodeid": {"yes (one commit, WAL flushed)", "yes (epoch and horizon)"},
	"floor":  {"yes (one commit, WAL flushed)", "–"},
	"etcd":   {"yes (Raft log fsynced)", "no (this allocator uses none)"},
	"redis":  {"**no** (in memory)", "**no**"},
}

// perCall says what each allocator does per call.
var perCall = []string{
	"**nodeid**: `Registry.Acquire` is one statement (`SELECT ... FOR UPDATE SKIP LOCKED` of the lowest claimable row, " +
		"its update with a new epoch and horizon, a history row), one round trip, committed durably; `Lease.Release` is " +
		"one statement that frees the row for its owner and epoch, recording the horizon, and ends its history " +
		"row, one round trip, committed durably. Both include the lease's own work on the client (its renewal " +
		"goroutine and deadline timer). A pool of one connection, pgx's default statement cache.",
	"**floor**: `UPDATE ... SET epoch = epoch + 1 WHERE node_id = $1 RETURNING node_id, epoch, now()` on a copy of " +
		"the lease table's rows, by primary key, node 0 each time: the least a durable claim of one row can cost on " +
		"that server. One round trip, on a pool of one connection of its own.",
	"**etcd**: the lowest-free allocator as it is written with the official client: a claim is `Grant` (a lease of " +
		"the TTL), `Get` of the prefix with `WithKeysOnly` (the held node IDs), then " +
		"`Txn(If(CreateRevision(key) == 0)).Then(Put(key, owner, WithLease(id)))` on the lowest node ID without a " +
		"key, trying the next one on a lost race: **3 RPCs** (Grant and Txn are Raft writes, each fsynced; Get " +
		"is a linearizable read); a release is `Revoke`, 1 RPC, a Raft write. One member, so no network in the " +
		"Raft round.",
	"**Redis**: the worker-ID lease of the Redis-based distributors: a claim is one `EVALSHA` of a Lua script " +
		"that walks node IDs 0 to 1,023 and takes the first whose key `SET key owner NX PX ttl` creates; a " +
		"release is one `EVALSHA` of a script that deletes the key only if it holds the owner's value. 1 round " +
		"trip each. **Neither durable nor fenced**: the server keeps the keys in memory only (`--save \"\" " +
		"--appendonly no`; Redis's snapshots, or an append-only file fsynced every second, would not make an " +
		"acknowledged claim durable either), so a restart, or a failover of asynchronously replicated Redis, " +
		"loses the lease and can hand the node ID to a second holder; expiry is by the Redis server's clock, and " +
		"nothing stops a holder that paused past it or orders the stamps of successive holders. Its figures " +
		"are a lower bound on a round trip to a server, not a like-for-like claim.",
}

// render returns the Markdown report of res.
func render(res *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# nodeid against its peers\n\n")
	p("`%s` (from the repository's root: `go -C cmd/nodeid/tools run ./%s`), started %s, took %s.\n\n",
		res.Command, res.Command, res.Started.Format(time.RFC3339), res.Elapsed)
	p("%s timed turns after %d untimed ones (and one untimed turn after them); every turn runs each item once, "+
		"claim then release, in an order that rotates from turn to turn, so every claim is on an empty range "+
		"of %s node IDs. TTL %s. Latencies are timed and round trips counted on the client; all servers run on "+
		"this machine, on loopback.\n\n", thousands(res.Turns), res.Warmup, thousands(res.IDs), res.TTL)
	if res.Turns < 100 {
		p("With fewer than 100 turns, a p99 is the slowest run.\n\n")
	}

	m := res.Machine
	p("## Machine\n\n")
	p("- CPU: %s, %d cores (GOMAXPROCS %d), %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.OS)
	p("- load average (1, 5, 15 min): %s at the start, %s at the end\n", m.LoadStart, m.LoadEnd)
	p("- Go: %s\n\n", m.Go)

	p("## Servers\n\n")
	p("| server | version | where | durability settings | client |\n|---|---|---|---|---|\n")
	for _, s := range res.Servers {
		p("| %s | %s | %s | %s | %s |\n", s.Name, s.Version, s.Where, settingsText(s.Settings), s.Client)
	}

	p("\n## Latency\n\n")
	p("| allocator | operation | round trips per call | p50 | p99 | durable | fenced |\n|---|---|---:|---:|---:|---|---|\n")
	for _, o := range res.Ops {
		pr := properties[o.Peer]
		p("| %s | %s | %s | %s | %s | %s | %s |\n", o.Peer, o.Op, trips(o.Trips, o.TripUnit),
			ms(o.P50), ms(o.P99), pr[0], pr[1])
	}

	p("\n## Ratios\n\n")
	p("Of the p50s, measured side by side in this run. Targets are reported, never enforced.\n\n")
	p("| ratio | measured | target | |\n|---|---:|---|---|\n")
	var floor []Ratio
	for _, r := range res.Ratios {
		if r.Met == nil {
			floor = append(floor, r)
			continue
		}
		verdict := "met"
		if !*r.Met {
			verdict = "**not met**"
		}
		target := strings.NewReplacer(">=", "≥", "<=", "≤").Replace(r.Target) + "×"
		p("| %s | %.2f× | %s | %s |\n", r.Name, r.Value, target, verdict)
	}
	p("\nOver the durable floor:\n\n| ratio | measured |\n|---|---:|\n")
	for _, r := range floor {
		p("| %s | %.2f× |\n", r.Name, r.Value)
	}

	p("\n## Claims\n\n")
	p("| allocator | claims | node IDs claimed | released |\n|---|---:|---|---:|\n")
	for _, c := range res.Claims {
		n := 0
		for _, k := range c.Nodes {
			n += k
		}
		p("| %s | %s | %s | %s |\n", c.Peer, thousands(n), nodesText(c.Nodes, n), thousands(c.Released))
	}

	p("\n## What each allocator does per call\n\n")
	for _, s := range perCall {
		p("- %s\n", s)
	}
	return b.String()
}

// nodesText describes the node IDs claimed: "node 0 in all 31", or each
// node ID and its count.
func nodesText(nodes map[int64]int, total int) string {
	if len(nodes) == 1 && nodes[0] == total {
		return "node 0 in all " + thousands(total)
	}
	keys := make([]int64, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("node %d: %s", k, thousands(nodes[k]))
	}
	return strings.Join(parts, ", ")
}

// ms formats nanoseconds as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }

// trips formats round trips per call: 3 RPCs, 1 round trip, 1.01 round trips.
func trips(n float64, unit string) string {
	s := strconv.FormatFloat(n, 'f', 2, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	if s == "1" {
		unit = strings.TrimSuffix(unit, "s")
	}
	return s + " " + unit
}

// thousands formats n with commas between thousands.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
