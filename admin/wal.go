package admin

// The SQL that the statements use to identify the server they run on: its
// system identifier and its write-ahead log timeline. A table that records
// asynchronous replication needs both, to tell when it is served by another
// server or another timeline than the one that last wrote it; a table that
// records synchronous replication uses neither, so that its statements
// never name these functions.

// walTimeline is the SQL expression of the server's current WAL timeline,
// which every promotion of a standby increments: the first eight hex digits
// of the name of the WAL file being written. Any role may evaluate it unless
// the server revokes the functions; on a standby it fails (SQLSTATE 55000,
// recovery is in progress).
const walTimeline = `('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint`

// walServerID is the SQL expression of the server's system identifier, set
// when its cluster was made by initdb and kept by its physical standbys: a
// dump restored elsewhere, or a cluster upgraded by pg_upgrade, has another.
const walServerID = `(SELECT system_identifier FROM pg_control_system())`

// serverStarted is the SQL text of when the server's postmaster started,
// in microseconds since the Unix epoch. Two standbys of one primary that
// are promoted one after the other, without a WAL archive between them,
// both take the next timeline: the system identifier and the timeline do
// not tell them apart, and their starts do. A restart of the same server
// changes it too, which only makes a caller read again.
const serverStarted = `(extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint::text`

// WALFunctions names the functions walTimeline and walServerID call, for
// messages.
const WALFunctions = "pg_current_wal_lsn(), pg_walfile_name() and pg_control_system()"

// quarantine is how long, in ms, a new generation quarantines the rows of
// earlier ones, given c, the configuration row: the longest lease the lost
// history could hold (the maximum TTL or a pending raise of it) and a tenth
// of it for the servers' clocks. The claim ({t}_claim) writes it out.
const quarantine = `GREATEST(c.max_ttl_ms, COALESCE(c.raise_ttl_ms, 0)) * 11 / 10`
