package admin

// The model and the statements are one: seeded random traces of the
// model's actions, without the environment's faults (no failover, restore,
// raise or crash; one table of 2 node IDs), run against PostgreSQL through
// the Store's statements, with the database's clock stopped at the model's
// time, and the rows compared with the model's after every step.

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

var (
	replayTraces = flag.Int("model.replay-traces", 40, "how many of the model's traces TestModelReplay runs against PostgreSQL")
	replayDepth  = flag.Int("model.replay-depth", 30, "how many actions each replayed trace takes")
)

// replayBase is the instant the model's time 0 stands for; a tick is a
// second.
var replayBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func replayMs(t tick) int64 { return replayBase.UnixMilli() + int64(t)*1000 }

// replayer runs one trace's statements on its own table.
type replayer struct {
	t     *testing.T
	db    *sql.DB
	cfg   Config
	txs   [maxHold]*sql.Tx // the verified transactions
	clock *strings.Replacer
	st    *Store
}

// at makes the statements read the server's clock as the model's time t.
func (r *replayer) at(t tick) {
	if r.st == nil {
		// The functions and the reads read the model's time from a table of
		// the test's, made and installed once.
		clock := r.cfg.Table + "_clock"
		if _, err := r.db.ExecContext(ctxOf(r.t), "CREATE TABLE "+clock+" (at timestamptz NOT NULL); INSERT INTO "+clock+" VALUES ('-infinity')"); err != nil {
			r.t.Fatal(err)
		}
		now := "(SELECT k.at FROM " + clock + " AS k)"
		r.clock = strings.NewReplacer("now()", now, "clock_timestamp()", now, "statement_timestamp()", now)
		if err := installClock(ctxOf(r.t), r.db, r.cfg.Table, r.clock); err != nil {
			r.t.Fatal(err)
		}
		st, err := newStore(r.db, r.cfg, r.clock)
		if err != nil {
			r.t.Fatal(err)
		}
		r.st = st
	}
	if _, err := r.db.ExecContext(ctxOf(r.t), "UPDATE "+r.cfg.Table+"_clock SET at = $1", replayBase.Add(time.Duration(t)*time.Second)); err != nil {
		r.t.Fatal(err)
	}
}

func owner(h int) string { return fmt.Sprintf("h%d", h) }

// TestModelReplay replays random traces of the model against PostgreSQL.
func TestModelReplay(t *testing.T) {
	t.Parallel()
	if err := replay(t, "", *replayTraces, seedOf()); err != nil {
		t.Fatal(err)
	}
}

// TestModelReplayFindsADifference: the replay can fail. A model whose
// eviction differs from the statement's (the mutant evict-at-horizon) is
// told apart from the table within the traces of a run.
func TestModelReplayFindsADifference(t *testing.T) {
	t.Parallel()
	err := replay(t, "evict-at-horizon", *replayTraces, seedOf())
	if err == nil || !strings.Contains(err.Error(), "in the model:") {
		t.Fatalf("a model that evicts otherwise than the statement replayed without a difference: %v", err)
	}
	t.Logf("as it should, the replay found: %v", err)
}

// replay runs n random traces of the model (with mutant mut) from seed
// against PostgreSQL, and returns the first difference between the table
// and the model.
func replay(t *testing.T, mut mutant, n int, seed uint64) error {
	db, _ := pgtest.NewDB(t)
	b := bounds{
		holders: 3, nodes: 2, tmax: 12, maxStep: 1, depth: *replayDepth, ttl: [maxHold]tick{3, 3, 3}, maxTTL: 3, tol: 1,
		holdOffs: [][]tick{{0, -2, 1}}, srv0: 0, srvOffs: []tick{0},
		budget:   budget{evictions: 100, lost: 100},
		families: famEvict | famVerify,
	}
	m := &model{b: b, mut: mut}
	t.Logf("seed %d (-model.seed replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	for i := range n {
		table := fmt.Sprintf("replay_%d", i)
		ddl, err := Schema{Table: table, MinNode: 0, MaxNode: int64(b.nodes - 1), MaxTTL: time.Duration(b.maxTTL) * time.Second}.SQL()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctxOf(t), ddl); err != nil {
			t.Fatal(err)
		}
		// The model's table starts confirmed: no standby, none to wait for.
		if st, err := New(db, Config{Table: table, MinNode: 0, MaxNode: int64(b.nodes - 1)}); err != nil {
			t.Fatal(err)
		} else if err := st.SettleCreation(ctxOf(t), nil); err != nil {
			t.Fatal(err)
		}
		// The model's rows start at its earliest millisecond.
		if _, err := db.ExecContext(ctxOf(t), `UPDATE `+table+` SET horizon_ms = $1`, replayMs(stampLo)); err != nil {
			t.Fatal(err)
		}
		r := &replayer{t: t, db: db, cfg: Config{Table: table, MinNode: 0, MaxNode: int64(b.nodes - 1)}}
		s := m.initial()[0]
		r.at(s.t)
		var trace []string
		for range b.depth {
			acts := m.enabled(&s, nil)
			a := acts[rng.IntN(len(acts))]
			pre := s
			changed, v := m.step(&s, a)
			if v != nil && mut == "" {
				t.Fatalf("trace %d: the model broke rule %s without faults: %v", i, v.rule, v)
			}
			if !changed || v != nil {
				s = pre
				continue
			}
			trace = append(trace, a.String())
			r.apply(&pre, a)
			if err := r.compare(&s, i, trace); err != nil {
				r.end()
				return err
			}
		}
		r.end()
	}
	return nil
}

// apply runs a, taken in the model's state pre, through the statements.
func (r *replayer) apply(pre *mstate, a act) {
	t, ctx, h := r.t, ctxOf(r.t), int(a.who)
	switch a.kind {
	case aTick:
		r.at(pre.t + a.arg)
	case aCall, aCallLost:
		hd := pre.hold[h]
		switch int8(a.arg) {
		case sClaim:
			if _, err := r.st.Claim(ctx, 0, r.cfg.MaxNode, owner(h), time.Duration(hd.ttl)*time.Second, replayMs(pre.t+hd.off+hd.ttl)); err != nil {
				t.Fatal(err)
			}
		case sRenew:
			k := Key{NodeID: int64(hd.node), Owner: owner(h), Epoch: int64(hd.epoch)}
			if _, err := r.st.Renew(ctx, k, time.Duration(hd.ttl)*time.Second, replayMs(pre.t+hd.off+hd.ttl)); err != nil {
				t.Fatal(err)
			}
		case sRelease:
			k := Key{NodeID: int64(hd.node), Owner: owner(h), Epoch: int64(hd.epoch)}
			if _, err := r.st.Release(ctx, k, replayMs(hd.last)); err != nil {
				t.Fatal(err)
			}
		}
	case aVerify:
		hd := pre.hold[h]
		tx, err := r.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := Key{NodeID: int64(hd.node), Owner: owner(h), Epoch: int64(hd.epoch)}
		v, err := verify(ctx, tx, r.clock.Replace(VerifySQL(r.cfg)), r.cfg, k)
		if err != nil {
			t.Fatal(err)
		}
		if v.Held {
			// The statements read the model's clock, stopped between
			// actions, but the idle bound the verification set runs on
			// the server's: a loaded machine's pause between two actions
			// would end the transaction the model keeps open. The bound
			// has tests of its own (verify_test.go); here it is lifted.
			if _, err := tx.ExecContext(ctx, `SET LOCAL idle_in_transaction_session_timeout = 0`); err != nil {
				t.Fatal(err)
			}
			r.txs[h] = tx
		} else {
			_ = tx.Rollback()
		}
	case aEndTx:
		if err := r.txs[h].Commit(); err != nil {
			t.Fatal(err)
		}
		r.txs[h] = nil
	case aEvict:
		row := pre.db.rows[h]
		if _, err := r.st.Evict(ctx, int64(h), int64(row.epoch)); err != nil && SQLState(err) != "55P03" {
			t.Fatal(err)
		}
	default:
		t.Fatalf("the replay has no statement for %s", a)
	}
}

// compare checks the table's rows against the model's after a trace's
// last step.
func (r *replayer) compare(s *mstate, i int, trace []string) error {
	t := r.t
	rows, err := r.db.QueryContext(ctxOf(t), `SELECT node_id, owner, epoch,
		CASE WHEN isfinite(expires_at) THEN (extract(epoch FROM expires_at) * 1000)::bigint END, horizon_ms, claim_generation
		FROM `+r.cfg.Table+` ORDER BY node_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for n := 0; rows.Next(); n++ {
		var (
			node, epoch, horizon, gen int64
			own                       string
			expires                   sql.NullInt64
		)
		if err := rows.Scan(&node, &own, &epoch, &expires, &horizon, &gen); err != nil {
			t.Fatal(err)
		}
		want := s.db.rows[n]
		wantOwner, wantExpires := "", sql.NullInt64{}
		if want.owner != 0 {
			wantOwner = owner(int(want.owner - 1))
		}
		if want.expires != never {
			wantExpires = sql.NullInt64{Int64: replayMs(want.expires), Valid: true}
		}
		if own != wantOwner || epoch != int64(want.epoch) || expires != wantExpires || horizon != replayMs(want.horizon) || gen != int64(want.gen) {
			return fmt.Errorf("trace %d, after %s:\nnode %d in the table: owner %q, epoch %d, expires %v, horizon %d, generation %d\nin the model:          owner %q, epoch %d, expires %v, horizon %d, generation %d",
				i, strings.Join(trace, ", "), node, own, epoch, expires, horizon, gen,
				wantOwner, want.epoch, wantExpires, replayMs(want.horizon), want.gen)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return nil
}

// end rolls back the trace's open transactions.
func (r *replayer) end() {
	for h, tx := range r.txs {
		if tx != nil {
			if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
				r.t.Fatal(err)
			}
			r.txs[h] = nil
		}
	}
}
