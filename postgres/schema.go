package postgres

import (
	"fmt"
	"strings"
)

// The lease table holds one row per node ID, created once and never deleted:
// deleting a row would reset its epoch and break fencing.
//
//   - expires_at is '-infinity' for a node ID that is free (never claimed or
//     released); a past time for a lease that lapsed; a future time for a
//     held lease. A row is claimable when expires_at < now().
//   - horizon_ms (unix milliseconds) is the latest millisecond the current or
//     last holder may have stamped: the next holder stamps only after it.
//
// Two partial indexes keep the claim's cost flat however many node IDs are
// held: one orders the free rows by node ID, the other finds lapsed leases
// by expiry.
const schemaTemplate = `CREATE TABLE IF NOT EXISTS {t} (
    node_id     integer     PRIMARY KEY CHECK (node_id >= 0),
    owner       text        NOT NULL DEFAULT '' CHECK (length(owner) <= 255),
    epoch       bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    acquired_at timestamptz,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    horizon_ms  bigint      NOT NULL DEFAULT 0
);
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
    PRIMARY KEY (node_id, epoch)
);
CREATE INDEX IF NOT EXISTS {b}_history_ended_idx ON {h} (ended_at);`

// prefillTemplate inserts the missing rows of the node range.
const prefillTemplate = `INSERT INTO {t} (node_id)
SELECT g FROM generate_series({lo}, {hi}) AS g
ON CONFLICT (node_id) DO NOTHING;`

// Option configures SchemaSQL. Every option is validated: SchemaSQL returns
// an error naming the first bad value.
type Option func(*schema) error

type schema struct {
	table  string
	lo, hi int64
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

// WithNodeRange sets the node range to pre-fill, lo to hi inclusive (see
// ValidateRange). Default DefaultMinNode to DefaultMaxNode.
func WithNodeRange(lo, hi int64) Option {
	return func(s *schema) error {
		if err := ValidateRange(lo, hi); err != nil {
			return err
		}
		s.lo, s.hi = lo, hi
		return nil
	}
}

// SchemaSQL returns the DDL that creates the lease and history tables and
// pre-fills the node range, for a migration tool. It is idempotent: applied
// again, it changes no existing row. It uses the same defaults as the
// registry (table snowflake_nodes, node IDs 0-1023) and validates every
// option; it never emits SQL for a name it could not validate.
func SchemaSQL(opts ...Option) (string, error) {
	s := schema{table: DefaultTable, lo: DefaultMinNode, hi: DefaultMaxNode}
	for i, o := range opts {
		if o == nil {
			return "", fmt.Errorf("postgres: SchemaSQL: option %d is nil", i)
		}
		if err := o(&s); err != nil {
			return "", fmt.Errorf("postgres: SchemaSQL: %w", err)
		}
	}
	return s.expand(schemaTemplate) + "\n" + s.expand(prefillTemplate) + "\n", nil
}

// expand substitutes the validated names and range into a template: {t}
// the lease table, {h} the history table, {b} the bare table name (for
// index names), {lo} and {hi} the node range.
func (s schema) expand(tmpl string) string {
	bare := s.table
	if _, t, ok := strings.Cut(s.table, "."); ok {
		bare = t
	}
	return strings.NewReplacer("{t}", s.table, "{h}", HistoryTable(s.table), "{b}", bare,
		"{lo}", fmt.Sprint(s.lo), "{hi}", fmt.Sprint(s.hi)).Replace(tmpl)
}
