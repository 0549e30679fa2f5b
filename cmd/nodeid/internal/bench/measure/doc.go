// Package measure is the engine of `nodeid bench`: it measures nodeid
// against a real PostgreSQL: the herd start of many processes at once, the
// library's overhead over the bare SQL (against pgbench), the claim's cost
// as the node range fills up, the statements and round trips of each
// operation, and the renewal load one server carries. What it shares with
// the floor benchmark (package floor) on a server, its scratch tables and
// counted connections, is package session's.
//
// Every figure is a ratio or a distribution measured side by side in one run,
// on scratch tables (nodeid_bench_*) that Run creates and drops; it never
// touches a live lease table. The figures are report.Results, which the
// command prints as text and scripts/bench.sh turns into docs/BENCHMARKS.md
// (see cmd/nodeid/tools/benchreport, in a nested module).
//
// The Go benchmarks of this package
// (go test -run '^$' -bench . ./cmd/nodeid/internal/bench/measure) measure
// the statement layer, admin.Store, per operation.
package measure
