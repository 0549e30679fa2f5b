// Package bench holds "nodeid bench", which measures claims, renewals and
// releases on a database in scratch tables of its own: its flags are the
// Config of the engine (package measure), and it prints the figures as the
// text report of package report.
package bench
