package table

import (
	"context"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestOptionsValidatedBeforeRun: a command's options reach its body
// validated and resolved, and bad ones stop it before its body runs, with
// no database.
func TestOptionsValidatedBeforeRun(t *testing.T) {
	t.Parallel()
	var (
		initOpts *InitOptions
		listOpts *ListOptions
		ran      int
	)
	h := clitest.Harness{Commands: func(env *cli.Env) []*cobra.Command {
		return []*cobra.Command{
			NewCmdInit(env, func(_ context.Context, o *InitOptions) error { ran++; initOpts = o; return nil }),
			NewCmdList(env, func(_ context.Context, o *ListOptions) error { ran++; listOpts = o; return nil }),
		}
	}}
	h.Must(t, "init", "--range", "8-15", "--max-ttl", "30s", "--table", "ids.nodes")
	if initOpts == nil || initOpts.nodes != (cli.NodeRange{Lo: 8, Hi: 15}) || !initOpts.MaxTTLGiven || initOpts.Conn.Table() != "ids.nodes" {
		t.Errorf("init's options: %+v", initOpts)
	}
	h.Must(t, "list", "--state", "held", "-o", "wide")
	if listOpts == nil || listOpts.State != "held" || listOpts.Output.Value != cli.OutWide {
		t.Errorf("list's options: %+v", listOpts)
	}
	for _, args := range [][]string{
		{"init", "--nodes", "4", "--range", "0-3"},
		{"init", "--max-ttl", "2d"},
		{"init", "--replication", "semi"},
		{"list", "--state", "gone"},
		{"list", "-o", "csv"},
		{"list", "--table", "no such table"},
	} {
		clitest.WantExit(t, h.Run(t, args...), cli.ExitUsage)
	}
	if ran != 2 {
		t.Errorf("the bodies ran %d times, want 2: bad options reached a body", ran)
	}
}
