// Package opspack holds the live test of the operator pack (deploy/): a
// real Prometheus scrapes real "nodeid serve" and "nodeid run
// --metrics-addr" processes, built as shipped, on a real PostgreSQL; every
// query of the Grafana dashboard returns data, and the alert rules go
// pending and fire when what they watch happens. It has tests only: the
// nodeid binary never links it.
package opspack
