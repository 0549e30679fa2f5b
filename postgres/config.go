package postgres

import (
	"fmt"
	"strings"
)

// Defaults.
const (
	// DefaultTable is the table used when none is configured.
	DefaultTable = "snowflake_nodes"
	// DefaultMinNode and DefaultMaxNode bound the default node range: the
	// 10 node bits of the default Snowflake layout.
	DefaultMinNode = 0
	DefaultMaxNode = 1023
	// MaxNode is the largest node ID a table may hold (20 node bits). Larger
	// ranges would make the one-off prefill and every listing unwieldy.
	MaxNode = 1<<20 - 1
)

// Config names the table and the node range a Store works on.
type Config struct {
	// Table is the lease table, optionally schema-qualified. The history
	// table is the same name with "_history" appended.
	Table string
	// MinNode and MaxNode bound the node IDs, inclusive.
	MinNode, MaxNode int64
}

// DefaultConfig returns the default table and node range.
func DefaultConfig() Config {
	return Config{Table: DefaultTable, MinNode: DefaultMinNode, MaxNode: DefaultMaxNode}
}

// Validate checks the table name and the node range.
func (c Config) Validate() error {
	if err := ValidateTable(c.Table); err != nil {
		return err
	}
	return ValidateRange(c.MinNode, c.MaxNode)
}

// ValidateRange checks a node range: 0 <= lo <= hi <= MaxNode.
func ValidateRange(lo, hi int64) error {
	switch {
	case lo < 0:
		return fmt.Errorf("node range %d-%d: the lowest node ID must be at least 0", lo, hi)
	case hi > MaxNode:
		return fmt.Errorf("node range %d-%d: the highest node ID must be at most %d", lo, hi, MaxNode)
	case lo > hi:
		return fmt.Errorf("node range %d-%d: the lowest node ID is above the highest", lo, hi)
	}
	return nil
}

// HistoryTable returns the name of the history table.
func (c Config) HistoryTable() string { return c.Table + "_history" }

// bare returns the table name without its schema, for index names.
func (c Config) bare() string {
	if _, t, ok := strings.Cut(c.Table, "."); ok {
		return t
	}
	return c.Table
}

// Option sets a field of the Config used by SchemaSQL.
type Option func(*Config)

// WithTable sets the table name (see ValidateTable).
func WithTable(name string) Option { return func(c *Config) { c.Table = name } }

// WithNodeRange sets the node range to pre-fill, inclusive.
func WithNodeRange(lo, hi int64) Option {
	return func(c *Config) { c.MinNode, c.MaxNode = lo, hi }
}
