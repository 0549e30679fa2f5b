package table

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// completionTimeout bounds the database reads of shell completion, which a
// user waits for at the prompt.
const completionTimeout = 2 * time.Second

// completeNodes completes the node ID argument of show (every node ID ever
// claimed) or, if releasable, of release (those held or expired), from the
// lease table, each with its state, owner and epoch. When the table cannot
// be read in time it offers nothing, quietly: a completion must not print
// errors at the prompt.
func completeNodes(env *cli.Env, releasable bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if _, err := cli.TableOf(cmd); len(args) > 0 || err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c := cli.NewConn(env, cmd)
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		n, err := Snapshot(ctx, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, r := range n.filter(false, "") {
			id, st := strconv.FormatInt(r.NodeID, 10), r.State(n.Now)
			if (releasable && st == admin.Free) || !strings.HasPrefix(id, toComplete) {
				continue
			}
			out = append(out, cobra.CompletionWithDesc(id, fmt.Sprintf("%s, owner %s, epoch %d", st, cli.OrDash(r.Owner), r.Epoch)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeEpoch completes release's --epoch with the current epoch of the
// node ID given, if it is held or expired; quietly nothing otherwise.
func completeEpoch(env *cli.Env) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if _, err := cli.TableOf(cmd); len(args) != 1 || err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		node, err := cli.ParseNodeID(args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c := cli.NewConn(env, cmd)
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		_, r, now, err := c.NodeRow(ctx, node, false)
		if err != nil || r.State(now) == admin.Free {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return []cobra.Completion{cobra.CompletionWithDesc(strconv.FormatInt(r.Epoch, 10),
			fmt.Sprintf("%s, owner %s", r.State(now), cli.OrDash(r.Owner)))}, cobra.ShellCompDirectiveNoFileComp
	}
}
