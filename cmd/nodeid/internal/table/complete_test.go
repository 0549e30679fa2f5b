package table

import (
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestCompleteNodeIDs: show and release complete node IDs from the table,
// release only those it can release, and release's --epoch the current
// epoch of the node ID given.
func TestCompleteNodeIDs(t *testing.T) {
	t.Parallel()
	_, dsn := seedList(t)
	const (
		held    = "0\theld, owner web-1, epoch 3\n"
		expired = "1\texpired, owner \"web-2\\x1b[2J\\x1b[31mred\\u202e\", epoch 5\n"
		free    = "2\tfree, owner -, epoch 2\n"
		end     = ":4\n" // cobra.ShellCompDirectiveNoFileComp
	)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "--dsn", dsn, ""}, held + expired + free + end},
		{[]string{"show", "--dsn", dsn, "1"}, expired + end},
		{[]string{"release", "--dsn", dsn, ""}, held + expired + end},
		{[]string{"release", "2", "--dsn", dsn, ""}, end}, // one node ID only
		{[]string{"release", "0", "--dsn", dsn, "--epoch", ""}, "3\theld, owner web-1\n" + end},
		{[]string{"release", "1", "--dsn", dsn, "--epoch", ""}, "5\texpired, owner \"web-2\\x1b[2J\\x1b[31mred\\u202e\"\n" + end},
		{[]string{"release", "2", "--dsn", dsn, "--epoch", ""}, end}, // free: nothing to release
	} {
		r := harness.Run(t, append([]string{"__complete"}, tc.args...)...)
		if r.Code != 0 || r.Stdout != tc.want {
			t.Errorf("completion of %q: exit %d, %q; want %q", tc.args, r.Code, r.Stdout, tc.want)
		}
	}
}

// TestCompleteUnreachable: without a database, completion offers nothing
// and prints no error.
func TestCompleteUnreachable(t *testing.T) {
	t.Parallel()
	silent := clitest.SilentServer(t)
	for _, dsn := range []string{"postgres://nobody@127.0.0.1:1/none", "postgres://nobody@" + silent + "/none", "host=/nonexistent"} {
		for _, args := range [][]string{{"show", "--dsn", dsn, ""}, {"release", "--dsn", dsn, ""}, {"release", "3", "--dsn", dsn, "--epoch", ""}} {
			r := harness.Run(t, append([]string{"__complete"}, args...)...)
			if r.Code != 0 || r.Stdout != ":4\n" || strings.Contains(r.Stderr, "nodeid:") {
				t.Errorf("completion of %q without a database: %+v", args, r)
			}
		}
	}
}
