// Package table holds the commands that work on the lease table itself:
// init and schema (create it, or print its DDL), list, show and watch (read
// it), release (evict a holder) and prune (trim the history). It also
// gives the demo what it prints of the table: Snapshot, Nodes.Write and
// WriteShow.
package table
