// Package floor is the engine of `nodeid bench --floor`: RunFloor measures
// the claim against the floor of a durable write (one row updated by its
// primary key) on each server it is given, with the plans of the claim on
// stale and fresh statistics, a new process's first Acquire and the drift
// of many claims of one node ID. It builds on package session, as measure
// does, and reports in report.Results.Floor.
package floor
