package table

import (
	"net/url"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestListThroughPgBouncer: list works through PgBouncer in transaction
// mode, twice in a row. pgx's default mode names its prepared statements by
// the hash of their text; the second run would then meet the first one's
// statement on the same server connection and fail.
func TestListThroughPgBouncer(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	b := srv.NewPgBouncer(t)
	_, dsn := seedList(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	bdsn := b.DSN(strings.TrimPrefix(u.Path, "/"))
	for i := 0; i < 3; i++ {
		out := harness.Must(t, "list", "--dsn", bdsn, "-o", "json")
		if !strings.Contains(out, `"held": 1`) {
			t.Fatalf("run %d through PgBouncer: %s", i, out)
		}
	}
	if out := harness.Must(t, "show", "0", "--dsn", bdsn); !strings.Contains(out, "web-1") {
		t.Errorf("show through PgBouncer: %s", out)
	}
}
