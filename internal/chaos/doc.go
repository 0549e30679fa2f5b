// Package chaos proves, under real faults, nodeid's one promise: no two
// processes ever mint the same ID, and a process learns at once when its
// lease is gone. It works in the manner of Jepsen and etcd's robustness
// tests: real processes, real faults, and a checker over the full history.
//
// # The run
//
// TestChaos starts a PostgreSQL server of its own (internal/pgtest), a TCP
// proxy in front of it, and six worker processes (the test binary run
// again, whose TestMain runs a worker) that share the four node IDs 0-3 with
// a lease TTL of nodeid.MinTTL and nodeid.WithWait, so that node IDs are
// reused all the time. Each worker connects through the proxy and, in a loop, acquires a
// node ID, builds the fenced generator (snowflake.New) and mints IDs until
// the lease is lost, or until it releases the lease itself after a random
// time (so that node IDs are also reused right after a release). Half the
// workers use a layout with two epoch bits, half the default layout: IDs of
// the two layouts collide unless the time fencing keeps them apart. Each
// worker's generator stamps with a clock offset from the wall clock by up to
// ±2 s (workers 0 and 1 take -2 s and +2 s), injected only through
// snowflake.WithClock. ErrClockAhead and ErrClockBehind are retried after a
// pause, not taken as losses.
//
// Volume is capped so that the check stays fast: a worker mints bursts of
// 2,000 IDs as fast as the generator allows, one burst every 40 ms (at most
// 50,000 IDs a second per worker, 12 million a minute in all; faults and
// waits for a node ID make it a few million in practice). Each
// worker appends every ID, with the lease (node ID, epoch) it was minted
// under, to a binary file of its own (see Writer), flushed after every
// burst, so a SIGKILL loses at most the burst in memory: lost IDs cannot be
// duplicates. It also records each lease's acquisition, and each loss with
// its cause, the local deadline as wall time, the moment Lost closed, and
// whether one more Generate after the loss minted (it must not).
//
// Meanwhile a nemesis injects faults drawn from a seed (see Plan): SIGKILL of
// a worker (a new process replaces it), SIGSTOP of a worker for longer than
// the TTL then SIGCONT, pg_terminate_backend of every connection of the
// workers' database, a restart of PostgreSQL in fast and in immediate mode,
// and the proxy cutting or blackholing all traffic for a while. At the end
// every worker gets SIGTERM, releases its lease and exits.
//
// # The check
//
// Check then reads every worker file and the history table
// (store.Store.History and List) and fails the test on any duplicate ID
// (over every ID recorded, exactly) or any violation of the rules listed in
// Check's doc: each ID within its claim's [acquired_at, ended_at] once the
// worker's clock offset is taken off, within its claim's horizons
// (from_ms, horizon_ms], with the node and epoch bits of its lease, and not
// after the lease's local deadline; every paused worker's Lost closed after
// SIGCONT; each node ID's claims form one time line. store.Store.Who
// must name, for the first and last ID of every lease, exactly the claim
// that minted it. The test prints one summary line (stdout and t.Log):
// seed, duration, workers, IDs minted, faults by kind, duplicates,
// violations. TestCheck* make sure that the checker does fail on a history
// that breaks each rule.
//
// # Running it
//
// By default TestChaos runs for one minute (20 s with -short), as part of
//
//	go test -race -count=1 ./...
//
// NODEID_CHAOS_DURATION runs it for any length, NODEID_CHAOS_SEED replays
// the fault plan and clock offsets of an earlier run (the seed is printed
// first thing; timings still differ from run to run):
//
//	NODEID_CHAOS_DURATION=10m go test -run TestChaos -count=1 -timeout 30m ./internal/chaos
//	NODEID_CHAOS_SEED=12345 go test -run TestChaos -count=1 ./internal/chaos
//
// The test needs PostgreSQL binaries or Docker (see internal/pgtest); it
// skips without them unless NODEID_TEST_REQUIRE_DB=1. Worker files live
// under t.TempDir and are removed after the run.
package chaos
