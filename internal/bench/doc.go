// Package bench measures nodeid against a real PostgreSQL: the herd start of
// many processes at once, the library's overhead over the bare SQL (against
// pgbench), the claim's cost as the node range fills up, the statements and
// round trips of each operation, and the renewal load one server carries.
//
// Every figure is a ratio or a distribution measured side by side in one run,
// on scratch tables (nodeid_bench_*) that Run creates and drops; it never
// touches a live lease table. `nodeid bench` is its command line, and
// scripts/bench.sh turns its JSON results into docs/BENCHMARKS.md (see
// tools/benchreport, in the nested module tools/).
//
// The Go benchmarks of this package (go test -run '^$' -bench . ./internal/bench)
// measure the statement layer, store.Store, per operation.
package bench
