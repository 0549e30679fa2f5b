// Package demo holds "nodeid demo", which shows the whole story (leasing,
// minting, a crash and a takeover, or with --failover a database failover)
// on a throwaway PostgreSQL or in a scratch table, with worker processes of
// its own: this program re-executed as the hidden "nodeid demo-worker",
// also here.
package demo
