// Package serve holds "nodeid serve": an HTTP service that mints fenced
// Snowflake IDs under a node-ID lease it keeps, answers 503 the moment the
// lease is lost, and claims a node ID again by itself.
package serve
