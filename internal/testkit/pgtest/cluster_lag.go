//go:build linux

package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// StallReplication stops the leader's WAL senders (SIGSTOP), so that no
// standby receives anything the leader writes from then on. It returns
// crash, which kills the leader's postmaster and its stopped WAL senders
// (SIGKILL): a primary that crashes after its replication fell behind.
// Patroni then fails over to a standby that lacks every commit since the
// stall, lost with the old primary as asynchronous replication allows, and
// the old primary rejoins with pg_rewind. The stall must stay short enough
// that the standbys remain within Patroni's maximum_lag_on_failover (1 MB)
// of the leader, or no standby is promoted.
func (c *Cluster) StallReplication(ctx context.Context) (crash func() error, err error) {
	leader, err := c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	n, err := c.node(leader)
	if err != nil {
		return nil, err
	}
	pm, err := n.postmaster()
	if err != nil {
		return nil, fmt.Errorf("pgtest: stall the leader's replication: %w", err)
	}
	senders := walSenders(pm)
	if len(senders) == 0 {
		return nil, fmt.Errorf("pgtest: the leader %s has no WAL sender: no standby streams from it", leader)
	}
	for _, pid := range senders {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			resume(senders)
			return nil, fmt.Errorf("pgtest: stop the leader %s's WAL sender %d: %w", leader, pid, err)
		}
	}
	return func() error {
		if err := syscall.Kill(pm, syscall.SIGKILL); err != nil {
			resume(senders)
			return fmt.Errorf("pgtest: kill the leader %s's postmaster %d: %w", leader, pm, err)
		}
		// A stopped process dies of SIGKILL too; the WAL senders must, or
		// they would keep the old primary's shared memory in use, and no
		// server could start on its data directory again.
		for _, pid := range senders {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return nil
	}, nil
}

// walSenders returns the WAL sender processes among the children of the
// postmaster pm.
func walSenders(pm int) []int {
	var out []int
	for _, pid := range children(pm) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), "walsender") {
			out = append(out, pid)
		}
	}
	return out
}

// resume continues stopped processes.
func resume(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}
