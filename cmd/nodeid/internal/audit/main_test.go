package audit

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// harness runs audit.
var harness = clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{NewCmdAudit(env, nil)}
}}

func TestMain(m *testing.M) { harness.Main(m) }
