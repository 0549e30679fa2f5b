package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// FaultKind is a kind of fault the nemesis injects.
type FaultKind int

// The kinds of fault.
const (
	Kill             FaultKind = iota // SIGKILL a worker; start a new process for it after For
	Stop                              // SIGSTOP a worker for For (longer than the TTL), then SIGCONT
	Terminate                         // pg_terminate_backend every connection of the workers' database
	RestartFast                       // stop PostgreSQL in fast mode, wait For, start it
	RestartImmediate                  // stop PostgreSQL in immediate mode (a crash), wait For, start it
	Cut                               // the proxy closes every connection and refuses new ones for For
	Blackhole                         // the proxy holds every byte for For
	KillLeader                        // SIGKILL the cluster leader's postmaster: Patroni fails over to a standby
	Switchover                        // patronictl switchover: the leader hands over to a standby
	Failover                          // patronictl failover to a running standby
	// KillLaggingLeader stops the leader's WAL senders for Lag, then
	// kills the leader: the new primary lacks every commit of the lag.
	KillLaggingLeader
	numKinds
)

var kindNames = [numKinds]string{"kill", "stop", "terminate", "restart-fast", "restart-immediate", "cut", "blackhole",
	"kill-leader", "switchover", "failover", "kill-lagging-leader"}

// String returns the fault kind's name, as schedules print it.
func (k FaultKind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// ServerKinds returns the kinds of fault of a run on one server, in the
// order of the summary line.
func ServerKinds() []FaultKind {
	return []FaultKind{Kill, Stop, Terminate, RestartFast, RestartImmediate, Cut, Blackhole}
}

// ClusterKinds returns the kinds of fault that Plan draws for a run on a
// Patroni cluster, in the order of the summary line: the faults of workers
// and of their connections. The failovers are drawn by FailoverPlan.
func ClusterKinds() []FaultKind { return []FaultKind{Kill, Stop, Terminate} }

// FailoverKinds returns the kinds of failover, in the order of the summary
// line.
func FailoverKinds() []FaultKind {
	return []FaultKind{KillLeader, Switchover, Failover, KillLaggingLeader}
}

// Fault is one step of the nemesis's plan.
type Fault struct {
	At     time.Duration // since the start of the run
	Kind   FaultKind
	Worker int           // for Kill and Stop: the worker aimed at (the next one running if it is not)
	For    time.Duration // how long the fault lasts, or the delay before a killed worker restarts
}

// String returns the fault as a schedule line: when, what, on whom, how long.
func (f Fault) String() string {
	s := fmt.Sprintf("%s %s", f.At.Round(time.Millisecond), f.Kind)
	if f.Kind == Kill || f.Kind == Stop {
		s += fmt.Sprintf(" worker %d", f.Worker)
	}
	if f.For > 0 {
		s += " for " + f.For.Round(time.Millisecond).String()
	}
	return s
}

// weights are the odds of each kind of fault after the first of each.
var weights = [numKinds]int{Kill: 20, Stop: 20, Terminate: 15, RestartFast: 10, RestartImmediate: 10, Cut: 12, Blackhole: 13}

// Plan returns the faults of the given kinds (ServerKinds or ClusterKinds)
// for a run of length d with the given number of workers and lease TTL,
// drawn from seed alone: the same seed gives the same plan. Faults start
// after a warm-up of 3 s and stop 3 s before the end; they come 0.5 to 3 s
// apart (a fault that lasts delays the next one, since the nemesis applies
// the faults on the database and the network one at a time; kills and
// pauses of workers run in the background). The first faults are one of
// each kind, in a random order, so that even a short run has them all; the
// rest are drawn with weights favouring the per-worker faults.
func Plan(seed uint64, d time.Duration, workers int, ttl time.Duration, kinds []FaultKind) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973)) // "nemesis"
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	total := 0
	for _, k := range kinds {
		total += weights[k]
	}
	first := append([]FaultKind(nil), kinds...)
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })

	var out []Fault
	for at := 3 * time.Second; at < d-3*time.Second; at += dur(500*time.Millisecond, 3*time.Second) {
		var k FaultKind
		if len(out) < len(first) {
			k = first[len(out)]
		} else {
			n := rng.IntN(total)
			i := 0
			for ; n >= weights[kinds[i]]; i++ {
				n -= weights[kinds[i]]
			}
			k = kinds[i]
		}
		f := Fault{At: at, Kind: k, Worker: rng.IntN(workers)}
		switch k {
		case Kill:
			f.For = dur(100*time.Millisecond, 2*time.Second)
		case Stop:
			f.For = ttl + dur(200*time.Millisecond, 2*time.Second)
		case RestartFast, RestartImmediate:
			f.For = dur(time.Millisecond, 2500*time.Millisecond)
		case Cut, Blackhole:
			f.For = dur(300*time.Millisecond, 2*ttl)
		}
		out = append(out, f)
	}
	return out
}

// FailoverStep is one failover of a FailoverPlan.
type FailoverStep struct {
	Kind FaultKind // KillLeader, Switchover, Failover or KillLaggingLeader
	// After is the pause before the failover: since the start of the run
	// for the first, since the cluster recovered from the previous one (see
	// the package doc) for the others.
	After time.Duration
	// Lag is, for KillLaggingLeader, how long the leader's replication
	// stalls before it is killed.
	Lag time.Duration
}

// String returns the step as a schedule line.
func (s FailoverStep) String() string {
	str := fmt.Sprintf("%s after %s", s.Kind, s.After.Round(time.Millisecond))
	if s.Lag > 0 {
		str += fmt.Sprintf(" (lag %s)", s.Lag.Round(time.Millisecond))
	}
	return str
}

// FailoverPlan returns n failovers drawn from seed alone. The first four
// are one of each kind (FailoverKinds) in a random order, the rest any
// kind. The first comes 4 to 8 s after the start, once the workers hold
// leases; each other 1 to 5 s after the cluster recovered from the one
// before. The replication of a lagging leader stalls for 0.3 to 3 s (the
// TTL of the chaos runs): long enough to lose claims and renewals, short
// enough that Patroni still promotes a standby.
func FailoverPlan(seed uint64, n int) []FailoverStep {
	rng := rand.New(rand.NewPCG(seed, 0x6661696c6f766572)) // "failover"
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	first := FailoverKinds()
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	out := make([]FailoverStep, n)
	for i := range out {
		if i < len(first) {
			out[i].Kind = first[i]
		} else {
			out[i].Kind = first[rng.IntN(len(first))]
		}
		if i == 0 {
			out[i].After = dur(4*time.Second, 8*time.Second)
		} else {
			out[i].After = dur(time.Second, 5*time.Second)
		}
		if out[i].Kind == KillLaggingLeader {
			out[i].Lag = dur(300*time.Millisecond, 3*time.Second)
		}
	}
	return out
}
