package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/internal/wal"
)

// The lease table holds one row per node ID, created once and never deleted:
// deleting a row would reset its epoch and break fencing.
//
//   - expires_at is '-infinity' for a node ID that is free (never claimed or
//     released); a past time for a lease that lapsed; a future time for a
//     held lease. A row is claimable when expires_at < now() and its horizon
//     has passed.
//   - horizon_ms (unix milliseconds) is the latest millisecond the current or
//     last holder may have stamped: the next holder stamps only after it.
//   - timeline is the server's WAL timeline at the row's last write by a
//     holder: a row last written on an earlier timeline may hide writes that
//     a failover lost.
//
// Two partial indexes keep the claim's cost flat however many node IDs are
// held: one orders the free rows by node ID, the other finds lapsed leases
// by expiry.
//
// The configuration table holds one row: what every registry on the table
// must agree on (the node range and the longest TTL any lease may take), and
// the latest timeline seen with when it was first seen, from which rows of
// earlier timelines are quarantined.
//
// The ALTER and UPDATE statements bring a table created before the
// timeline and the configuration were recorded up to date; on a current
// table they change nothing.
const schemaTemplate = `CREATE TABLE IF NOT EXISTS {t} (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0,
    timeline    bigint      NOT NULL DEFAULT 0
);
ALTER TABLE {t} ADD COLUMN IF NOT EXISTS timeline bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS {b}_free_idx ON {t} (node_id) WHERE expires_at = '-infinity';
CREATE INDEX IF NOT EXISTS {b}_lapse_idx ON {t} (expires_at) WHERE expires_at > '-infinity';
CREATE TABLE IF NOT EXISTS {h} (
    node_id     integer     NOT NULL,
    epoch       bigint      NOT NULL,
    owner       text        NOT NULL,
    acquired_at timestamptz NOT NULL,
    from_ms     bigint      NOT NULL,
    ended_at    timestamptz,
    end_reason  text        CHECK (end_reason IN ('released', 'expired', 'evicted')),
    horizon_ms  bigint,
    timeline    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (node_id, epoch)
);
ALTER TABLE {h} ADD COLUMN IF NOT EXISTS timeline bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS {b}_history_ended_idx ON {h} (ended_at);
CREATE TABLE IF NOT EXISTS {c} (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    min_node    integer     NOT NULL CHECK (min_node >= 0),
    max_node    integer     NOT NULL CHECK (max_node >= min_node),
    max_ttl_ms  bigint      NOT NULL CHECK (max_ttl_ms > 0),
    timeline    bigint      NOT NULL,
    timeline_seen_at timestamptz NOT NULL
);
UPDATE {t} SET timeline = ` + wal.Timeline + ` WHERE timeline = 0;
INSERT INTO {c} (min_node, max_node, max_ttl_ms, timeline, timeline_seen_at)
VALUES ({lo}, {hi}, {ttl}, ` + wal.Timeline + `, now())
ON CONFLICT (singleton) DO UPDATE
SET min_node = LEAST({c}.min_node, EXCLUDED.min_node), max_node = GREATEST({c}.max_node, EXCLUDED.max_node),
    max_ttl_ms = GREATEST({c}.max_ttl_ms, EXCLUDED.max_ttl_ms);
INSERT INTO {t} (node_id, timeline)
SELECT g, ` + wal.Timeline + ` FROM {c}, generate_series({c}.min_node, {c}.max_node) AS g
ON CONFLICT (node_id) DO NOTHING;
ANALYZE {t}, {c};`

// Option configures SchemaSQL. Every option is validated: SchemaSQL returns
// an error naming the first bad value.
type Option func(*schema) error

type schema struct {
	table  string
	lo, hi int64
	maxTTL time.Duration
}

// WithTable sets the lease table (see ValidateTable). Default DefaultTable.
func WithTable(name string) Option {
	return func(s *schema) error {
		if err := ValidateTable(name); err != nil {
			return err
		}
		s.table = name
		return nil
	}
}

// WithNodeRange sets the node range, lo to hi inclusive (see
// ValidateRange). On an existing table the recorded range is widened to
// include it, never narrowed. Default DefaultMinNode to DefaultMaxNode.
func WithNodeRange(lo, hi int64) Option {
	return func(s *schema) error {
		if err := ValidateRange(lo, hi); err != nil {
			return err
		}
		s.lo, s.hi = lo, hi
		return nil
	}
}

// WithMaxTTL sets the longest TTL a lease of the table may take, MinTTL to
// MaxTTL. Registries with a longer TTL are refused. After a failover that may
// have lost commits, node IDs last written before it stay unclaimable for
// this long plus a tenth, so keep it close to the TTL the fleet uses. On an
// existing table the recorded maximum is raised to it, never lowered.
// Default DefaultMaxTTL.
func WithMaxTTL(d time.Duration) Option {
	return func(s *schema) error {
		if d < MinTTL || d > MaxTTL {
			return fmt.Errorf("maximum TTL %s is outside %s to %s", d, MinTTL, MaxTTL)
		}
		s.maxTTL = d
		return nil
	}
}

// SchemaSQL returns the DDL that creates the lease, history and
// configuration tables, records the configuration and pre-fills the node
// range, for a migration tool. It is idempotent: applied again, it changes
// no claim and no horizon; with a wider range or a longer maximum TTL it
// widens the recorded range (adding its rows) or raises the maximum. It
// also brings a table made by an earlier version of nodeid up to date. It
// uses the registry's defaults (table snowflake_nodes, node IDs 0-1023, a
// maximum TTL of one minute) and validates every option; it never emits SQL
// for a name it could not validate. Apply it as the table's owner, on the
// primary.
func SchemaSQL(opts ...Option) (string, error) {
	s := schema{table: DefaultTable, lo: DefaultMinNode, hi: DefaultMaxNode, maxTTL: DefaultMaxTTL}
	for i, o := range opts {
		if o == nil {
			return "", fmt.Errorf("postgres: SchemaSQL: option %d is nil", i)
		}
		if err := o(&s); err != nil {
			return "", fmt.Errorf("postgres: SchemaSQL: %w", err)
		}
	}
	return s.expand(schemaTemplate) + "\n", nil
}

// expand substitutes the validated names and values into a template: {t}
// the lease table, {h} the history table, {c} the configuration table, {b}
// the bare table name (for index names), {lo} and {hi} the node range, {ttl}
// the maximum TTL in milliseconds.
func (s schema) expand(tmpl string) string {
	bare := s.table
	if _, t, ok := strings.Cut(s.table, "."); ok {
		bare = t
	}
	return strings.NewReplacer("{t}", s.table, "{h}", HistoryTable(s.table), "{c}", ConfigTable(s.table), "{b}", bare,
		"{lo}", fmt.Sprint(s.lo), "{hi}", fmt.Sprint(s.hi), "{ttl}", fmt.Sprint(s.maxTTL.Milliseconds())).Replace(tmpl)
}
