// Package cli is the core every command of nodeid shares: the environment
// (Env: streams, process environment, clock), the nodeid command and its
// global flags (NewCommand, Execute), each command's connection to the
// database (Conn: settings, handle, --timeout, errors explained with what
// the connection knows), exit codes and usage errors, output formats
// (OutputFlag, Table, WriteDoc) and the flag types (durations, node
// ranges). The masking of passwords is package redact's (Env.Redact), the
// ID layouts package idlayout's.
//
// A command lives in a package of its own under cmd/nodeid/internal/: its
// constructor takes the Env (NewCmdX(env, runF)), its options are a struct
// validated before it runs, and its body runs under Action, which hands it
// a Conn. Nothing here knows of any command.
package cli
