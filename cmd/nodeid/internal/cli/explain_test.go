package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/postgres"
)

// TestExplainTableConfig: a Registry that asks for more than its table
// records gets the CLI's advice, the flags and the init command that change
// either side, where the library names its options.
func TestExplainTableConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err   *nodeid.TableConfigError
		wants []string
	}{
		{&nodeid.TableConfigError{Table: "ids", MinNode: 0, MaxNode: 63, TTL: 10 * time.Second, TableMinNode: 8, TableMaxNode: 11, MaxTTL: time.Minute},
			[]string{"node range 0-63 is not within the range 8-11 recorded by table ids", "--range", `"nodeid init --table ids --range 0-63"`}},
		{&nodeid.TableConfigError{Table: "ids", MinNode: 8, MaxNode: 11, TTL: 2 * time.Minute, TableMinNode: 8, TableMaxNode: 11, MaxTTL: time.Minute},
			[]string{"TTL 2m0s is above the maximum 1m0s recorded by table ids", "--ttl", `"nodeid init --table ids --max-ttl 2m0s"`}},
	} {
		msg := NewEnv(nil, nil, nil).Describe(fmt.Errorf("acquire: %w", c.err))
		for _, w := range c.wants {
			if !strings.Contains(msg, w) {
				t.Errorf("describe(%v) = %q, want it to say %q", c.err, msg, w)
			}
		}
		if strings.Contains(msg, "Schema.SQL") || strings.Contains(msg, "WithTTL") {
			t.Errorf("describe(%v) = %q names the library's options, not the CLI's", c.err, msg)
		}
		if code := ExitCode(c.err); code != ExitUsage {
			t.Errorf("exit code of %v = %d, want %d (usage)", c.err, code, ExitUsage)
		}
	}
}

// TestExplainUnconfigured: a table of an earlier version gets the CLI's
// command, whatever the library's message says.
func TestExplainUnconfigured(t *testing.T) {
	t.Parallel()
	c := &Conn{env: NewEnv(nil, nil, nil), table: "ids"}
	err := fmt.Errorf("nodeid: read configuration on table ids: %w", postgres.ErrUnconfigured)
	msg := c.Describe(err)
	for _, w := range []string{"table ids has no recorded configuration", `"nodeid init --table ids"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("describe = %q, want it to say %q", msg, w)
		}
	}
}
