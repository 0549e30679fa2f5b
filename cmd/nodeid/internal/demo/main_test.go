package demo

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
)

// harness runs the demo and its workers, and init to make a table the demo
// must leave alone.
var harness = clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{NewCmdDemo(env, nil), NewCmdWorker(env), table.NewCmdInit(env, nil)}
}}

func TestMain(m *testing.M) { harness.Main(m) }
