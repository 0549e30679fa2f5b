package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/internal/store"
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

	claims []store.HistoryRow
}

// whoClaimJSON is a claim that may have minted an ID, in -o json: the
// claim, and by how many milliseconds the ID's millisecond precedes the
// claim's acquisition (0 if it does not): an answer that rests on the
// --max-skew allowance.
type whoClaimJSON struct {
	claimJSON
	BeforeAcquiredMs int64 `json:"before_acquired_ms"`
}

// beforeAcquired returns by how many milliseconds ms precedes the
// millisecond in which c was acquired, or 0.
func beforeAcquired(c store.HistoryRow, ms int64) int64 {
	return max(0, c.AcquiredAt.UnixMilli()-ms)
}

func (a *app) whoCommand() *cobra.Command {
	var (
		lf      layoutFlags
		ff      formatFlag
		output  outputFlag
		maxSkew time.Duration
	)
	cmd := &cobra.Command{
		Use:   "who ID...",
		Short: "Find the lease (owner and epoch) that minted each ID",
		Long: `Decode each ID and look up the history table: which owner and epoch held the
ID's node ID in the ID's millisecond. Horizons split each node ID's time line
between its successive claims, so an ID minted by a fenced generator of this
table has exactly one answer; if the layout has epoch bits, only claims whose
epoch matches them are considered. The layout flags must match the
generator's.

A claim's IDs are stamped after the previous holder's horizon, and not before
the claim was acquired, less --max-skew: who assumes that the holders' clocks
were within --max-skew of the database's. An answer that rests on that
allowance (the ID's millisecond precedes the claim's acquisition) says so. An
ID no lease covers was not minted by a fenced generator of this table, or its
history was pruned, or its holder's clock was further behind: then the
command says so and exits with 1.

` + idFormRules,
		Example: `  nodeid who 1805834298273538048
  nodeid who --epoch-bits 2 -o json 1805834298273538048 b58:3K4aSBmBfy1`,
		Args: minArgs(1, "one or more IDs"),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			l, ds, err := decodeArgs(&lf, ff.form, &output, args)
			if err != nil {
				return err
			}
			var (
				out     []traced
				missing int
			)
			err = a.timed(cmd.Context(), func(ctx context.Context) error {
				var err error
				out, missing, err = a.trace(ctx, ds, l, maxSkew)
				return err
			})
			if err != nil {
				return err
			}
			if output.document() {
				err = writeDoc(a.stdout, output.value, out)
			} else {
				err = a.writeTraced(a.stdout, out, l)
			}
			if err != nil {
				return err
			}
			if missing > 0 {
				return &exitCodeError{code: exitFailure, msg: fmt.Sprintf("%d of %d IDs: %s", missing, len(out), notCovered)}
			}
			return nil
		}),
	}
	lf.register(cmd)
	ff.register(cmd)
	output.register(cmd, outTable, outJSON, outYAML)
	cmd.Flags().Var(newDurationValue(&maxSkew, defaultMaxSkew), "max-skew",
		"the clock skew allowed between a holder and the database: a claim's IDs are stamped no earlier than its acquisition less this")
	return cmd
}

// trace looks up the claims that may have minted each decoded ID, allowing
// maxSkew between a holder's clock and the database's, and keeping only the
// claims whose epoch matches the ID's epoch bits if the layout has any.
// missing counts the IDs no claim covers.
func (a *app) trace(ctx context.Context, ds []decoded, l snowflake.Layout, maxSkew time.Duration) (out []traced, missing int, err error) {
	a.privileges = "SELECT on " + a.table + " and " + a.table + "_history"
	st, err := a.store(allNodes)
	if err != nil {
		return nil, 0, err
	}
	for _, d := range ds {
		cs, err := st.Who(ctx, d.Node, d.UnixMs, maxSkew)
		if err != nil {
			return nil, 0, err
		}
		t := traced{decoded: d, Claims: []whoClaimJSON{}}
		for _, c := range cs {
			if l.EpochBits > 0 && c.Epoch&(1<<l.EpochBits-1) != d.parts.Epoch {
				continue
			}
			t.claims = append(t.claims, c)
			t.Claims = append(t.Claims, whoClaimJSON{claimToJSON(c), beforeAcquired(c, d.UnixMs)})
		}
		if len(t.claims) == 0 {
			missing++
		}
		out = append(out, t)
	}
	return out, missing, nil
}

func (a *app) writeTraced(w io.Writer, ts []traced, l snowflake.Layout) error {
	fmt.Fprintln(w, describeLayout(l))
	for _, t := range ts {
		fmt.Fprintf(w, "\n%s (%s)\n", t.ID, t.readAs())
		tw := newTable(w)
		a.writeFields(tw, t.decoded, l)
		if len(t.claims) == 0 {
			tw.row("  held by", notCovered)
		}
		for i, c := range t.claims {
			label := "  held by"
			if len(t.claims) > 1 {
				label = fmt.Sprintf("  candidate %d", i+1)
			}
			tw.row(label, "owner "+orDash(c.Owner)+", epoch "+strconv.FormatInt(c.Epoch, 10))
			tw.row("  lease", leaseSpan(c))
			if b := beforeAcquired(c, t.UnixMs); b > 0 {
				tw.row("  note", fmt.Sprintf("stamped %s before the claim was acquired: the answer rests on the --max-skew allowance for the holder's clock",
					time.Duration(b)*time.Millisecond))
			}
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	return nil
}

// leaseSpan describes a claim's life: "acquired T, released T".
func leaseSpan(c store.HistoryRow) string {
	s := "acquired " + exact(c.AcquiredAt)
	if c.EndedAt.IsZero() {
		return s + ", still held"
	}
	return s + ", ended " + exact(c.EndedAt) + " (" + orDash(string(c.EndReason)) + ")"
}
