// Package app assembles the nodeid command: every command of the packages
// beside it under the nodeid command of package cli (cli.NewCommand). main
// calls Main.
package app

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/audit"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/demo"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/ids"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/run"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/serve"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
)

// Main runs the command line args and returns the process exit code. It
// is the whole program, minus os.Exit, so that tests can run it
// in-process. b is what the release set at build time (the zero Build for
// none).
func Main(b Build, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := cli.NewEnv(stdin, stdout, stderr)
	return cli.Execute(env, NewCmd(env, b), args)
}

// NewCmd returns the nodeid command with every command of nodeid, in the
// order of its help; b is what the release set at build time.
func NewCmd(env *cli.Env, b Build) *cobra.Command {
	return cli.NewCommand(env,
		table.NewCmdSchema(env, nil),
		table.NewCmdInit(env, nil),
		table.NewCmdList(env, nil),
		table.NewCmdShow(env, nil),
		table.NewCmdWatch(env, nil),
		table.NewCmdEvict(env, nil),
		table.NewCmdRelease(env),
		ids.NewCmdDecode(env, nil),
		ids.NewCmdWho(env, nil),
		audit.NewCmdAudit(env, nil),
		table.NewCmdPrune(env, nil),
		run.NewCmdRun(env, nil),
		serve.NewCmdServe(env, nil),
		run.NewCmdWarden(env),
		demo.NewCmdDemo(env, nil),
		bench.NewCmdBench(env, nil),
		demo.NewCmdWorker(env),
		NewCmdVersion(env, b, nil),
	)
}
