// Package nodeid leases Snowflake node IDs from a PostgreSQL table, so that
// every replica of a service gets a unique node number without anyone
// assigning it, and no two processes ever mint the same ID.
//
// A Registry claims the lowest claimable node ID of a table in a single
// statement (SELECT ... FOR UPDATE SKIP LOCKED), renews the lease in the
// background every TTL/3, and ends the lease when it is taken over, lapses,
// or cannot be renewed before its local deadline. Build an ID generator on
// the lease with the snowflake package, and do the work that mints under the
// lease's Context: it is cancelled when the lease ends, and its
// context.Cause says why (an *EndError; ErrReleased after your own Release
// or Close, which is no failure):
//
//	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second))
//	...
//	lease, err := reg.Acquire(ctx)
//	...
//	gen, err := snowflake.New(lease) // binds the generator to the lease
//	...
//	ctx = lease.Context() // taken over, expired, evicted: ctx ends, stop minting
//	for ctx.Err() == nil {
//		id, err := gen.Generate()
//		...
//	}
//	return context.Cause(ctx)
//
// The table (a lease table, its history and its configuration) is made by
// "nodeid init", by the DDL of postgres.Schema.SQL, or by the first Acquire
// with WithCreateTable(true). It records the node range and the longest TTL
// a lease may take; a Registry whose options disagree gets an error before
// any claim.
//
// # Guarantees
//
// This is the one statement of what nodeid guarantees; the snowflake
// package and the nodeid command point here.
//
//  1. At most one unexpired holder per node ID at any database instant: a
//     claim takes only a row whose lease has expired by the database's
//     now(), under a row lock, and locks no other row. An operator's
//     eviction ends the lease for its holder at its next renewal but keeps
//     the lease's expiry: it never makes the node ID claimable sooner.
//  2. Every claim increments the node ID's epoch, which is never reset or
//     decremented: epochs strictly increase across claims, releases, lapses,
//     takeovers, server restarts and crashes (every lease write is durable
//     when its statement returns, whatever synchronous_commit the server,
//     database, role or session sets), failovers, moves, upgrades and
//     restores (rule 7). Pass Lease.Epoch to resources that must reject
//     stale holders.
//  3. Renewal and release change the row only for the current owner and
//     epoch, and renewal only while the lease is unexpired: a lapsed lease is
//     never revived; its holder must claim again and gets a new epoch.
//  4. A lease ends (Done closes) at the local deadline at the latest, even
//     if the database or the driver never answers again. The deadline is t0 + (expires_at -
//     server now()) - TTL/10, where t0 is the holder's monotonic time read
//     before the statement was sent: the server stamped now() after t0, so
//     the deadline precedes the true expiry. A generator checks the deadline
//     (and the horizon of rule 5) on every call before it mints: no call
//     that reads the clock after the deadline returns an ID, but one whose
//     check passed just before it may return its ID a moment after it (by
//     the time one Generate call takes, a pause of its goroutine included).
//     What keeps such an ID unique is rule 5, not the deadline.
//  5. Uniqueness rests on the horizon chain. Each claim and renewal records
//     in the row a horizon (unix milliseconds): the holder's clock at t0 plus
//     the TTL, but never more than the database's now() plus the TTL. A
//     generator refuses an ID stamped after the horizon the lease has
//     recorded, and the next holder of the node ID stamps only strictly
//     after the horizon it finds (Lease.PreviousHorizon). So every stamp of
//     a holder is at or below a horizon already committed, and the IDs of
//     successive holders of a node ID fall into disjoint time ranges,
//     whatever their hosts' clocks say. Release, after sealing the lease's
//     generator, records the latest millisecond it actually stamped, so that
//     a released node ID is claimable again at once. A node ID is claimable
//     only once its horizon has passed by the database's clock, so a claim
//     never hands out a node ID its new holder would have to wait for.
//  6. Optionally the low bits of the epoch are embedded in every ID (see the
//     snowflake package), so IDs minted under different claims of one node
//     ID differ even if every clock lies (between claims whose epochs
//     differ modulo 2^EpochBits; across a failover that lost claims, rule 7
//     carries uniqueness, not the epoch bits).
//  7. Failover, moves and restores. The table records how its database
//     replicates (nodeid init --replication, postgres.Schema.Replication). A
//     promoted standby may lack the last commits of the old primary (with
//     asynchronous replication; with synchronous replication too, when a
//     commit's wait for the standby was cancelled), and a table dumped,
//     upgraded or moved may have been written after its copy was taken:
//     every claim reads the server's system identifier and WAL timeline,
//     whatever the table records, and when either
//     is not the one the table recorded (any change, not only a higher
//     timeline), it starts a new generation of the table. Only a claim
//     records the generation in a row, and a row last claimed in an earlier
//     generation may hide a claim the lost history made: it is not claimable
//     until a quarantine ends, by which every lease the lost history could
//     have granted is past its deadline, and its next holder stamps after
//     that instant and gets an epoch of a new era (the database clock's
//     seconds since 2020 times 2^32, plus its count), above every epoch
//     either history granted. After another timeline of the same system (a
//     promotion, a point-in-time recovery) the quarantine lasts the table's
//     maximum TTL, or a raise of it still pending, and a tenth: on such a
//     table a raise is pending until every standby streaming now and every
//     replication slot has replayed it (nodeid init --max-ttl waits for
//     them), so that no server that may be promoted lacks it; and a table
//     created on such a server hands out no node ID until every standby
//     it has once the creation has committed has the creation (confirmed
//     at once where there are none; Acquire and nodeid init wait for
//     them; ErrCreationPending), so that a failover never loses a table
//     that handed out node IDs. After another
//     system identifier (a dump restored elsewhere, an upgrade, a move) a
//     copy cannot know how stale it is: no node ID is handed out
//     (ErrRestorePending) until an operator declares the restore with the
//     longest TTL any holder of the old history may hold (nodeid init
//     --restored --max-ttl D), and the quarantine lasts the larger of D and
//     the maximum, and a tenth. A holder whose claim was lost learns it at
//     its first statement on the new server (ErrFailover); one whose lease
//     expired there gets ErrExpired; one whose lease survived keeps it,
//     without a gap in minting, while its row stays quarantined for the next
//     claimer. Only a table that records sync on a server that refuses the
//     WAL functions (a WAL-less service such as Aurora) trusts the database
//     never to lose an acknowledged commit: nothing is quarantined after a
//     failover there. A restore that nothing inside the database can tell
//     (a snapshot rolled back, any restore of such a table) needs nodeid init --restored --max-ttl D, which
//     starts a new generation from then. Two servers promoted from the same
//     history never share an ID as long as the old one takes no write once
//     the new one serves (the fencing assumption below); if both serve at
//     once, nothing inside either can keep their holders apart.
//     docs/protocol.md states every rule, and docs/operations.md what the
//     operator does.
//
// # Clocks and assumptions
//
// Three clocks, each used for one thing only: the database clock decides
// expiry (who may claim) and bounds horizons; the holder's monotonic clock
// decides the local deadline (until when it may mint); the wall clock stamps
// IDs.
//
// The guarantees assume that the database server's clock does not step (a
// forward step makes leases expire early; PostgreSQL's now() must move at the
// rate of real time to within TTL/10 over a TTL), that the servers of a
// high-availability cluster keep their clocks within a tenth of the table's
// maximum TTL of each other, that the high-availability manager fences the
// old primary (it takes no write after the promotion), that a table recorded
// as synchronous on a server that refuses the WAL functions is on a
// database whose failovers never lose an acknowledged commit, that an
// operator runs "nodeid init --restored
// --max-ttl D" after a restore, a move or an upgrade, with the old server
// stopped and D at least the longest TTL any holder of the old history may
// hold, and that rows are never deleted
// (deleting one resets its epoch and horizon). Lease tables that are
// UNLOGGED, which a crash empties, are refused. The owner name is a label,
// not an authenticated identity.
//
// No guarantee depends on the hosts' wall clocks agreeing: stamps are
// bounded by recorded horizons whatever the clocks say. Availability does:
// a generator whose clock runs ahead of the database's by more than about
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
// database with default_query_exec_mode=exec in the DSN. With a
// highly available PostgreSQL, list every server in a multi-host DSN with
// target_session_attrs=read-write. Acquire, Release and Close return within
// their context (or ReleaseTimeout) whatever the driver does. The `nodeid`
// command creates, lists, watches and repairs the table, decodes IDs and
// runs programs in any language under a lease.
package nodeid
