package report

// The scenarios Run measures, by name.
const (
	// Herd: many processes call Acquire at the same instant, each on its
	// own connection; contrasted with the claim without SKIP LOCKED and
	// with a claim serialised by an advisory lock.
	Herd = "herd"
	// Overhead: Acquire+Release through the library against pgbench
	// running the same two statements, and pgbench's plain single-row
	// UPDATE by primary key (the floor of any write).
	Overhead = "overhead"
	// Scale: Acquire latency against the fraction of node IDs held.
	Scale = "scale"
	// RoundTrips: statements (counted on the server) and client round
	// trips per Acquire, renewal and Release.
	RoundTrips = "roundtrips"
	// Renewal: renewals per second one server sustains.
	Renewal = "renewal"
)

// Scenarios lists every scenario in the order Run measures them.
var Scenarios = []string{Herd, Overhead, Scale, RoundTrips, Renewal}

// Exec modes of the library's connections, named as pgx names them; each
// is compared with the pgbench query mode that sends the same messages.
const (
	// ModeCache prepares each statement once per connection (pgx's default;
	// pgbench -M prepared).
	ModeCache = "cache_statement"
	// ModeExec sends each statement with an unnamed prepared statement, as
	// through PgBouncer in transaction mode (pgbench -M extended).
	ModeExec = "exec"
	// ModePooled is ModeExec through a PgBouncer in transaction pooling
	// mode in front of the same server: a mode of the floor's items and of
	// the renewal load's pooled runs, not of Config.ExecModes.
	ModePooled = "pgbouncer"
)

// PgbenchMode maps an exec mode to pgbench's -M.
var PgbenchMode = map[string]string{ModeCache: "prepared", ModeExec: "extended"}
