package run

import (
	"flag"
	"os"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
)

// harness runs run and its warden, and the table commands the tests use
// beside them: init to make a table, release to evict a holder.
var harness = clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{NewCmdRun(env, nil), NewCmdWarden(env), table.NewCmdInit(env, nil), table.NewCmdEvict(env, nil), table.NewCmdRelease(env)}
}}

func TestMain(m *testing.M) {
	// The tests run nodeid run in this process, several at once; the
	// processes they start again as nodeid (EnvBeCLI) run one each.
	if os.Getenv(clitest.EnvBeCLI) != "1" {
		ShareProcess()
		waitingParallel()
	}
	harness.Main(m)
}

// waitingParallel runs four parallel tests at a time, not GOMAXPROCS,
// unless the run gives -parallel (as pgtest.MainWaiting does): the fencing,
// export and outage tests spend their time waiting for a lease's TTL to
// pass or a server to come back, not on the CPU. The tests whose 3s lease
// must outlast the start of their command (the freeze tests' first holder
// among them) run one at a time, before them: beside three others on a
// loaded machine, a claim took longer than that.
func waitingParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !given {
		_ = f.Value.Set("4")
	}
}
