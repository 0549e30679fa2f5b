package snowflake_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// Lease a node ID from PostgreSQL, mint IDs under it, and stop when the
// lease is lost. (It needs a database, so it is compiled, not run.)
func Example() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	reg, err := nodeid.New(db, nodeid.WithTTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close() // releases the lease: the node ID is free at once
	lease, err := reg.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	gen, err := snowflake.New(lease)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		<-lease.Done()
		log.Printf("no more IDs: %v", lease.Err())
	}()

	id, err := gen.Generate()
	if err != nil {
		log.Fatal(err) // the lease is lost, or the clock is far behind
	}
	fmt.Println(id, id.Base58(), id.Node() == lease.NodeID())
}

// A custom layout: a recent origin, 16 node bits, and 2 of the 8 step bits
// holding the lease epoch, so that two claims of a node ID never mint the
// same ID even if every clock lies.
func ExampleLayout() {
	l := snowflake.Layout{
		Origin:    time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		NodeBits:  16,
		StepBits:  8,
		EpochBits: 2,
	}
	if err := l.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.TimeBits(), "time bits, until", time.UnixMilli(l.End()).UTC().Format(time.DateOnly))
	fmt.Println(l.MaxNode()+1, "node IDs,", l.PerUnit(), "IDs per millisecond")

	id, err := l.Encode(snowflake.Parts{Ms: l.Origin + 1000, Node: 40000, Epoch: 7, Seq: 5})
	if err != nil {
		log.Fatal(err)
	}
	p := l.Decode(id)
	fmt.Println(id, p.Time().UTC().Format(time.RFC3339), p.Node, p.Epoch, p.Seq)
	// Output:
	// 39 time bits, until 2042-06-03
	// 65536 node IDs, 64 IDs per millisecond
	// 16787456197 2025-01-01T00:00:01Z 40000 3 5
}

// The JavaScript-safe preset, looked up by name as a command's --layout
// flag does: every ID is at most 2^53-1, Number.MAX_SAFE_INTEGER, so
// JavaScript reads it exactly, from JSON too.
func ExamplePreset() {
	l, err := snowflake.Preset("js53")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l)
	fmt.Println(l.MaxNode()+1, "node IDs,", l.PerUnit(), "IDs per", l.Unit(), "until", time.UnixMilli(l.End()).UTC().Format(time.DateOnly))

	largest, err := l.Encode(snowflake.Parts{Ms: l.End(), Node: l.MaxNode(), Seq: l.PerUnit() - 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(largest, largest == 1<<53-1)
	if _, err := l.Parse("1816231948463198208"); err != nil { // an ID of the default layout
		fmt.Println(err)
	}
	// Output:
	// 53-bit IDs: origin 1735689600000 (2025-01-01T00:00:00.000Z), 41 time bits of 1ms, 10 node bits, 2 step bits (0 epoch bits)
	// 1024 node IDs, 4 IDs per 1ms until 2094-09-07
	// 9007199254740991 true
	// snowflake: ID 1816231948463198208 does not fit the layout: its IDs are 53 bits wide, at most 9007199254740991
}

// An ID of the default layout is bwmarrin's: its own methods decode it.
func ExampleLayout_Decode() {
	id, err := snowflake.DefaultLayout.Encode(snowflake.Parts{Ms: 1767225600000, Node: 777, Seq: 42})
	if err != nil {
		log.Fatal(err)
	}
	p := snowflake.DefaultLayout.Decode(id)
	fmt.Println(id, p.Node, p.Seq, p.Time().UTC().Format(time.RFC3339))
	fmt.Println(id.Time() == p.Ms, id.Node(), id.Step())
	// Output:
	// 2006515713441828906 777 42 2026-01-01T00:00:00Z
	// true 777 42
}
