package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/table"
	"github.com/nodeid/nodeid/pgserver"
)

// failover is the story of "nodeid demo --failover": a primary and an
// asynchronous standby; a claim that only the primary sees; the primary
// crashes and the standby is promoted without it; the claim's holder learns
// that its claim was lost, the node ID is quarantined, then claimed again
// at an epoch of a new era, while the other workers keep their
// leases.
func (d *demo) failover(ctx context.Context) error {
	if _, source := d.c.DSNSource(); source == cli.EnvDatabaseURL {
		fmt.Fprintf(d.out, "(%s is set: the failover demo leaves that database alone and uses servers of its own)\n", cli.EnvDatabaseURL)
	}
	d.step("Starting a throwaway PostgreSQL primary and an asynchronous streaming standby")
	pair, err := pgserver.StartPair(ctx)
	if err != nil {
		if d.interrupted.Err() != nil {
			return errInterrupted
		}
		return fmt.Errorf("cannot start a throwaway primary and standby: %w", err)
	}
	d.cleanups = append(d.cleanups, func() { _ = pair.Close() })
	db, err := pair.Primary.CreateDatabase(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "primary at %s, standby at %s (replicating through a proxy the demo can cut), database %s; removed at the end\n",
		pair.Primary.Addr(), pair.Standby.Addr(), db)
	d.dsn = pair.DSN(db) // every process follows the primary: host=primary,standby target_session_attrs=read-write
	c, rng := d.c, cli.NodeRange{Lo: 0, Hi: demoWorkers - 1}
	c.SetDSN(d.dsn)

	d.step("nodeid init --table %s --range %s --max-ttl %s", c.Table(), rng, demoTTL)
	st, err := c.Store(rng)
	if err != nil {
		return err
	}
	if err := st.Apply(ctx, demoTTL); err != nil {
		return err
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		return err
	}
	if err := d.table(ctx, true); err != nil {
		return err
	}

	d.step("Starting %d workers, each leasing a node ID (TTL %s) and minting an ID every %s, on a multi-host DSN", demoWorkers, demoTTL, demoMint)
	if err := d.startWorkers(ctx); err != nil {
		return err
	}
	if err := pair.WaitReplayed(ctx); err != nil {
		return err
	}
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("Cutting the standby's replication: the primary's commits stop reaching it")
	pair.Repl.Cut()
	leaving := d.workers[1]
	_, node, epoch, _ := leaving.state()
	leaving.stop(10 * time.Second)
	fmt.Fprintf(d.out, "%s released node ID %d (epoch %d) on the primary only.\n", leaving.owner, node, epoch)
	lost, err := d.startWorker(demoWorkers + 1)
	if err != nil {
		return err
	}
	if err := d.waitMinted(ctx, lost, 3); err != nil {
		return err
	}
	_, lnode, lepoch, lminted := lost.state()
	fmt.Fprintf(d.out, "%s claimed node ID %d at epoch %d and minted %d IDs, the last %d: a claim the standby never received.\n",
		lost.owner, lnode, lepoch, len(lminted), lminted[len(lminted)-1])

	d.step("Killing the primary (an immediate shutdown, as a crash) and promoting the standby")
	if err := pair.Primary.Stop(ctx, pgserver.Immediate); err != nil {
		return err
	}
	if err := pair.Promote(ctx); err != nil {
		return err
	}
	promoted := time.Now()
	tl, err := pair.Standby.Timeline(ctx)
	if err != nil {
		return err
	}
	// The demo's own connections went to the old primary: new ones find
	// the new primary through the multi-host DSN.
	c.Reopen()
	if st, err = c.Store(rng); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "The standby is the primary now, on timeline %d. It lacks %s's claim of node ID %d, and still has %s's lease of it, which nobody renews:\n",
		tl, lost.owner, lnode, leaving.owner)
	if err := d.table(ctx, true); err != nil {
		return err
	}
	if err := d.waitState(ctx, lnode, admin.Quarantined); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "Once that lease expired, node ID %d, last written before the failover, stays quarantined until every lease the old primary could have granted is past its deadline: the table's maximum TTL and a tenth (%s) after the first statement on the new primary began the table's next generation.\n",
		lnode, demoTTL+demoTTL/10)
	if err := d.table(ctx, true); err != nil {
		return err
	}

	d.step("%s learns at its first statement on the new primary that its claim was lost, and stops minting", lost.owner)
	if err := d.until(ctx, lost.owner+" to stop", func() (bool, error) { return lost.done(), nil }); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s: %s\n", lost.owner, cli.OrDash(lost.lostReason()))

	d.step("Starting %s: it waits for node ID %d's quarantine, then claims it at an epoch of a new era", fmt.Sprint("demo-worker-", demoWorkers+2), lnode)
	heir, err := d.startWorker(demoWorkers + 2)
	if err != nil {
		return err
	}
	if err := d.waitMinted(ctx, heir, 1); err != nil {
		return err
	}
	_, hnode, hepoch, hminted := heir.state()
	fmt.Fprintf(d.out, "%s: node ID %d, epoch %d (era %s times 2^32, plus %d: above any epoch the old primary could have granted), %s after the promotion; its first ID %d is stamped after the quarantine, after every ID %s minted.\n",
		heir.owner, hnode, hepoch, time.Unix(admin.EraOrigin+hepoch>>32, 0).UTC().Format(time.RFC3339), hepoch&(1<<32-1),
		time.Since(promoted).Round(100*time.Millisecond), hminted[0], lost.owner)

	d.step("The other workers kept their leases across the failover, and minted on")
	for _, w := range []*worker{d.workers[0], d.workers[2]} {
		_, _, _, before := w.state()
		if err := d.until(ctx, w.owner+" to mint again", func() (bool, error) {
			_, _, _, m := w.state()
			return len(m) > len(before) || w.done(), nil
		}); err != nil {
			return err
		}
		if w.done() {
			fmt.Fprintf(d.out, "%s: %s (the standby's copy of its lease ran out before the promotion)\n", w.owner, cli.OrDash(w.lostReason()))
			continue
		}
		_, n, e, m := w.state()
		fmt.Fprintf(d.out, "%s: node ID %d, epoch %d, kept; %d IDs so far\n", w.owner, n, e, len(m))
	}
	if err := d.table(ctx, false); err != nil {
		return err
	}

	d.step("Stopping the workers; nodeid show %d: the history of node ID %d on the new primary", lnode, lnode)
	for _, w := range d.workers {
		w.stop(10 * time.Second)
	}
	return d.show(ctx, st, lnode)
}

// show prints node ID node and its history, as "nodeid show -o wide" does.
func (d *demo) show(ctx context.Context, st *admin.Store, node int64) error {
	rows, now, err := st.List(ctx)
	if err != nil {
		return err
	}
	hist, err := st.History(ctx, node, 10)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.NodeID == node {
			return table.WriteShow(d.out, d.c.Table(), r, hist, now, st.Replication(), cli.OutWide)
		}
	}
	return fmt.Errorf("node ID %d vanished from table %s", node, d.c.Table())
}

// lostReason returns why the worker's lease was lost, as it reported it.
func (w *worker) lostReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimPrefix(w.lost, "nodeid: ")
}
