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
// # The promise
//
// No two processes mint the same ID: a node ID has at most one unexpired
// holder at any database instant, every claim raises its epoch (a fencing
// token that never goes back), a holder stops minting at its local deadline
// even if the database never answers again, and each holder stamps only
// after the horizon its predecessor recorded. That holds through crashes,
// restarts, failovers, moves and restores, under the assumptions stated
// with the rules, numbered, in docs/guarantees.md
// (https://github.com/nodeid/nodeid/blob/main/docs/guarantees.md), which
// the code and its tests cite by number.
//
// Every operation is one call of the table's SQL functions (docs/sql.md)
// with no session state, so it works the same directly and through
// PgBouncer in transaction mode (open the database with
// default_query_exec_mode=exec there). Acquire, Release and Close return
// within their context (or ReleaseTimeout) whatever the driver does.
package nodeid
