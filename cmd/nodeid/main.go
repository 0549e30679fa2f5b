// Command nodeid inspects and repairs the node-ID lease table of
// github.com/nodeid/nodeid, decodes Snowflake IDs and traces them to the
// lease that minted them, runs programs written in any language under a
// lease, and demonstrates the whole on a throwaway PostgreSQL.
//
// Run "nodeid --help" for the commands. Exit codes: 0 success, 1 failure,
// 2 bad usage (flags, arguments, values), 3 no node ID available; "nodeid
// run" exits with its command's exit code (128+N if a signal N killed it).
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process exit code.
// It is the whole program, minus os.Exit, so that tests can run it
// in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return newApp(stdin, stdout, stderr).main(args)
}
