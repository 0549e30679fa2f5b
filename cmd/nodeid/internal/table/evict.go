package table

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// EvictOptions are the argument and flags of evict.
type EvictOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Node       int64
	Epoch      int64
	EpochGiven bool // --epoch was given
	Yes        bool
}

// Validate checks that the epoch is given and possible.
func (o *EvictOptions) Validate() error {
	if !o.EpochGiven {
		return cli.Usagef("--epoch is required: the epoch of the claim to evict (see \"nodeid show %d\")", o.Node)
	}
	if o.Epoch < 1 {
		return cli.Usagef("--epoch %d: epochs start at 1", o.Epoch)
	}
	return nil
}

// NewCmdEvict returns "nodeid evict". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdEvict(env *cli.Env, runF func(context.Context, *EvictOptions) error) *cobra.Command {
	o := &EvictOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "evict NODE --epoch EPOCH",
		Short: "End another process's lease of a node ID, but only the claim with the given epoch",
		Long: `End the lease of a node ID held by a process that should not hold it: the
holder learns of it at its next renewal and stops minting. Only the claim with
the epoch given is evicted: if the node ID was claimed again meanwhile,
nothing changes, so a newer holder is never hit. Take the epoch from
"nodeid list" or "nodeid show".

The node ID does not become claimable at once: the evicted holder may mint
until its local deadline, which comes before the lease's expiry, so the row
keeps its expiry and its horizon, and another process can claim it once the
lease has expired and the horizon has passed ("nodeid list" shows it as
evicted until then, with the time it becomes claimable). Freeing it sooner
would be safe only while no database failover or restore loses the eviction.
The row keeps its epoch: the next holder's is higher.

Asks for confirmation on stdin unless --yes is given.`,
		Example: `  nodeid evict 7 --epoch 42
  nodeid evict 7 --epoch 42 --yes`,
		Args:              cli.ExactArgs(1, "one node ID"),
		ValidArgsFunction: completeNodes(env, true),
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, c *cli.Conn) error {
			node, err := cli.ParseNodeID(args[0])
			if err != nil {
				return cli.Usage(err)
			}
			o.Conn, o.Node, o.EpochGiven = c, node, cmd.Flags().Changed("epoch")
			return cli.Run(cmd.Context(), o, runF, evictRun)
		}),
	}
	cmd.Flags().Int64Var(&o.Epoch, "epoch", 0, "the epoch of the claim to evict (required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	_ = cmd.RegisterFlagCompletionFunc("epoch", completeEpoch(env))
	return cmd
}

// NewCmdRelease returns "nodeid release", the name evict had: hidden, and
// deprecated for one release.
func NewCmdRelease(env *cli.Env) *cobra.Command {
	cmd := NewCmdEvict(env, nil)
	cmd.Use = "release NODE --epoch EPOCH"
	cmd.Hidden = true
	cmd.Deprecated = `it evicts another process's lease: use "nodeid evict"; "release" will be removed in the next release`
	return cmd
}

func evictRun(ctx context.Context, o *EvictOptions) error {
	table := o.Conn.Table()
	return cli.Needs("EXECUTE on function "+table+"_evict (nodeid init --grant-operator ROLE)", evict(ctx, o))
}

// evict evicts the claim of o.Epoch of o.Node, once confirmed.
func evict(ctx context.Context, o *EvictOptions) error {
	c, node, epoch := o.Conn, o.Node, o.Epoch
	var (
		st  *admin.Store
		r   admin.Row
		now time.Time
	)
	err := c.Timed(ctx, func(ctx context.Context) error {
		var err error
		st, r, now, err = c.NodeRow(ctx, node, false)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case r.Epoch == 0:
		return fmt.Errorf("node ID %d was never claimed (it is at epoch 0): nothing to evict", node)
	case epoch > r.Epoch:
		return fmt.Errorf("node ID %d has not reached epoch %d: its current claim is epoch %d (%s); nothing evicted",
			node, epoch, r.Epoch, currentClaim(r, now))
	case epoch < r.Epoch:
		return fmt.Errorf("node ID %d is at epoch %d, not %d: the claim of epoch %d has ended, and the current one (%s) is not evicted by mistake; nothing evicted",
			node, r.Epoch, epoch, epoch, currentClaim(r, now))
	case r.Owner == "":
		return fmt.Errorf("node ID %d (epoch %d) is not held (%s): nothing to evict", node, epoch, r.State(now))
	}
	if !o.Yes {
		stderr := o.Env.Err
		fmt.Fprintf(stderr, "Evict %s, owner %s, epoch %d, of node ID %d (lease %s, expires %s)? Its holder stops at its next renewal; the node ID becomes claimable once the lease has expired and its horizon passed. [y/N] ",
			r.State(now), cli.OrDash(r.Owner), epoch, node, cli.Relative(r.AcquiredAt, now), cli.Relative(r.ExpiresAt, now))
		ok, err := confirm(o.Env.In, errors.New("not evicted: no answer on stdin; pass --yes to evict without asking"))
		fmt.Fprintln(stderr)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not evicted: the answer was not yes")
		}
	}
	var ev admin.Eviction
	err = c.Timed(ctx, func(ctx context.Context) error {
		var err error
		ev, err = st.Evict(ctx, node, epoch)
		return err
	})
	if err != nil {
		return err
	}
	if !ev.OK {
		return fmt.Errorf("node ID %d changed meanwhile (it is no longer held at epoch %d): nothing evicted", node, epoch)
	}
	_, err = fmt.Fprintf(o.Env.Out, "evicted node ID %d (epoch %d, owner %s): its holder stops at its next renewal; the node ID is claimable after %s (%s), once the lease has expired and its horizon passed\n",
		node, epoch, cli.OrDash(r.Owner), cli.Exact(ev.ClaimableAfter()), cli.Relative(ev.ClaimableAfter(), ev.Now))
	return err
}

// currentClaim describes the claim a row holds: "owner web-1, held,
// expires in 12m", "owner web-1, expired 3m ago" or "free".
func currentClaim(r admin.Row, now time.Time) string {
	switch st := r.State(now); st {
	case admin.Held:
		return fmt.Sprintf("owner %s, held, expires %s", cli.OrDash(r.Owner), cli.Relative(r.ExpiresAt, now))
	case admin.Expired:
		return fmt.Sprintf("owner %s, expired %s", cli.OrDash(r.Owner), cli.Relative(r.ExpiresAt, now))
	default:
		return string(st)
	}
}

// confirm reads one line and reports whether it says yes; without one
// (stdin closed or empty) it fails with noAnswer.
func confirm(in io.Reader, noAnswer error) (bool, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, noAnswer
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
