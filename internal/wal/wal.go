// Package wal has the SQL that nodeid's statements use to read the
// server's write-ahead log position.
package wal

// Timeline is the SQL expression of the server's current WAL timeline,
// which every promotion of a standby increments: the first eight hex digits
// of the name of the WAL file being written. Any role may evaluate it; on a
// standby it fails (a standby takes no writes anyway).
const Timeline = `('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint`
