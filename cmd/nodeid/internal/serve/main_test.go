package serve

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
)

// harness runs serve, and the table commands the tests use beside it: init
// to make a table, release to evict a holder.
var harness = clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{NewCmdServe(env, nil), table.NewCmdInit(env, nil), table.NewCmdEvict(env, nil), table.NewCmdRelease(env)}
}}

func TestMain(m *testing.M) { harness.Main(m) }
