// Package redact keeps passwords out of what the nodeid command prints:
// Redactor masks the passwords of the connection strings it was told of,
// by their structure, wherever they appear, and WithoutPassword rebuilds a
// connection string without its password for the command lines a message
// advises.
package redact
