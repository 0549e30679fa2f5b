// Package report holds the figures of one run of `nodeid bench` (Results,
// as the engine, package measure, records them and --json writes them), the
// summaries and target verdicts computed from them, and their text report
// (WriteText). It measures nothing and needs no database: the benchmark
// report generator (cmd/nodeid/tools/benchreport) reads the same types.
package report
