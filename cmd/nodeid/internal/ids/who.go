package ids

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/snowflake"
)

// notCovered is what who says of an ID no lease covers.
const notCovered = "no lease covers this ID (it was not minted by a fenced generator of this table, or its history was pruned, or its holder's clock was more than --max-skew behind the database's)"

// defaultMaxSkew is the default of who's --max-skew.
const defaultMaxSkew = 10 * time.Second

// traced is an ID and the claims that may have minted it.
type traced struct {
	decoded
	Claims []whoClaimJSON `json:"claims"`

	claims []admin.HistoryRow
}

// whoClaimJSON is a claim that may have minted an ID, in -o json: the
// claim, and by how many milliseconds the ID's millisecond precedes the
// claim's acquisition (0 if it does not): an answer that rests on the
// --max-skew allowance.
type whoClaimJSON struct {
	cli.ClaimJSON
	BeforeAcquiredMs int64 `json:"before_acquired_ms"`
}

// beforeAcquired returns by how many milliseconds ms precedes the
// millisecond in which c was acquired, or 0.
func beforeAcquired(c admin.HistoryRow, ms int64) int64 {
	return max(0, c.AcquiredAt.UnixMilli()-ms)
}

// WhoOptions are the arguments and flags of who.
type WhoOptions struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs
	idArgs
	MaxSkew time.Duration
}

// NewCmdWho returns "nodeid who". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdWho(env *cli.Env, runF func(context.Context, *WhoOptions) error) *cobra.Command {
	o := &WhoOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "who ID...",
		Short: "Find the lease (owner and epoch) that minted each ID",
		Long: `Decode each ID and look up the history table: which owner and epoch held the
ID's node ID in the ID's millisecond. Horizons split each node ID's time line
between its successive claims, so an ID minted by a fenced generator of this
table has exactly one answer; if the layout has epoch bits, only claims whose
epoch matches them are considered. The layout flags must match the
generator's (see below).

A claim's IDs are stamped after the previous holder's horizon, and not before
the claim was acquired, less --max-skew: who assumes that the holders' clocks
were within --max-skew of the database's. An answer that rests on that
allowance (the ID's millisecond precedes the claim's acquisition) says so. An
ID no lease covers was not minted by a fenced generator of this table, or its
history was pruned, or its holder's clock was further behind: then the
command says so and exits with 1.

` + layoutRules + `

` + idFormRules,
		Example: `  nodeid who 1805834298273538048
  nodeid who --epoch-bits 2 -o json 1805834298273538048 b58:3K4aSBmBfy1
  nodeid who --swap-node-halves 1805834298273566727`,
		Args: cli.MinArgs(1, "one or more IDs"),
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, c *cli.Conn) error {
			o.Conn, o.Args = c, args
			return cli.Run(cmd.Context(), o, runF, whoRun)
		}),
	}
	o.register(cmd)
	cmd.Flags().Var(cli.NewDurationValue(&o.MaxSkew, defaultMaxSkew), "max-skew",
		"the clock skew allowed between a holder and the database: a claim's IDs are stamped no earlier than its acquisition less this")
	return cmd
}

func whoRun(ctx context.Context, o *WhoOptions) error {
	var (
		out     []traced
		missing int
	)
	err := o.Conn.Timed(ctx, func(ctx context.Context) error {
		var err error
		out, missing, err = trace(ctx, o.Conn, o.ids, o.layout, o.MaxSkew)
		return err
	})
	if err != nil {
		return err
	}
	if o.Output.Document() {
		err = cli.WriteDoc(o.Env.Out, o.Output.Value, out)
	} else {
		err = writeTraced(o.Env.Out, out, o.layout, o.Env.Loc)
	}
	if err != nil {
		return err
	}
	if missing > 0 {
		return &cli.ExitError{Code: cli.ExitFailure, Msg: fmt.Sprintf("%d of %d IDs: %s", missing, len(out), notCovered)}
	}
	return nil
}

// trace looks up the claims that may have minted each decoded ID, allowing
// maxSkew between a holder's clock and the database's, and keeping only the
// claims whose epoch matches the ID's epoch bits if the layout has any.
// missing counts the IDs no claim covers.
func trace(ctx context.Context, c *cli.Conn, ds []decoded, l idlayout.IDLayout, maxSkew time.Duration) (out []traced, missing int, err error) {
	need := "SELECT on " + c.Table() + " and " + c.Table() + "_history"
	st, err := c.Store(cli.AllNodes)
	if err != nil {
		return nil, 0, cli.Needs(need, err)
	}
	for _, d := range ds {
		cs, err := st.Who(ctx, d.Node, d.UnixMs, maxSkew)
		if err != nil {
			return nil, 0, cli.Needs(need, err)
		}
		t := traced{decoded: d, Claims: []whoClaimJSON{}}
		for _, c := range cs {
			if l.EpochBits > 0 && c.Epoch&(1<<l.EpochBits-1) != d.parts.Epoch {
				continue
			}
			t.claims = append(t.claims, c)
			t.Claims = append(t.Claims, whoClaimJSON{cli.NewClaimJSON(c), beforeAcquired(c, d.UnixMs)})
		}
		if len(t.claims) == 0 {
			missing++
		}
		out = append(out, t)
	}
	return out, missing, nil
}

func writeTraced(w io.Writer, ts []traced, l idlayout.IDLayout, loc *time.Location) error {
	fmt.Fprintln(w, describeLayout(l))
	for _, t := range ts {
		fmt.Fprintf(w, "\n%s (%s)\n", t.ID, t.readAs())
		tw := cli.NewTable(w)
		writeFields(tw, t.decoded, l, loc)
		if len(t.claims) == 0 {
			tw.Row("  held by", notCovered)
		}
		for i, c := range t.claims {
			label := "  held by"
			if len(t.claims) > 1 {
				label = fmt.Sprintf("  candidate %d", i+1)
			}
			tw.Row(label, "owner "+cli.OrDash(c.Owner)+", epoch "+strconv.FormatInt(c.Epoch, 10))
			tw.Row("  lease", leaseSpan(c))
			if b := beforeAcquired(c, t.UnixMs); b > 0 {
				tw.Row("  note", fmt.Sprintf("stamped %s before the claim was acquired: the answer rests on the --max-skew allowance for the holder's clock",
					time.Duration(b)*time.Millisecond))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// leaseSpan describes a claim's life: "acquired T, released T".
func leaseSpan(c admin.HistoryRow) string {
	s := "acquired " + cli.Exact(c.AcquiredAt)
	if c.EndedAt.IsZero() {
		return s + ", still held"
	}
	return s + ", ended " + cli.Exact(c.EndedAt) + " (" + cli.OrDash(string(c.EndReason)) + ")"
}

// Traced is IDs of the default layout and the claims that may have minted
// them: what the demo shows of "nodeid who".
type Traced struct {
	ts []traced
	l  idlayout.IDLayout
}

// Trace finds the claims that may have minted ids, IDs of the default
// layout, as "nodeid who" does with its default flags.
func Trace(ctx context.Context, c *cli.Conn, ids ...bw.ID) (Traced, error) {
	l := idlayout.IDLayout{Layout: snowflake.DefaultLayout, Order: idlayout.SnowflakeOrder}
	ds := make([]decoded, 0, len(ids))
	for _, id := range ids {
		ds = append(ds, decodeID(id.String(), formDecimal, id, l))
	}
	ts, _, err := trace(ctx, c, ds, l, defaultMaxSkew)
	return Traced{ts: ts, l: l}, err
}

// Write prints the IDs and their claims as "nodeid who" does, with local
// times in loc.
func (t Traced) Write(w io.Writer, loc *time.Location) error { return writeTraced(w, t.ts, t.l, loc) }
