package admin

import (
	_ "embed"
	"fmt"
	"strings"
	"time"
)

// schemaFile is the DDL of the lease tables, with the reasons for its
// shape.
//
//go:embed sql/schema.sql
var schemaFile string

// schemaText is schemaFile without its leading comment, which is for
// its readers, not for the DDL that nodeid schema prints.
var schemaText = strings.TrimSuffix(schemaFile[strings.Index(schemaFile, "\nSELECT set_config(")+1:], "\n")

// Schema is what the DDL of the lease tables records: the table, its node
// range, its maximum TTL and its replication mode ("" keeps the table's,
// async for a new table). Its zero fields take the defaults (DefaultSchema).
type Schema struct {
	Table            string
	MinNode, MaxNode int64
	MaxTTL           time.Duration
	Replication      Replication
}

// DefaultSchema returns the defaults: table snowflake_nodes, node IDs
// 0-1023, a maximum TTL of a minute, the table's replication mode.
func DefaultSchema() Schema {
	return Schema{Table: DefaultTable, MinNode: DefaultMinNode, MaxNode: DefaultMaxNode, MaxTTL: DefaultMaxTTL}
}

// Validate checks every value, and returns an error naming the first bad
// one and its rule.
func (s Schema) Validate() error {
	if err := ValidateTable(s.Table); err != nil {
		return err
	}
	if err := ValidateRange(s.MinNode, s.MaxNode); err != nil {
		return err
	}
	if s.MaxTTL < MinTTL || s.MaxTTL > MaxTTL {
		return fmt.Errorf("maximum TTL %s is outside %s to %s", s.MaxTTL, MinTTL, MaxTTL)
	}
	if s.Replication != "" && s.Replication != Async && s.Replication != Sync {
		return fmt.Errorf("replication %q: it must be %q (a failover may lose commits) or %q (it never does)", s.Replication, Async, Sync)
	}
	return nil
}

// SQL returns the DDL of s (see schemaText), or the error of Validate:
// it never emits SQL for a value it could not validate.
func (s Schema) SQL() (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	fns, err := FunctionsSQL(s.Table)
	if err != nil {
		return "", err
	}
	ddl, err := s.expand(schemaText)
	if err != nil {
		return "", err
	}
	return ddl + "\n" + fns, nil
}

// schemaLockTimeout bounds every lock wait of the DDL.
const schemaLockTimeout = time.Second

// expand fills the placeholders of the SQL text (sql/schema.sql names them)
// with the validated names and values.
func (s Schema) expand(text string) (string, error) {
	bare, ix := s.Table, s.Table
	if _, t, ok := strings.Cut(s.Table, "."); ok {
		bare = t
	}
	want := "NULL"
	if s.Replication != "" {
		want = "'" + string(s.Replication) + "'"
	}
	return expand(text, s.Table, "{h}", HistoryTable(s.Table), "{c}", ConfigTable(s.Table), "{b}", bare,
		"{ix}", ix, "{lo}", fmt.Sprint(s.MinNode), "{hi}", fmt.Sprint(s.MaxNode), "{ttl}", fmt.Sprint(s.MaxTTL.Milliseconds()),
		"{want}", want, "{lockms}", fmt.Sprint(schemaLockTimeout.Milliseconds()),
		"{serverid}", walServerID, "{tl}", walTimeline, "{quarantine}", quarantine)
}
