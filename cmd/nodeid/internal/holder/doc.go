// Package holder is what the commands that hold a lease (run and serve)
// share: their flags (Flags), claiming a node ID and waiting for one
// (Acquire), waiting until this host's clock is past the previous holder's
// horizon (WaitPastHorizon), releasing a lease nothing ran under
// (ReleaseUnused), the metrics server with /healthz (Metrics), and the
// library's log lines in the command's format (NewLogger).
package holder
