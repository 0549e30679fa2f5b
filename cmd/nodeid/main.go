// Command nodeid inspects and repairs the node-ID lease table of
// github.com/nodeid/nodeid, decodes Snowflake IDs and traces them to the
// lease that minted them, runs programs written in any language under a
// lease, and demonstrates the whole on a throwaway PostgreSQL.
//
// Run "nodeid --help" for the commands. Exit codes: 0 success, 1 failure,
// 2 bad usage (flags, arguments, values), 3 no node ID available; "nodeid
// run" exits with its command's exit code (128+N if a signal N killed it).
// The commands live in packages of their own under internal/.
package main

import (
	"os"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/root"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; otherwise the module version of the
// build, or "(devel)".
var version = ""

func main() {
	os.Exit(root.Main(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
