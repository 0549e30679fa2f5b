package ids

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/snowflake"
)

// holdAndMint claims node ID 5 as owner, mints a few IDs with the fenced
// generator in layout l, and releases the claim (which records the last
// millisecond stamped as its exact horizon). It returns the last ID and
// the claim's epoch.
func holdAndMint(t *testing.T, dsn, owner string, l snowflake.Layout) (bw.ID, int64) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg, err := nodeid.New(db, nodeid.WithCreateTable(true), nodeid.WithOwner(owner), nodeid.WithNodeRange(5, 5), nodeid.WithTTL(nodeid.MinTTL))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	lease, err := reg.Acquire(clitest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := snowflake.New(lease, snowflake.WithLayout(l))
	if err != nil {
		t.Fatal(err)
	}
	var id bw.ID
	for i := 0; i < 3; i++ {
		if id, err = gen.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := lease.Release(clitest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	return id, lease.Epoch()
}

// TestWhoTwoHolders: IDs minted by two successive holders of one node ID
// are each traced to their own holder.
func TestWhoTwoHolders(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	l := snowflake.DefaultLayout
	idA, epochA := holdAndMint(t, dsn, "alpha", l)
	idB, epochB := holdAndMint(t, dsn, "beta", l)
	if epochB != epochA+1 {
		t.Fatalf("epochs %d then %d", epochA, epochB)
	}
	out := harness.Must(t, "who", "--dsn", dsn, idA.String(), "b58:"+idB.Base58())
	blocks := strings.Split(out, "\n\n")
	if len(blocks) != 3 {
		t.Fatalf("who printed %d blocks, want the layout and 2 IDs:\n%s", len(blocks), out)
	}
	for i, want := range []string{"held by     owner alpha, epoch 1", "held by     owner beta, epoch 2"} {
		if !strings.Contains(blocks[i+1], want) || !strings.Contains(blocks[i+1], "(released)") {
			t.Errorf("block %d does not say %q:\n%s", i+1, want, blocks[i+1])
		}
	}

	var doc []struct {
		ID     string `json:"id"`
		Node   int64  `json:"node"`
		Claims []struct {
			Owner     string `json:"owner"`
			Epoch     int64  `json:"epoch"`
			EndReason string `json:"end_reason"`
		} `json:"claims"`
	}
	out = harness.Must(t, "who", "--dsn", dsn, "-o", "json", idB.Base64(), idA.String())
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	clitest.SameAsJSON(t, harness.Must(t, "who", "--dsn", dsn, "-o", "yaml", idB.Base64(), idA.String()), out)
	if len(doc) != 2 || len(doc[0].Claims) != 1 || len(doc[1].Claims) != 1 ||
		doc[0].ID != idB.String() || doc[0].Claims[0].Owner != "beta" || doc[0].Claims[0].Epoch != epochB ||
		doc[1].ID != idA.String() || doc[1].Claims[0].Owner != "alpha" || doc[1].Claims[0].Epoch != epochA {
		t.Errorf("who -o json: %+v", doc)
	}
}

// TestWhoEpochBits: with epoch bits in the layout, a claim is named only if
// its epoch matches the ID's bits.
func TestWhoEpochBits(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	l := snowflake.Layout{Origin: snowflake.DefaultLayout.Origin, NodeBits: 10, StepBits: 12, EpochBits: 2}
	idA, _ := holdAndMint(t, dsn, "alpha", l)
	holdAndMint(t, dsn, "beta", l)
	flags := []string{"--dsn", dsn, "--epoch-bits", "2"}
	if out := harness.Must(t, append([]string{"who"}, append(flags, idA.String())...)...); !strings.Contains(out, "owner alpha, epoch 1") {
		t.Errorf("who with epoch bits:\n%s", out)
	}
	// The same millisecond and node, but the epoch bits of another claim.
	p := l.Decode(idA)
	p.Epoch = 2
	forged := mustEncode(l, p)
	r := harness.Run(t, append([]string{"who"}, append(flags, forged.String())...)...)
	clitest.WantExit(t, r, cli.ExitFailure, "1 of 1 IDs: no lease covers this ID")
	if !strings.Contains(r.Stdout, "held by     "+notCovered) {
		t.Errorf("who of a forged ID:\n%s", r.Stdout)
	}
}

// TestWhoSwappedHalves: an ID of a 5+5 generator whose upper field was
// given the node ID's low half is traced to its lease with
// --swap-node-halves, and to nobody without.
func TestWhoSwappedHalves(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	id, _ := holdAndMint(t, dsn, "alpha", snowflake.DefaultLayout)
	p := snowflake.DefaultLayout.Decode(id) // node ID 5: upper half 0, lower half 5
	swapped := id.Int64()&^(1023<<12) | 5<<17 | 0<<12
	if p.Node != 5 {
		t.Fatalf("minted on node ID %d", p.Node)
	}
	s := strconv.FormatInt(swapped, 10)
	r := harness.Run(t, "who", "--dsn", dsn, s)
	clitest.WantExit(t, r, cli.ExitFailure, "no lease covers this ID")
	if !strings.Contains(r.Stdout, "node        160") {
		t.Errorf("who, halves not swapped back:\n%s", r.Stdout)
	}
	if out := harness.Must(t, "who", "--dsn", dsn, "--swap-node-halves", s); !strings.Contains(out, "held by     owner alpha, epoch 1") {
		t.Errorf("who --swap-node-halves:\n%s", out)
	}
}

func TestWhoNotCovered(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewDB(t)
	idA, _ := holdAndMint(t, dsn, "alpha", snowflake.DefaultLayout)
	// After the only claim's horizon: nobody may have stamped it.
	later := mustEncode(snowflake.DefaultLayout, snowflake.Parts{Ms: snowflake.DefaultLayout.Decode(idA).Ms + 1, Node: 5})
	// A node ID never claimed.
	other := mustEncode(snowflake.DefaultLayout, snowflake.Parts{Ms: snowflake.DefaultLayout.Decode(idA).Ms, Node: 6})
	r := harness.Run(t, "who", "--dsn", dsn, idA.String(), later.String(), other.String())
	clitest.WantExit(t, r, cli.ExitFailure, "2 of 3 IDs: no lease covers this ID (it was not minted by a fenced generator of this table")
	if n := strings.Count(r.Stdout, notCovered); n != 2 {
		t.Errorf("%d IDs said to be uncovered, want 2:\n%s", n, r.Stdout)
	}
}

// TestWhoBoundedBelow: a claim's IDs are stamped no earlier than its
// acquisition less --max-skew, so an ID stamped long before is nobody's,
// even though the node ID's first claim has no previous horizon; an answer
// that rests on the allowance says so.
func TestWhoBoundedBelow(t *testing.T) {
	t.Parallel()
	db, dsn := pgtest.NewDB(t)
	l := snowflake.DefaultLayout
	holdAndMint(t, dsn, "alpha", l)
	var acquired int64 // the millisecond in which the claim was acquired
	if err := db.QueryRowContext(clitest.Ctx(t), `SELECT floor(extract(epoch FROM acquired_at) * 1000)::bigint
		FROM snowflake_nodes_history WHERE node_id = 5 AND epoch = 1`).Scan(&acquired); err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) string { return mustEncode(l, snowflake.Parts{Ms: ms, Node: 5, Seq: 1}).String() }

	// Stamped in 2020, years before node ID 5 was first claimed.
	r := harness.Run(t, "who", "--dsn", dsn, at(1577836800000))
	clitest.WantExit(t, r, cli.ExitFailure, "1 of 1 IDs: no lease covers this ID")
	if !strings.Contains(r.Stdout, "held by     "+notCovered) {
		t.Errorf("who of an ID stamped in 2020:\n%s", r.Stdout)
	}

	// Within the allowance: alpha, with a note.
	out := harness.Must(t, "who", "--dsn", dsn, at(acquired-5000))
	if !strings.Contains(out, "held by     owner alpha, epoch 1") ||
		!strings.Contains(out, "note        stamped 5s before the claim was acquired: the answer rests on the --max-skew allowance") {
		t.Errorf("who of an ID stamped 5s before the claim:\n%s", out)
	}
	var doc []struct {
		Claims []struct {
			Owner            string `json:"owner"`
			BeforeAcquiredMs int64  `json:"before_acquired_ms"`
		} `json:"claims"`
	}
	out = harness.Must(t, "who", "--dsn", dsn, "-o", "json", at(acquired-5000), at(acquired))
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc) != 2 || len(doc[0].Claims) != 1 || doc[0].Claims[0].BeforeAcquiredMs != 5000 ||
		len(doc[1].Claims) != 1 || doc[1].Claims[0].BeforeAcquiredMs != 0 {
		t.Errorf("who -o json: %+v", doc)
	}
	if out := harness.Must(t, "who", "--dsn", dsn, at(acquired)); strings.Contains(out, "note") {
		t.Errorf("who of an ID stamped in the claim's millisecond has a note:\n%s", out)
	}

	// Beyond the default allowance, within a wider one; and none at all.
	clitest.WantExit(t, harness.Run(t, "who", "--dsn", dsn, at(acquired-15000)), cli.ExitFailure, "no lease covers this ID")
	if out := harness.Must(t, "who", "--dsn", dsn, "--max-skew", "20s", at(acquired-15000)); !strings.Contains(out, "owner alpha, epoch 1") ||
		!strings.Contains(out, "stamped 15s before") {
		t.Errorf("who --max-skew 20s:\n%s", out)
	}
	clitest.WantExit(t, harness.Run(t, "who", "--dsn", dsn, "--max-skew", "0s", at(acquired-1)), cli.ExitFailure, "no lease covers this ID")
}

func TestWhoBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "who", "--max-skew", "-1s", "1"), cli.ExitUsage, "--max-skew", "negative")
	clitest.WantExit(t, harness.Run(t, "who", "--max-skew", "a bit", "1"), cli.ExitUsage, "--max-skew", "not a duration")
	if out := harness.Must(t, "who", "--help"); !strings.Contains(out, "--max-skew duration") || !strings.Contains(out, "(default 10s)") {
		t.Errorf("who --help does not show --max-skew:\n%s", out)
	}
	clitest.WantExit(t, harness.Run(t, "who"), cli.ExitUsage, "one or more IDs")
	clitest.WantExit(t, harness.Run(t, "who", "1", "not-an-id"), cli.ExitUsage, `ID "not-an-id"`)
	clitest.WantExit(t, harness.Run(t, "who", "--step-bits", "0", "1"), cli.ExitUsage, "step bits")
	clitest.WantExit(t, harness.Run(t, "who", "--dsn", "postgres://u:hunter2@127.0.0.1:1/db", "-o", "csv", "1"), cli.ExitUsage, `-o "csv"`)
	clitest.WantExit(t, harness.Run(t, "who", "notanumber"), cli.ExitUsage, `ID "notanumber" is neither decimal nor Base64`, "--format b58")
}
