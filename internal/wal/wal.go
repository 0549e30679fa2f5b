// Package wal has the SQL that nodeid's statements use to identify the
// server they run on: its system identifier and its write-ahead log
// timeline. A table that records asynchronous replication needs both, to
// tell when it is served by another server or another timeline than the one
// that last wrote it; a table that records synchronous replication uses
// neither, so that its statements never name these functions.
package wal

// Timeline is the SQL expression of the server's current WAL timeline,
// which every promotion of a standby increments: the first eight hex digits
// of the name of the WAL file being written. Any role may evaluate it unless
// the server revokes the functions; on a standby it fails (SQLSTATE 55000,
// recovery is in progress).
const Timeline = `('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer::bigint`

// ServerID is the SQL expression of the server's system identifier, set
// when its cluster was made by initdb and kept by its physical standbys: a
// dump restored elsewhere, or a cluster upgraded by pg_upgrade, has another.
const ServerID = `(SELECT system_identifier FROM pg_control_system())`

// Functions names the functions Timeline and ServerID call, for messages.
const Functions = "pg_current_wal_lsn(), pg_walfile_name() and pg_control_system()"
