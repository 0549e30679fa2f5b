package admin

import (
	"fmt"
	"time"
)

// Defaults and limits of a lease table.
const (
	// DefaultTable is the lease table used when none is configured.
	DefaultTable = "snowflake_nodes"
	// DefaultNodeBits is the width of the node field of the default
	// Snowflake layout; DefaultMinNode and DefaultMaxNode bound the default
	// node range, all the node IDs it holds.
	DefaultNodeBits = 10
	DefaultMinNode  = 0
	DefaultMaxNode  = 1<<DefaultNodeBits - 1
	// MaxNode is the largest node ID a table may hold (20 node bits). Larger
	// ranges would make the one-off prefill and every listing unwieldy.
	MaxNode = 1<<20 - 1

	// MinTTL and MaxTTL bound every lease TTL, and so a table's maximum.
	MinTTL = 3 * time.Second
	MaxTTL = 24 * time.Hour
	// DefaultMaxTTL is the maximum TTL recorded when none is given.
	DefaultMaxTTL = time.Minute
)

// ValidateRange checks a node range, lo to hi inclusive:
// 0 <= lo <= hi <= MaxNode.
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

// HistoryTable returns the name of the history table of lease table t.
func HistoryTable(t string) string { return t + "_history" }

// ConfigTable returns the name of the configuration table of lease table t.
func ConfigTable(t string) string { return t + "_config" }
