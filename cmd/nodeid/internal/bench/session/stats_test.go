package session

import (
	"strings"
	"testing"
)

func TestSameStatement(t *testing.T) {
	t.Parallel()
	sent := "WITH free AS (\n    SELECT node_id FROM nodeid_bench_1_rt\n    WHERE expires_at = '-infinity'"
	stored := "WITH free AS (\n    SELECT node_id FROM nodeid_bench_1_rt\n    WHERE expires_at = $6"
	if !SameStatement(stored, sent) {
		t.Error("the normalised text of the same statement")
	}
	if SameStatement(strings.ReplaceAll(stored, "_rt", "_herd"), sent) {
		t.Error("the same statement on another table")
	}
	if SameStatement("WITH renewed AS (\n UPDATE nodeid_bench_1_rt", sent) {
		t.Error("another statement")
	}
}
