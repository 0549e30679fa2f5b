package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// completionTimeout bounds the database reads of shell completion, which a
// user waits for at the prompt.
const completionTimeout = 2 * time.Second

// completeNodes completes the node ID argument of show (every node ID ever
// claimed) or, if releasable, of release (those held or expired), from the
// lease table, each with its state, owner and epoch. When the table cannot
// be read in time it offers nothing, quietly: a completion must not print
// errors at the prompt.
func (a *app) completeNodes(releasable bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 || postgres.ValidateTable(a.table) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		n, err := a.snapshot(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, r := range n.filter(false, "") {
			id, st := strconv.FormatInt(r.NodeID, 10), r.State(n.now)
			if (releasable && st == store.Free) || !strings.HasPrefix(id, toComplete) {
				continue
			}
			out = append(out, cobra.CompletionWithDesc(id, fmt.Sprintf("%s, owner %s, epoch %d", st, orDash(r.Owner), r.Epoch)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeEpoch completes release's --epoch with the current epoch of the
// node ID given, if it is held or expired; quietly nothing otherwise.
func (a *app) completeEpoch(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) != 1 || postgres.ValidateTable(a.table) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	node, err := parseNodeID(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	_, r, now, err := a.nodeRow(ctx, node, "")
	if err != nil || r.State(now) == store.Free {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []cobra.Completion{cobra.CompletionWithDesc(strconv.FormatInt(r.Epoch, 10),
		fmt.Sprintf("%s, owner %s", r.State(now), orDash(r.Owner)))}, cobra.ShellCompDirectiveNoFileComp
}
