// Package run holds "nodeid run", which runs a program in any language
// under a node-ID lease: it claims a node ID, exports it (and worker IDs
// computed from it, --export) to the program's environment, renews the
// lease while the program runs, and bounds the program and everything it
// starts by the lease's deadline through the warden (package warden), a
// process of its own ("nodeid run-warden", also here). It releases the node
// ID with the horizon the program's stamps need.
package run
