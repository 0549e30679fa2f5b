package app

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// harness runs the whole command, as the binary does.
var harness = clitest.Harness{Top: func(env *cli.Env) *cobra.Command { return NewCmd(env, Build{}) }}

func TestMain(m *testing.M) { harness.Main(m) }
