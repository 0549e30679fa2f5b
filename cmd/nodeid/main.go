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

	"github.com/nodeid/nodeid/cmd/nodeid/internal/app"
)

// What a release sets at build time (scripts/release), with
// -ldflags "-X main.version=v1.2.3 -X main.commit=SHA -X main.date=TIME":
// "nodeid version" prints them. Left empty, it reads Go's stamp of the
// build instead (the module version, and the commit of a build in a git
// checkout), or says that there is none.
var (
	version = "" // the release: v1.2.3
	commit  = "" // the commit it was built from
	date    = "" // when it was built, RFC 3339 in UTC
)

func main() {
	b := app.Build{Version: version, Commit: commit, Date: date}
	os.Exit(app.Main(b, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
