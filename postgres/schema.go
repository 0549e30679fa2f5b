package postgres

import (
	"fmt"
	"time"

	"github.com/nodeid/nodeid/admin"
)

// Replication is how a table's database replicates, as the table records
// it.
type Replication string

// The replication modes.
const (
	// Async: a failover may lose the latest commits (PostgreSQL's
	// streaming replication by default, Patroni without
	// synchronous_mode_strict). Every lease statement reads the server's
	// system identifier and WAL timeline (pg_control_system,
	// pg_current_wal_lsn, pg_walfile_name, which the role must be allowed to
	// execute); after another timeline every node ID last claimed before it
	// stays unclaimable for the maximum TTL and a tenth, and after another
	// system identifier (a move, an upgrade) until an operator declares the
	// restore. A raise of the maximum TTL is pending until every standby
	// has it, and so is a table's creation (no node ID is handed out until
	// then: the first Acquire, or nodeid init, waits for the standbys the
	// server has once the creation has committed, and confirms it at once
	// where there are none).
	Async Replication = "async"
	// Sync: the database never loses an acknowledged commit in a failover.
	// It changes the rules only where the server refuses the WAL functions
	// (Aurora): no quarantine after a failover, no WAL function used, and
	// a restore or a move needs the operator's declaration ("nodeid init
	// --restored --max-ttl"). Where the server answers them the table is
	// watched as with Async: a synchronous standby may still lack a commit
	// whose wait for it was cancelled.
	Sync Replication = "sync"
)

// Schema is what the DDL of the lease tables records, a validated value:
// the lease table (its history and configuration tables are named after it,
// HistoryTable and ConfigTable), its node range, the longest TTL a lease may
// take, and how its database replicates. DefaultSchema returns the
// defaults; set the fields to change them.
//
// On an existing table the DDL widens the recorded range to include
// MinNode-MaxNode (adding its rows), never narrows it; raises the maximum
// TTL to MaxTTL, never lowers it (on an Async table the raise is pending
// until "nodeid init --max-ttl" has seen every standby replay it and
// confirms it: quarantines count with it at once, leases may use it once
// confirmed); and changes the replication mode to Replication, unless it is
// "", which keeps the table's (Async for a new table): registries use the
// new mode from their next claim on.
type Schema struct {
	Table            string        // a name ValidateTable accepts
	MinNode, MaxNode int64         // 0 <= MinNode <= MaxNode <= MaxNode
	MaxTTL           time.Duration // nodeid.MinTTL to nodeid.MaxTTL
	Replication      Replication   // Async, Sync, or "" for the table's
}

// DefaultSchema returns the registry's defaults: table snowflake_nodes,
// node IDs 0-1023, a maximum TTL of one minute, the table's replication
// mode (Async for a new table).
func DefaultSchema() Schema {
	d := admin.DefaultSchema()
	return Schema{Table: d.Table, MinNode: d.MinNode, MaxNode: d.MaxNode, MaxTTL: d.MaxTTL}
}

func (s Schema) store() admin.Schema {
	return admin.Schema{Table: s.Table, MinNode: s.MinNode, MaxNode: s.MaxNode, MaxTTL: s.MaxTTL, Replication: admin.Replication(s.Replication)}
}

// Validate checks every field, and returns an error naming the first bad
// value and its rule.
func (s Schema) Validate() error {
	if err := s.store().Validate(); err != nil {
		return fmt.Errorf("postgres: schema: %w", err)
	}
	return nil
}

// SQL returns the DDL that creates the lease, history and configuration
// tables, records the configuration and pre-fills the node range, for a
// migration tool, or the error of Validate: it never emits SQL for a value
// it could not validate. It is idempotent: applied again, it changes no
// claim and no horizon, and takes no lock that would block the fleet's
// statements unless it has something to change. It also brings a table
// made by an earlier version of nodeid up to date, after which that
// version's statements fail on the table (deploy the new version with it).
// Its writes are durable whatever synchronous_commit the server sets, and it
// waits at most a second for any lock. Apply it as the table's owner, on the
// primary, in one transaction.
func (s Schema) SQL() (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	return s.store().SQL()
}
