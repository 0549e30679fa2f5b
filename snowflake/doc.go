// Package snowflake mints Snowflake IDs under a nodeid lease, in the bit
// layout of github.com/bwmarrin/snowflake or a custom Layout, and fences
// every ID against the lease so that no two processes ever mint the same
// one.
//
//	lease, err := reg.Acquire(ctx) // reg is a *nodeid.Registry
//	if err != nil { ... }
//	gen, err := snowflake.New(lease)
//	if err != nil { ... }
//	go func() { <-lease.Lost(); log.Fatal(lease.Err()) }()
//	id, err := gen.Generate() // a github.com/bwmarrin/snowflake ID
//
// Generate returns bwmarrin's ID type, so its String, Base58, Base64 and
// JSON encodings and parsers apply. With DefaultLayout (41 time bits from
// the Twitter epoch, 10 node bits, 12 step bits) an ID decodes correctly
// with bwmarrin's own ID.Time, ID.Node and ID.Step. A custom Layout is a
// value held by its generator: the package never reads or writes
// bwmarrin's package variables (Epoch, NodeBits, StepBits), and generators
// with different layouts in one process do not interfere. Layout.Decode
// splits any ID into its fields.
//
// # Guarantees
//
// A Generator mints under one lease; build one per lease and share it (New
// refuses a second one on the same lease, which would mint the same IDs).
//
//  1. No ID after the lease ends. Every ID is admitted by Lease.Check at
//     the monotonic clock reading the call took: the lease was live and
//     the reading was before the lease's local deadline. Every call that
//     begins at or after the deadline, or after Lost has closed (takeover,
//     expiry, release), fails with the lease's error, which matches
//     nodeid.ErrLeaseLost and the cause. New binds the generator to the lease: Release first
//     stops the lease admitting IDs, then seals the generator with one
//     atomic operation. A Generate racing with the seal either completed
//     before it, and its stamp is counted in the horizon Release records,
//     or fails; nothing is minted after the seal returns.
//  2. Stamps fall in (PreviousHorizon, recorded horizon]. Every ID is
//     stamped strictly after the lease's PreviousHorizon, the horizon left
//     by the previous holder of the node ID, and not after the horizon the
//     lease has recorded in the database (else the call fails with
//     nodeid.ErrClockAhead, which clears at the next renewal). The next
//     holder stamps only after the horizon in the row, which Release sets
//     to exactly the latest millisecond this generator stamped. So the IDs
//     of successive holders of a node ID fall into disjoint time ranges,
//     whatever their clocks say, and a released node ID is reusable at
//     once.
//  3. Strictly increasing. Each ID is greater than every ID the generator
//     returned before the call began, also when the wall clock steps back.
//  4. Epoch bits. With Layout.EpochBits = k > 0, every ID carries the
//     lease epoch modulo 2^k, so two claims of a node ID whose epochs
//     differ modulo 2^k mint different IDs even with the same stamp: a
//     second line of defence for when a horizon is lost (a failover to an
//     asynchronous replica, see package nodeid). It costs a factor of 2^k
//     in throughput per millisecond.
//
// Together with the registry's guarantees (one holder per node ID at a
// time, and the clock assumptions of package nodeid), no two generators,
// in one process or many, mint the same ID.
//
// # Clocks
//
// Each Generate reads the monotonic clock once. That reading is checked
// against the lease's deadline. The stamp comes from the stamping clock:
// by default the wall clock, read when the generator is built and again
// at most once a second (during a Generate call), advanced by the
// monotonic clock in between. The stamp therefore follows a step or a
// slew of the wall clock within a second without a second clock read per
// ID. WithClock replaces the stamping clock with a function read once per
// ID; the deadline is still checked against the monotonic clock.
//
// No guarantee above depends on the stamping clock being right: a stamp
// past the recorded horizon is refused, and one at or before the
// previous holder's horizon is waited for. The monotonic clock is assumed
// to advance at the rate of real time within the lease's safety margin
// (see package nodeid). The time an ID carries is as right as the wall
// clock; keep it synchronised (NTP) for IDs whose time means something,
// and for availability:
//
//   - When the stamping clock is at or behind the previous holder's
//     horizon (a node ID reused on a host whose clock is slower than the
//     last holder's), Generate sleeps until it passes, for at most the
//     max wait (WithMaxWait, default 5 s); if the gap already exceeds the
//     bound it fails at once with an error matching nodeid.ErrClockBehind.
//   - When the stamping clock steps back, IDs go on in the last stamped
//     millisecond; once its sequence is used up, Generate waits for the
//     clock to pass it, within the same bound, else ErrClockBehind.
//   - When a millisecond's sequence (2^(StepBits-EpochBits) IDs) is used
//     up, Generate yields (runtime.Gosched) until the next millisecond.
//   - Past the layout's last millisecond (Layout.End), Generate fails with
//     ErrTimeOverflow.
//
// # Cost
//
// Generate takes no lock and makes no system call beyond the clock read:
// on success it reads the monotonic clock once (the WithClock clock once
// more, if given), checks the lease with one atomic load, updates one
// 64-bit state word with a compare-and-swap, and does not allocate. Waits
// hold nothing. It is safe for concurrent use.
package snowflake
