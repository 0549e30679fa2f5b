package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
)

func (a *app) releaseCommand() *cobra.Command {
	var (
		epoch int64
		yes   bool
	)
	cmd := &cobra.Command{
		Use:   "release NODE --epoch EPOCH",
		Short: "Evict the holder of a node ID, but only the claim with the given epoch",
		Long: `Free a node ID held by a stuck or dead process, so that another can claim it at
once. Only the claim with the epoch given is evicted: if the node ID was
claimed again meanwhile, nothing changes, so a newer holder is never hit.
Take the epoch from "nodeid list" or "nodeid show".

The row keeps its epoch and its horizon: the next holder stamps only after
the evicted holder's horizon, so their IDs cannot collide. A live evicted
holder learns of it at its next renewal and stops minting.

Asks for confirmation on stdin unless --yes is given.`,
		Example: `  nodeid release 7 --epoch 42
  nodeid release 7 --epoch 42 --yes`,
		Args:              exactArgs(1, "one node ID"),
		ValidArgsFunction: a.completeNodes(true),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			node, err := parseNodeID(args[0])
			if err != nil {
				return usage(err)
			}
			if !cmd.Flags().Changed("epoch") {
				return usagef("--epoch is required: the epoch of the claim to evict (see \"nodeid show %d\")", node)
			}
			if epoch < 1 {
				return usagef("--epoch %d: epochs start at 1", epoch)
			}
			a.privileges = "SELECT and UPDATE on " + a.table + " and " + a.table + "_history"
			var (
				st  *store.Store
				r   store.Row
				now time.Time
			)
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				var err error
				st, r, now, err = a.nodeRow(ctx, node, "")
				return err
			})
			if err != nil {
				return err
			}
			switch {
			case r.Epoch == 0:
				return fmt.Errorf("node ID %d was never claimed (it is at epoch 0): nothing to release", node)
			case epoch > r.Epoch:
				return fmt.Errorf("node ID %d has not reached epoch %d: its current claim is epoch %d (%s); nothing released",
					node, epoch, r.Epoch, currentClaim(r, now))
			case epoch < r.Epoch:
				return fmt.Errorf("node ID %d is at epoch %d, not %d: the claim of epoch %d has ended, and the current one (%s) is not evicted by mistake; nothing released",
					node, r.Epoch, epoch, epoch, currentClaim(r, now))
			case r.State(now) == store.Free:
				return fmt.Errorf("node ID %d (epoch %d) is already free: nothing to release", node, epoch)
			}
			if !yes {
				fmt.Fprintf(a.stderr, "Evict %s, owner %s, epoch %d, of node ID %d (lease %s, expires %s)? The node ID becomes free for another process at once. [y/N] ",
					r.State(now), orDash(r.Owner), epoch, node, relative(r.AcquiredAt, now), relative(r.ExpiresAt, now))
				ok, err := confirm(a.stdin)
				fmt.Fprintln(a.stderr)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not released: the answer was not yes")
				}
			}
			var (
				done    bool
				horizon int64
			)
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				var err error
				done, horizon, err = st.Evict(ctx, node, epoch)
				return err
			})
			if err != nil {
				return err
			}
			if !done {
				return fmt.Errorf("node ID %d changed meanwhile (it is no longer held at epoch %d): nothing released", node, epoch)
			}
			_, err = fmt.Fprintf(a.stdout, "released node ID %d (epoch %d, owner %s); the next holder stamps after %s\n",
				node, epoch, orDash(r.Owner), exactMs(horizon))
			return err
		}),
	}
	cmd.Flags().Int64Var(&epoch, "epoch", 0, "the epoch of the claim to evict (required)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	_ = cmd.RegisterFlagCompletionFunc("epoch", a.completeEpoch)
	return cmd
}

// currentClaim describes the claim a row holds: "owner web-1, held,
// expires in 12m", "owner web-1, expired 3m ago" or "free".
func currentClaim(r store.Row, now time.Time) string {
	switch st := r.State(now); st {
	case store.Held:
		return fmt.Sprintf("owner %s, held, expires %s", orDash(r.Owner), relative(r.ExpiresAt, now))
	case store.Expired:
		return fmt.Sprintf("owner %s, expired %s", orDash(r.Owner), relative(r.ExpiresAt, now))
	default:
		return string(st)
	}
}

// confirm reads one line and reports whether it says yes.
func confirm(in io.Reader) (bool, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, errors.New("not released: no answer on stdin; pass --yes to release without asking")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
