package table

import (
	"os"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/ids"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/run"
)

// harness runs the table commands, and those the tests run beside them: who
// (on a table locked by a transaction), and run with its warden (a lease
// on the table made by init, a statement from schema run under it).
var harness = clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{
		NewCmdSchema(env, nil), NewCmdInit(env, nil), NewCmdList(env, nil), NewCmdShow(env, nil),
		NewCmdWatch(env, nil), NewCmdEvict(env, nil), NewCmdRelease(env), NewCmdPrune(env, nil),
		ids.NewCmdWho(env, nil), run.NewCmdRun(env, nil), run.NewCmdWarden(env),
	}
}}

func TestMain(m *testing.M) {
	// The tests run nodeid run in this process beside other work; the
	// processes they start again as nodeid (EnvBeCLI) run one each.
	if os.Getenv(clitest.EnvBeCLI) != "1" {
		run.ShareProcess()
	}
	harness.Main(m)
}
