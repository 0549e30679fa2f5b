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
// a lease TTL of nodeid.MinTTL and a waiting Acquire, so that node IDs are
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
// whether one more Generate after the loss minted (it must not); and every
// firing of a control timer (a timer of no lease, due every 50 ms) that
// came 20 ms late or more, which measures how late the loaded machine made
// the process's timers.
//
// Meanwhile a nemesis injects faults drawn from a seed (see Plan): SIGKILL of
// a worker (a new process replaces it), SIGSTOP of a worker for longer than
// the TTL then SIGCONT, pg_terminate_backend of every connection of the
// workers' database, a restart of PostgreSQL in fast and in immediate mode,
// and the proxy cutting or blackholing all traffic for a while. At the end
// every worker gets SIGTERM, releases its lease and exits.
//
// # Failovers
//
// TestChaosFailover runs the same workers on a Patroni cluster of three
// nodes (internal/pgtest.Cluster: etcd, asynchronous replication), which
// the workers reach with the cluster's multi-host DSN
// (target_session_attrs=read-write), not through a proxy. The lease table
// records the workers' TTL as its maximum, so that a failover's
// quarantine lasts 3.3 s. The nemesis kills, pauses and terminates as
// above (ClusterKinds: the proxy's and the single server's faults make no
// sense here) and, one at a time (see FailoverPlan), fails the cluster
// over: SIGKILL of the leader's postmaster (Patroni promotes a standby),
// patronictl switchover, patronictl failover, and SIGKILL of a leader
// whose WAL senders were stopped for 0.3 to 3 s before
// (pgtest.Cluster.StallReplication), so that the new primary lacks the
// claims, renewals and releases of those seconds. Before each failover it
// waits for a healthy cluster (every standby streaming: a failover to a
// cluster without a replica is another test); after it, for a new primary
// on a later timeline, then a healthy cluster again and a claim made on
// the new primary; then it pauses 1 to 5 s. A failover that the nemesis
// did not cause fails the run. The run lasts its duration, or until the
// failovers are over and 3 s more, whichever is longer.
//
// # The check
//
// Check then reads every worker file and the history table
// (admin.Store.History and List) and fails the test on any duplicate ID
// (over every ID recorded, exactly) or any violation of the rules listed in
// Check's doc: each ID within its claim's [acquired_at, ended_at] once the
// worker's clock offset is taken off, within its claim's horizons
// (from_ms, horizon_ms], with the node and epoch bits of its lease, and not
// after the lease's local deadline; Lost closed within a second of the
// deadline, or of SIGCONT for a paused worker, or of the firing of the
// worker's control timer if that was late across the instant (the one
// allowance made to the loaded machine); each node ID's claims form one
// time line. admin.Store.Who
// must name, for the first and last ID of every lease, exactly the claim
// that minted it. Per node ID, the epochs of the leases increase in the
// order in which they were acquired, and their stamps in the order of the
// epochs.
//
// A failover relaxes only what the new primary cannot know (see Check):
// a lease that the history lacks is accepted as lost in a failover only if
// a failover's new primary took writes after its Acquire was called, and
// its IDs are still checked against every ID and against the later claims
// of its node ID; a claim's end that lost renewals may have moved earlier
// gives way to its holder's own end; a claim on a new timeline must jump
// to that timeline's epochs and start after the quarantine.
//
// The test prints one summary line (stdout and t.Log): seed, duration,
// workers, IDs minted, faults by kind, duplicates, violations, and after
// failovers, the leases lost in them and, for each failover, the time from
// its start to the first claim on its new primary and to the first claim
// there of a row last written before the failover (the election plus the
// quarantine of 3.3 s; only a row whose lease lived on through the
// failover and was then released is claimable sooner). TestCheck* make
// sure that the checker does fail on a history that breaks each rule.
//
// # Running it
//
// By default TestChaos runs for one minute (20 s with -short), and
// TestChaosFailover for 30 s with one failover (about a minute with the
// cluster's start and the check), as part of
//
//	go test -race -count=1 ./...
//
// NODEID_CHAOS_DURATION runs them for any length, NODEID_CHAOS_FAILOVERS
// makes TestChaosFailover fail over any number of times, NODEID_CHAOS_SEED
// replays the fault plan, the failovers and the clock offsets of an earlier
// run (the seed is printed first thing; timings still differ from run to
// run):
//
//	NODEID_CHAOS_DURATION=10m go test -run 'TestChaos$' -count=1 -timeout 30m ./internal/testkit/chaos
//	NODEID_CHAOS_FAILOVERS=12 go test -run TestChaosFailover -count=1 -timeout 20m ./internal/testkit/chaos
//	NODEID_CHAOS_SEED=12345 go test -run TestChaos -count=1 ./internal/testkit/chaos
//
// TestChaos needs PostgreSQL binaries or Docker, TestChaosFailover the
// PostgreSQL binaries, patroni and etcd, and the root user (see
// internal/pgtest); they skip without them unless NODEID_TEST_REQUIRE_DB=1.
// Worker files and logs live in a temporary directory, removed after a run
// that passes; a run that fails keeps them, with the history it checked
// (history.json), and names the directory.
package chaos
