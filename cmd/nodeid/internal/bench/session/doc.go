// Package session is what the measurements of `nodeid bench` (packages
// measure and floor) share on one server: a Session's admin handle, its
// scratch tables (nodeid_bench_*), which it creates and drops, connections
// whose statements and round trips a Counter counts, the library's
// statements captured from the wire, the claim's plans, pg_stat_statements
// snapshots, the sampling of lock waits, and the CPU time of processes.
package session
