package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// provisioned returns a database whose lease table was made by the DDL of
// s's SQL, and its DSN; through a PgBouncer in transaction mode when
// pooled.
func provisioned(t *testing.T, pooled bool, s postgres.Schema) (*sql.DB, *sql.DB) {
	t.Helper()
	srv := pgtest.Shared(t)
	su, _ := srv.NewDB(t)
	ddl, err := s.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := su.ExecContext(ctxOf(t), ddl); err != nil {
		t.Fatal(err)
	}
	// Created by the DDL alone, as a migration tool does, the table's
	// creation is pending until confirmed: at once, on a server without
	// standbys.
	st, err := admin.New(su, admin.Config{Table: s.Table, MinNode: s.MinNode, MaxNode: s.MaxNode})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SettleCreation(ctxOf(t), nil); err != nil {
		t.Fatal(err)
	}
	if !pooled {
		return su, su
	}
	var name string
	if err := su.QueryRowContext(ctxOf(t), `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", srv.NewPgBouncer(t).DSN(name, "default_query_exec_mode=exec"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return su, db
}

func execSQL(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(ctxOf(t), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// claimRounds is how many rounds TestConcurrentClaimsOnExactlyAsManyClaimable
// runs: 8 in the test command (each round is 64 new Registries' first
// claims, the most CPU of the suite under the race detector), more with
// the flag.
var claimRounds = flag.Int("dbtest.claim-rounds", 8, "rounds of TestConcurrentClaimsOnExactlyAsManyClaimable")

// A claim locks only the row it takes: N concurrent Acquires, each of its
// own Registry, on exactly N claimable node IDs, some never claimed, some
// released, some lapsed, among held ones, all succeed with distinct node
// IDs, every round. Each round has a deadline of its own: under the race
// detector on a loaded machine a round took 6 s, and 50 rounds outran one
// deadline for them all.
func TestConcurrentClaimsOnExactlyAsManyClaimable(t *testing.T) {
	t.Parallel()
	const (
		n    = 64
		held = 32
	)
	rounds := *claimRounds
	for _, pooled := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "pgbouncer"}[pooled], func(t *testing.T) {
			t.Parallel()
			su, db := provisioned(t, pooled, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: n + held - 1, MaxTTL: postgres.DefaultMaxTTL})
			db.SetMaxOpenConns(n)
			for round := range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				// Every third node ID is held; of the others, in turn, one is
				// free (never claimed in round 0, released later), one lapsed.
				execSQL(t, su, `UPDATE snowflake_nodes SET
					owner = CASE WHEN node_id % 3 = 0 THEN 'holder' WHEN node_id % 3 = 1 THEN '' ELSE 'gone' END,
					epoch = CASE WHEN $1::integer = 0 AND node_id % 3 = 1 THEN epoch ELSE epoch + 1 END,
					expires_at = CASE WHEN node_id % 3 = 0 THEN now() + interval '1 hour'
						WHEN node_id % 3 = 1 THEN '-infinity' ELSE now() - interval '1 second' END,
					horizon_ms = CASE WHEN node_id % 3 = 0 THEN (extract(epoch FROM now()) * 1000)::bigint + 3600000
						ELSE (extract(epoch FROM now()) * 1000)::bigint - 2000 END`, round)
				regs := make([]*nodeid.Registry, n)
				for i := range regs {
					r, err := nodeid.New(db, nodeid.WithOwner(fmt.Sprintf("c%d", i)))
					if err != nil {
						t.Fatal(err)
					}
					regs[i] = r
				}
				nodes := make([]int64, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i, r := range regs {
					wg.Go(func() {
						<-start
						l, err := r.Acquire(ctx)
						errs[i] = err
						if err == nil {
							nodes[i] = l.NodeID()
						}
					})
				}
				close(start)
				wg.Wait()
				cancel()
				for _, r := range regs {
					_ = r.Close()
				}
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				slices.Sort(nodes)
				if len(slices.Compact(slices.Clone(nodes))) != n {
					t.Fatalf("round %d: node IDs %v are not %d distinct ones", round, nodes, n)
				}
				for _, node := range nodes {
					if node%3 == 0 {
						t.Fatalf("round %d: node ID %d, held, was claimed", round, node)
					}
				}
			}
		})
	}
}

// A process that fails before it mints anything does not make the healthy
// processes started alongside it fail. Crash-looping processes that acquire,
// build their generator or declare that they mint nothing, and exit, leave
// their node IDs claimable at once; one that binds nothing (and backs off
// after two rounds) leaves its node IDs cooling until the horizon of its
// claim, and the claim passes over them. Every healthy process gets a node
// ID and mints, with its generator's default wait.
func TestCrashLoopersDoNotBlockHealthyProcesses(t *testing.T) {
	t.Parallel()
	// Ten node IDs: three healthy holders, two crash loopers holding one
	// each for a moment, two cooling, and room to spare.
	_, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 9, MaxTTL: 30 * time.Second})
	ctx := ctxOf(t)
	stop := make(chan struct{})
	var loops sync.WaitGroup
	defer func() {
		close(stop)
		loops.Wait()
	}()
	looped := make([]atomic.Int64, 3)
	for i := range looped {
		loops.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := nodeid.New(db, nodeid.WithTTL(30*time.Second), nodeid.WithOwner(fmt.Sprintf("crasher-%d", i)))
				if err != nil {
					t.Error(err)
					return
				}
				l, err := r.TryAcquire(ctx)
				if err == nil {
					switch i {
					case 0:
						err = nodeid.NewFence(l).Bind(func() int64 { return 0 }) // declares that nothing was minted
					case 1:
						_, err = snowflake.New(l) // a generator that never mints
					}
				}
				if err != nil && !errors.Is(err, nodeid.ErrNoNodeIDAvailable) {
					t.Error(err)
				}
				_ = r.Close() // the process exits
				if looped[i].Add(1) == 2 && i == 2 {
					return // backs off
				}
			}
		})
	}
	// The healthy processes start once every crash looper has gone round a
	// few times, and while they go on.
	for i := range looped {
		for looped[i].Load() < 2 {
			select {
			case <-ctx.Done():
				t.Fatal("the crash loopers did not start")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for h := range 3 {
		r, err := nodeid.New(db, nodeid.WithTTL(30*time.Second), nodeid.WithOwner(fmt.Sprintf("healthy-%d", h)))
		if err != nil {
			t.Fatal(err)
		}
		l, err := r.Acquire(ctx)
		if err != nil {
			t.Fatalf("healthy process %d: %v", h, err)
		}
		g, err := snowflake.New(l)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Generate(); err != nil {
			t.Fatalf("healthy process %d on node ID %d (previous horizon %d): %v", h, l.NodeID(), l.PreviousHorizon(), err)
		}
		defer r.Close()
	}
}

// A lease released with no generator bound keeps the horizon of its last
// renewal: its node ID is passed over until that horizon has passed, and
// the error of an Acquire that finds nothing else says so.
func TestUnusedReleaseKeepsHorizonAndTheClaimPassesOver(t *testing.T) {
	t.Parallel()
	_, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1, MaxTTL: postgres.DefaultMaxTTL})
	ctx := ctxOf(t)
	r, err := nodeid.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := r.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil { // nothing bound: the horizon stays a TTL ahead
		t.Fatal(err)
	}
	b, err := r.Acquire(ctx)
	if err != nil || b.NodeID() != 1 {
		t.Fatalf("Acquire after the release = %v, %v; want node ID 1, passing over node ID 0", b, err)
	}
	_, err = r.TryAcquire(ctx)
	if !errors.Is(err, nodeid.ErrNoNodeIDAvailable) || !strings.Contains(err.Error(), "node ID 0 is the first to become claimable") ||
		!strings.Contains(err.Error(), "previous holder's horizon") {
		t.Fatalf("Acquire with node ID 0 cooling = %v; want ErrNoNodeIDAvailable naming node ID 0 and its horizon", err)
	}
}

// A range that the node bits cannot hold is an error before any claim, in
// every replica: the table's range when the Registry takes it, and the
// Registry's own at New.
func TestRangeWiderThanNodeBits(t *testing.T) {
	t.Parallel()
	su, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 4095, MaxTTL: postgres.DefaultMaxTTL})
	ctx := ctxOf(t)
	var before string
	if err := su.QueryRowContext(ctx, `SELECT string_agg(xmin::text, ',' ORDER BY node_id) FROM snowflake_nodes`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	r, err := nodeid.New(db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Acquire(ctx)
	if !errors.Is(err, nodeid.ErrInvalidOption) || !strings.Contains(err.Error(), "0-4095 does not fit 10 node bits") {
		t.Fatalf("Acquire on a 0-4095 table with 10 node bits = %v", err)
	}
	var after string
	if err := su.QueryRowContext(ctx, `SELECT string_agg(xmin::text, ',' ORDER BY node_id) FROM snowflake_nodes`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Error("the refused Registry wrote rows")
	}
	if _, err := nodeid.New(db, nodeid.WithNodeRange(0, 2047)); !errors.Is(err, nodeid.ErrInvalidOption) {
		t.Errorf("New with range 0-2047 and 10 node bits = %v; want ErrInvalidOption", err)
	}
	for _, opts := range [][]nodeid.Option{
		{nodeid.WithNodeBits(12)},
		{nodeid.WithNodeRange(1000, 1023)},
	} {
		r, err := nodeid.New(db, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Acquire(ctx); err != nil {
			t.Errorf("Acquire with a range that fits: %v", err)
		}
		_ = r.Close()
	}
}

// The table knows its configuration: a Registry that disagrees with it gets
// an error before any claim; a Registry without a range takes the table's;
// nothing is created or widened unless asked; a Registry on a filled table
// writes no row to start. Directly and through PgBouncer.
func TestTableConfiguration(t *testing.T) {
	t.Parallel()
	for _, pooled := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "pgbouncer"}[pooled], func(t *testing.T) {
			t.Parallel()
			su, db := provisioned(t, pooled, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 7, MaxTTL: postgres.DefaultMaxTTL})
			ctx := ctxOf(t)
			count := func(table string) int {
				var n int
				if err := su.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
					return -1
				}
				return n
			}

			// A mistyped table name is reported missing, and nothing is created.
			typo, _ := nodeid.New(db, nodeid.WithTable("snowflake_ndoes"))
			_, err := typo.Acquire(ctx)
			if !postgres.Fatal(err) || postgres.SQLSTATE(err) != pgerrcode.UndefinedTable || !strings.Contains(err.Error(), "snowflake_ndoes does not exist") {
				t.Errorf("Acquire on a mistyped table = %v; want a Fatal error saying it does not exist", err)
			}
			if n := count("snowflake_ndoes"); n != -1 {
				t.Errorf("the mistyped table was created (%d rows)", n)
			}

			// Disagreements are errors before any claim.
			for _, c := range []struct {
				opts []nodeid.Option
				want string
				fix  string // the option that changes the table's side
			}{
				{[]nodeid.Option{nodeid.WithNodeRange(0, 15)}, "not within the range 0-7", "with MinNode and MaxNode"},
				{[]nodeid.Option{nodeid.WithTTL(2 * time.Minute)}, "above the maximum 1m0s", "with MaxTTL"},
				{[]nodeid.Option{nodeid.WithNodeRange(0, 15), nodeid.WithCreateTable(true)}, "not within the range 0-7", "with MinNode and MaxNode"},
			} {
				r, _ := nodeid.New(db, c.opts...)
				_, err := r.Acquire(ctx)
				var tce *nodeid.TableConfigError
				if !errors.Is(err, nodeid.ErrInvalidOption) || !errors.As(err, &tce) || tce.Table != "snowflake_nodes" ||
					tce.TableMinNode != 0 || tce.TableMaxNode != 7 || tce.MaxTTL != time.Minute {
					t.Errorf("Acquire = %v; want a *TableConfigError matching ErrInvalidOption with the table's range 0-7 and maximum 1m", err)
				}
				if msg := fmt.Sprint(err); !strings.Contains(msg, c.want) || !strings.Contains(msg, "postgres.Schema.SQL") ||
					!strings.Contains(msg, c.fix) || strings.Contains(msg, "nodeid init") {
					t.Errorf("Acquire = %v; want it to say %q and how to change the table (Schema.SQL, %s), not the CLI", err, c.want, c.fix)
				}
			}

			// A Registry without a range takes the table's, and writes no row
			// but the one it claims.
			var before []string
			rows, err := su.QueryContext(ctx, `SELECT node_id || ':' || xmin FROM snowflake_nodes ORDER BY node_id`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				rows.Scan(&s)
				before = append(before, s)
			}
			rows.Close()
			r, _ := nodeid.New(db)
			leases := make([]*nodeid.Lease, 0, 8)
			for range 8 {
				l, err := r.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				leases = append(leases, l)
			}
			if _, err := r.TryAcquire(ctx); !errors.Is(err, nodeid.ErrNoNodeIDAvailable) || !strings.Contains(err.Error(), "0-7") {
				t.Errorf("the ninth Acquire = %v; want ErrNoNodeIDAvailable on 0-7", err)
			}
			if n := count("snowflake_nodes"); n != 8 {
				t.Errorf("the table has %d rows after a Registry without a range used it; want its 8", n)
			}
			rows, err = su.QueryContext(ctx, `SELECT node_id || ':' || xmin FROM snowflake_nodes ORDER BY node_id`)
			if err != nil {
				t.Fatal(err)
			}
			changed := 0
			for i := 0; rows.Next(); i++ {
				var s string
				rows.Scan(&s)
				if s != before[i] {
					changed++
				}
			}
			rows.Close()
			if changed != len(leases) {
				t.Errorf("%d rows were written for %d claims", changed, len(leases))
			}
			_ = r.Close()

			// Widening and raising are explicit, and never the other way.
			// A raise is pending until confirmed (nodeid init confirms it
			// once every standby has it): no lease may use it before.
			ddl, _ := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 15, MaxTTL: 2 * time.Minute}.SQL()
			execSQL(t, su, ddl)
			wide, _ := nodeid.New(db, nodeid.WithNodeRange(8, 15), nodeid.WithTTL(2*time.Minute))
			if _, err := wide.Acquire(ctx); !errors.Is(err, nodeid.ErrInvalidOption) {
				t.Errorf("Acquire with a TTL of a pending raise = %v; want ErrInvalidOption", err)
			}
			_ = wide.Close()
			if st, err := admin.New(su, admin.DefaultConfig()); err != nil {
				t.Fatal(err)
			} else if mark, err := st.PendingRaise(ctx); err != nil || mark.Raise != 2*time.Minute {
				t.Fatalf("PendingRaise: %+v, %v", mark, err)
			} else if _, raised, err := st.ConfirmRaise(ctx, mark); err != nil || !raised {
				t.Fatalf("ConfirmRaise: %v, %v", raised, err)
			}
			wide, _ = nodeid.New(db, nodeid.WithNodeRange(8, 15), nodeid.WithTTL(2*time.Minute))
			if l, err := wide.Acquire(ctx); err != nil || l.NodeID() != 8 {
				t.Errorf("Acquire after widening = %v, %v; want node ID 8", l, err)
			}
			_ = wide.Close()
			if n := count("snowflake_nodes"); n != 16 {
				t.Errorf("%d rows after widening to 0-15", n)
			}
		})
	}
}

// The table made and filled by the library is analysed, so that the
// claim's plan does not wait for autovacuum.
func TestNewTableIsAnalysed(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	r, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithNodeRange(0, 4095), nodeid.WithNodeBits(12))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var tuples float64
	var analysed bool
	if err := db.QueryRowContext(ctx, `SELECT c.reltuples, s.last_analyze IS NOT NULL FROM pg_class c
		JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = 'snowflake_nodes'`).Scan(&tuples, &analysed); err != nil {
		t.Fatal(err)
	}
	if !analysed || tuples != 4096 {
		t.Errorf("new table: analysed %v, %v tuples estimated; want analysed, 4096", analysed, tuples)
	}
}

// A table made by an earlier version (no recorded configuration, no
// timeline) is refused with a Fatal error naming the fix; the DDL of
// Schema.SQL brings it up to date, keeping every epoch and horizon.
func TestMigrationOfAnEarlierTable(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t)
	ctx := ctxOf(t)
	execSQL(t, db, `CREATE TABLE snowflake_nodes (node_id integer PRIMARY KEY CHECK (node_id >= 0),
		owner text NOT NULL DEFAULT '' CHECK (length(owner) <= 255), epoch bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
		acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity', horizon_ms bigint NOT NULL DEFAULT 0);
	CREATE INDEX snowflake_nodes_free_idx ON snowflake_nodes (node_id) WHERE expires_at = '-infinity';
	CREATE INDEX snowflake_nodes_lapse_idx ON snowflake_nodes (expires_at) WHERE expires_at > '-infinity';
	CREATE TABLE snowflake_nodes_history (node_id integer NOT NULL, epoch bigint NOT NULL, owner text NOT NULL,
		acquired_at timestamptz NOT NULL, from_ms bigint NOT NULL, ended_at timestamptz,
		end_reason text CHECK (end_reason IN ('released', 'expired', 'evicted')), horizon_ms bigint, PRIMARY KEY (node_id, epoch));
	INSERT INTO snowflake_nodes (node_id) SELECT generate_series(0, 1023);
	UPDATE snowflake_nodes SET epoch = 41, horizon_ms = 1000 WHERE node_id = 0`)
	r, _ := nodeid.New(db)
	_, err := r.Acquire(ctx)
	if !errors.Is(err, postgres.ErrUnconfigured) || !postgres.Fatal(err) || !strings.Contains(err.Error(), "Schema.SQL") {
		t.Fatalf("Acquire on an earlier table = %v; want a Fatal ErrUnconfigured naming Schema.SQL", err)
	}
	ddl, _ := postgres.DefaultSchema().SQL()
	execSQL(t, db, ddl)
	l, err := r.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if l.NodeID() != 0 || l.Epoch() != 42 || l.PreviousHorizon() != 1000 {
		t.Errorf("first claim after the migration: node %d epoch %d after %d; want node 0, epoch 42, after 1000",
			l.NodeID(), l.Epoch(), l.PreviousHorizon())
	}
}

// A renewal that meets a concurrent takeover reports it as a takeover: it
// reads the row as it is once the takeover has committed, not as its
// snapshot had it.
func TestRenewalDuringATakeoverReportsTheTakeover(t *testing.T) {
	t.Parallel()
	su, db := provisioned(t, false, postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: postgres.DefaultMaxTTL})
	ctx := ctxOf(t)
	// The renewal, at a third of the TTL, must meet the claim before the
	// lease's deadline, with the test's polling between them: on a loaded
	// machine a 3 s lease lapsed first (2 runs of many).
	r, err := nodeid.New(db, nodeid.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another holder's claim of the row, left open: the renewal will wait
	// for it.
	tx, err := su.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE snowflake_nodes SET owner = 'taker', epoch = epoch + 1,
		expires_at = now() + interval '1 hour' WHERE node_id = 0`); err != nil {
		t.Fatal(err)
	}
	for { // until the renewal waits for the claim's row lock
		var waiting bool
		if err := su.QueryRowContext(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE query LIKE '-- nodeid renew%' AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case <-l.Done():
			t.Fatalf("the lease ended before its renewal met the claim: %v", l.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("Lost did not close")
	}
	if !errors.Is(l.Err(), nodeid.ErrTakenOver) {
		t.Errorf("Err = %v, want ErrTakenOver", l.Err())
	}
}

// Owners are limited in bytes, which the table's check, counting
// characters in the database's encoding, never exceeds: a 255-byte owner of
// non-ASCII letters claims on a SQL_ASCII database; what the check still
// refuses is a Fatal error.
func TestOwnerLengthOnASQLASCIIDatabase(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	su, dsn := srv.NewDB(t)
	ctx := ctxOf(t)
	name := fmt.Sprintf("nodeid_ascii_%d", time.Now().UnixNano())
	execSQL(t, su, `CREATE DATABASE `+name+` ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
	t.Cleanup(func() { _ = srv.DropDatabase(context.Background(), name) })
	db, err := sql.Open("pgx", pgtest.WithDatabase(dsn, name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ddl, _ := postgres.Schema{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 0, MaxTTL: postgres.DefaultMaxTTL}.SQL()
	execSQL(t, db, ddl)
	owner := strings.Repeat("é", 127) + "x" // 255 bytes, 128 characters
	r, err := nodeid.New(db, nodeid.WithOwner(owner))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatalf("Acquire with a 255-byte owner on SQL_ASCII: %v", err)
	}
	if _, err := nodeid.New(db, nodeid.WithOwner(owner+"é")); !errors.Is(err, nodeid.ErrInvalidOption) {
		t.Errorf("WithOwner of 257 bytes = %v, want ErrInvalidOption", err)
	}
	_, err = db.ExecContext(ctx, `UPDATE snowflake_nodes SET owner = $1`, strings.Repeat("x", 256))
	if !postgres.Fatal(err) || postgres.SQLSTATE(err) != pgerrcode.CheckViolation {
		t.Errorf("an owner the table's check refuses: %v; want a Fatal 23514", err)
	}
}
