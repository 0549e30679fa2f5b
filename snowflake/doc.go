// Package snowflake mints Snowflake IDs under a nodeid lease, in the bit
// layout of github.com/bwmarrin/snowflake or a custom Layout, and checks
// every ID against the lease.
//
//	lease, err := reg.Acquire(ctx) // reg is a *nodeid.Registry
//	if err != nil { ... }
//	gen, err := snowflake.New(lease)
//	if err != nil { ... }
//	ctx = lease.Context() // ends with the lease: stop minting then
//	for ctx.Err() == nil {
//		id, err := gen.Generate() // a github.com/bwmarrin/snowflake ID
//		...
//	}
//
// Generate returns bwmarrin's ID type, so its String, Base58, Base64 and
// JSON encodings and parsers apply. With DefaultLayout (41 time bits from
// Twitter's origin, 10 node bits, 12 step bits) an ID decodes correctly
// with bwmarrin's own ID.Time, ID.Node and ID.Step. A custom Layout is a
// value held by its generator: the package never reads or writes
// bwmarrin's package variables (Epoch, NodeBits, StepBits), and generators
// with different layouts in one process do not interfere. Layout.Decode
// splits an ID of any layout into its fields, and Layout.Parse reads its
// decimal text, refusing an ID too wide for the layout.
//
// The guarantees of a leased node ID, and the assumptions they rest on, are
// stated once, in package nodeid. This package adds the generator's own
// part, below.
//
// # The check
//
// Every Generate checks the lease before the compare-and-swap that takes
// its ID, with its latest reading of the monotonic clock and the stamp it
// is about to use: the reading must be before the lease's local deadline,
// and the stamp at or below the horizon the lease has recorded in the
// database. A stamp is a time unit, which covers every millisecond in it:
// the lease is checked with the unit's last millisecond (with 1 ms units,
// the stamp's own). A call whose check fails mints nothing and
// returns the lease's *nodeid.EndError (matching nodeid.ErrLeaseLost when
// the lease was lost, nodeid.ErrReleased when it was released), or an
// error matching nodeid.ErrClockAhead, which clears at the next renewal).
//
// The deadline bounds when a check can pass, not when an ID is returned:
// a call whose check passed just before the deadline returns its ID a
// little after it, late by at most the time the call takes from the
// reading its check used to its return. That bound rests on the scheduler
// alone (a pause of the goroutine in between counts: descheduling, a GC, a
// stopped process), so no guarantee rests on it.
//
// Uniqueness rests on the horizon instead. Every millisecond of every
// stamp is strictly after the lease's PreviousHorizon (the first unit
// stamped is the one after the horizon's), and at or below a horizon
// already committed in the database when its check passed. The horizon the
// row keeps for the next holder of the node ID is the last one committed,
// or after Release the end of the latest stamp the seal counted (below);
// either way it is at or after every millisecond this generator stamped,
// and the next holder stamps strictly after it. So however late an ID is returned, and whatever the clocks
// say, its stamp is before every stamp of the next holder: this rests on
// the horizon chain of package nodeid. Within one generator, every ID is
// greater than every ID it returned before the call began, also when the
// wall clock steps back: this rests on the generator's state word, which
// each ID advances with one compare-and-swap.
//
// # The seal
//
// New binds the generator to the lease, which takes one: a second
// generator on a lease would mint the same IDs. Release first stops the
// lease admitting IDs, then seals the generator: one atomic operation on
// its state word stops it for good and returns the last millisecond of the
// latest time unit it stamped, which Release records as the horizon, so
// that the node ID is reusable at once. A Generate racing with the seal either completed its
// compare-and-swap before it, and its stamp is counted, or fails: no ID is
// taken after the seal.
//
// # Epoch bits
//
// A Layout with EpochBits = k > 0 puts the lease epoch modulo 2^k in the
// top bits of every ID's step field, so that two claims of a node ID whose
// epochs differ modulo 2^k mint different IDs even with the same stamp: a
// second line of defence for when a horizon is lost (a failover to an
// asynchronous replica, see package nodeid). It costs a factor of 2^k of
// the IDs per time unit.
//
// # Layouts
//
// A layout is a table's choice, made when the table is new and kept for
// its life: an ID of one layout may equal an ID of another, and IDs of two
// layouts do not sort by time together, so a layout is never changed under
// minted IDs. Two presets, by name (Presets, Preset), state their
// capacity:
//
//   - "bwmarrin", DefaultLayout: 63-bit IDs, 1024 node IDs, 4096 IDs per
//     millisecond each, until 2080. From its 2010 origin its IDs are past
//     2^53 already, which JavaScript's Number (JSON.parse included)
//     silently rounds.
//   - "js53", JS53: IDs below 2^53, which JavaScript holds exactly, 1024
//     node IDs, 4 IDs per millisecond each, from 2025 until 2094: for new
//     tables whose IDs reach JavaScript as numbers. JS53 documents the
//     trade-off.
//
// A custom Layout sets the width of the IDs (TotalBits) and the unit of
// the time field (TimeUnit, 1 ms to 1 s) beside the node and step bits;
// Validate names the field that breaks a rule.
//
// # Clocks and waits
//
// The monotonic reading is checked against the deadline; the stamp comes
// from the stamping clock: by default the wall clock, read when the
// generator is built and again at most once a second (during a Generate
// call), advanced by the monotonic clock in between, so that it follows a
// step or a slew of the wall clock within a second. WithClock replaces it
// with a function read once per ID, before the monotonic reading, so that
// a slow clock can only make the check stricter.
//
// No guarantee depends on the stamping clock being right; availability
// does, and so does the meaning of an ID's time (keep the clock
// synchronised, as NTP does):
//
//   - When the stamping clock is in or behind the time unit of the
//     previous holder's horizon (a node ID reused on a host whose clock is
//     slower than the last holder's, or soon after a release with units
//     of several milliseconds), Generate sleeps until the unit after it,
//     for at most the max wait (WithMaxWait, default 5 s); if the gap
//     already exceeds the bound it fails at once with an error matching
//     nodeid.ErrClockBehind.
//   - When the stamping clock steps back, IDs go on in the last stamped
//     time unit; once its sequence is used up, Generate waits for the
//     clock to pass it, within the same bound, else ErrClockBehind.
//   - When a time unit's sequence (Layout.PerUnit, 2^(StepBits-EpochBits)
//     IDs) is used up, Generate yields (runtime.Gosched, then short sleeps)
//     until the next unit.
//   - Past the layout's last millisecond (Layout.End), Generate fails with
//     nodeid.ErrTimeOverflow.
//
// Only the max wait bounds Generate's waits. GenerateContext bounds them
// by a context too (an HTTP request's, say): when it ends first, the call
// returns at once with the context's error wrapped, and mints nothing.
//
// # Cost
//
// Generate takes no lock and makes no system call beyond the clock read:
// on success it reads the monotonic clock once (the WithClock clock once
// more, if given), checks the lease with one atomic load, updates one
// 64-bit state word with a compare-and-swap, and does not allocate. Waits
// hold nothing. It is safe for concurrent use.
package snowflake
