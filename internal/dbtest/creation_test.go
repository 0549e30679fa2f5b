package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// WithCreateTable on a primary with an asynchronous standby: the table's
// creation is pending until the standby has replayed it, and the first
// Acquire waits for that before it claims, so that a failover can never
// lose a table that handed out node IDs. With the standby cut off, Acquire
// gives up when its context ends, with ErrCreationPending, and claims
// nothing; once the standby catches up, it confirms the creation and
// claims. A role that may not see the position of a standby streaming
// without a slot is told so; one streaming from a slot is judged by it.
func TestCreateTableWaitsForTheStandby(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair, dbName := pgtest.NewPairDB(t)
	db, err := sql.Open("pgx", pair.Primary.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithNodeRange(0, 3), nodeid.WithOwner("first"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })

	pair.Repl.Cut()
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	l, err := r.Acquire(short)
	if l != nil || !errors.Is(err, nodeid.ErrCreationPending) || !strings.Contains(err.Error(), "have not replayed") {
		t.Fatalf("Acquire with the standby cut off: %v, %v; want ErrCreationPending naming the standbys behind", l, err)
	}
	t.Logf("Acquire with the standby cut off: %v", err)
	var pending bool
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(creation_pending, false) FROM `+postgres.ConfigTable(postgres.DefaultTable)).Scan(&pending); err != nil || !pending {
		t.Fatalf("creation_pending: %v, %v; want true", pending, err)
	}
	var claims int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+postgres.HistoryTable(postgres.DefaultTable)).Scan(&claims); err != nil || claims != 0 {
		t.Fatalf("claims recorded in a pending creation: %d, %v; want none", claims, err)
	}

	// A role that may use the table but not see the standby's position.
	role := fmt.Sprintf("app_%d", time.Now().UnixNano())
	grants, err := postgres.GrantSQL(postgres.DefaultTable, role)
	if err != nil {
		t.Fatal(err)
	}
	// The standbys are read by a function that runs as its owner: made
	// the role's, it sees them as a role without pg_read_all_stats does.
	if err := pair.Primary.Exec(ctx, dbName, `CREATE ROLE `+role+` LOGIN PASSWORD 'secret';`+grants+`
		ALTER FUNCTION snowflake_nodes_standbys(text, text, text) OWNER TO `+role); err != nil {
		t.Fatal(err)
	}
	pair.Repl.Restore()
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	slotless := pair.AddStandbyWithoutSlot(t)
	if err := slotless.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pair.Primary.DSN(dbName))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "secret")
	app, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	ra, err := nodeid.New(app, nodeid.WithNodeRange(0, 3), nodeid.WithOwner("app"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ra.Close() })
	l, err = ra.Acquire(ctx)
	if l != nil || !errors.Is(err, nodeid.ErrCreationPending) || !strings.Contains(err.Error(), "pg_read_all_stats") {
		t.Fatalf("Acquire by a role that cannot see the standby's position: %v, %v; want ErrCreationPending naming pg_read_all_stats", l, err)
	}
	t.Logf("Acquire by a role that cannot see the standby's position: %v", err)

	// Without the standby that had no slot, the app's Acquire confirms the
	// creation, judging the other standby by its slot.
	if err := slotless.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, time.Minute, "the slotless standby's walsender gone", func() error {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_replication`).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("%d standbys streaming (%v)", n, err)
		}
		return nil
	})
	l, err = ra.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire by the app once the standby has caught up: %v", err)
	}
	defer l.Release(ctx)
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(creation_pending, false) FROM `+postgres.ConfigTable(postgres.DefaultTable)).Scan(&pending); err != nil || pending {
		t.Fatalf("creation_pending after the Acquire: %v, %v; want it confirmed", pending, err)
	}
}

// settleCreation confirms the creation of the default table on the
// primary at dsn once its standbys have replayed it, as the first Acquire
// would: a test that then cuts the standby off claims at once.
func settleCreation(t *testing.T, ctx context.Context, dsn string) {
	t.Helper()
	st, err := admin.New(openDB(t, dsn), admin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SettleCreation(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
