// Package nodeid leases Snowflake node IDs from a PostgreSQL table, so that
// every replica of a service gets a unique node number without anyone
// assigning it, and no two processes ever mint the same ID.
//
// A Registry pre-fills one row per node ID, claims the lowest free one in a
// single statement (SELECT ... FOR UPDATE SKIP LOCKED), renews the lease in
// the background every TTL/3, and closes the lease's Lost channel when the
// lease is taken over, lapses, or cannot be renewed before its local
// deadline. Build an ID generator on the lease with the snowflake package,
// and abort when Lost closes:
//
//	db, _ := sql.Open("pgx", dsn) // github.com/jackc/pgx/v5/stdlib
//	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second))
//	if err != nil { ... }
//	defer reg.Close()
//	lease, err := reg.Acquire(ctx)
//	if err != nil { ... }
//	gen, err := snowflake.New(lease)
//	go func() { <-lease.Lost(); log.Fatal(lease.Err()) }()
//	id, err := gen.Generate()
//
// # Guarantees
//
//  1. At most one unexpired holder per node ID at any database instant: a
//     claim takes only a row whose lease has expired by the database's
//     now(), under a row lock.
//  2. Every claim increments the node ID's epoch, which is never reset or
//     decremented: epochs strictly increase across claims, releases, lapses,
//     takeovers and server restarts. Pass Lease.Epoch to resources that must
//     reject stale holders.
//  3. Renewal and release change the row only for the current owner and
//     epoch, and renewal only while the lease is unexpired: a lapsed lease is
//     never revived; its holder must claim again and gets a new epoch.
//  4. Lost closes at the local deadline at the latest, even if the database
//     never answers again, and Lease.Check refuses every ID from the deadline
//     on. The deadline is t0 + (expires_at - server now()) - TTL/10, where t0
//     is the holder's monotonic time read before the statement was sent: the
//     server stamped now() after t0, so the deadline precedes the true expiry.
//     A paused or partitioned holder therefore stops minting before anyone
//     can claim its node ID.
//  5. Reuse of a node ID is fenced in time. Each claim and renewal records a
//     horizon (unix milliseconds) in the row: the registry's wall clock at t0
//     plus the TTL. Lease.Check refuses an ID stamped after the recorded
//     horizon, and the next holder stamps only after it (PreviousHorizon).
//     So the IDs of successive holders of one node ID fall into disjoint
//     time ranges, whatever their clocks say: a host with a slower clock
//     reusing a node ID cannot repeat an earlier holder's IDs. Release, after
//     sealing the lease's generators, records the latest millisecond actually
//     stamped, so that a released node ID is reusable at once.
//  6. Optionally the low bits of the epoch are embedded in every ID (see the
//     snowflake package), so IDs minted under different claims of one node ID
//     differ even if every clock lies.
//
// # Clocks and assumptions
//
// Three clocks, each used for one thing only: the database clock decides
// expiry (who may claim); the holder's monotonic clock decides the local
// deadline (until when it may mint); the wall clock stamps IDs.
//
// The guarantees assume that the database server's clock does not step
// (a forward step makes leases expire early; PostgreSQL's now() must move
// at the rate of real time to within TTL/10 over a TTL), that commits are
// durable (synchronous_commit on: an immediate shutdown with asynchronous
// commit, or a failover to an asynchronous replica, can lose the latest
// claim, and with it an epoch and a horizon, so that two holders could share
// an epoch and a time range), and that rows are never deleted (deleting one
// resets its epoch and horizon). Use synchronous replication, or after a
// failover keep every holder out for one TTL, where a primary can be lost.
// The owner name is a label, not an authenticated identity.
//
// No guarantee depends on the hosts' wall clocks agreeing: stamps are
// bounded by recorded horizons whatever the clocks say. Availability does:
// a generator whose clock runs ahead of its registry's by more than about
// two thirds of the TTL (less a renewal's round trip) is refused with
// ErrClockAhead until the next renewal raises the horizon, and a new holder
// whose clock is behind its predecessor's horizon waits (snowflake's max
// wait) or gets ErrClockBehind. Keep the fleet's clocks within a small
// fraction of the TTL of each other, as NTP does.
//
// # Operations
//
// Every operation is one autocommit statement that also returns the
// server's now(), with no session state, so it works the same directly and
// through PgBouncer in transaction pooling mode; through a pooler, open the
// database with default_query_exec_mode=exec in the DSN. The `nodeid`
// command lists, watches and repairs the table, and decodes IDs.
package nodeid
