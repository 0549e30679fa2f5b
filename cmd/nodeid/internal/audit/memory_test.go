package audit

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/snowflake"
)

// EnvMemIDs sets how many IDs TestAuditMemory audits: 3,000,000 unless
// set (docs/audit.md's figure is from 10000000).
const EnvMemIDs = "NODEID_AUDIT_MEM_IDS"

// writeFleet writes n IDs of a fleet of 1024 pods, each on its own node
// ID, 4 IDs a millisecond each, with their pods ("ID\tpod-N"), and one
// duplicate at the end.
func writeFleet(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	l := snowflake.DefaultLayout
	line := func(i int) {
		id, _ := l.Encode(snowflake.Parts{Ms: t0 + int64(i/4096), Node: int64(i % 1024), Seq: int64(i / 1024 % 4)})
		b := strconv.AppendInt(bw.AvailableBuffer(), id.Int64(), 10)
		b = append(b, "\tpod-"...)
		b = strconv.AppendInt(b, int64(i%1024), 10)
		b = append(b, '\n')
		_, _ = bw.Write(b)
	}
	for i := range n - 1 {
		line(i)
	}
	line(0)
	return bw.Flush()
}

// peakHeap runs f while sampling the heap in use (MemStats.HeapInuse)
// every 10ms, and returns the highest sample.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// TestAuditMemory: the heap an audit takes is bounded by its chunk, not by
// the number of IDs: 3 million IDs (NODEID_AUDIT_MEM_IDS sets another
// number) with --by stay within 256 MB in chunks of the default size, and
// within 64 MB in chunks of 128 Ki IDs, where holding them all would take
// 72 MB. Under the race detector and -short, a million IDs stay within 20
// MB in chunks of 64 Ki (holding them would take 24 MB). It measures
// memory, not time.
func TestAuditMemory(t *testing.T) {
	n := 3_000_000
	if s := os.Getenv(EnvMemIDs); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 2 {
			t.Fatalf("%s=%q: a number of IDs, 2 or more", EnvMemIDs, s)
		}
		n = v
	}
	cases := []struct {
		chunk int
		bound uint64
	}{{defaultChunk, 256 << 20}, {128 << 10, 64 << 20}}
	if testing.Short() || raceEnabled {
		// A million IDs: holding them would take 24 MB, chunks of 64 Ki
		// take 1.5 MB.
		n, cases = 1_000_000, cases[:0]
		cases = append(cases, struct {
			chunk int
			bound uint64
		}{64 << 10, 20 << 20})
	}
	for _, c := range cases {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeFleet(pw, n)) }()
		env, _, _ := clitest.Env("", nil)
		env.In = pr
		o := &Options{Env: env, Files: []string{"-"}, By: "pod", Within: defaultWithin, Examples: 3, chunk: c.chunk,
			layout: idlayout.IDLayout{Layout: snowflake.DefaultLayout, Order: idlayout.SnowflakeOrder}}
		var (
			rep Report
			err error
		)
		peak := peakHeap(func() { rep, err = audit(context.Background(), o) })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d IDs in chunks of %d: %d runs spilled, peak heap in use %.1f MB", rep.IDs, c.chunk, o.spilled, float64(peak)/(1<<20))
		if rep.IDs != int64(n) || rep.Duplicates != 1 || len(rep.Nodes) != 1 || rep.Nodes[0].Node != 0 {
			t.Errorf("%d IDs, %d duplicates, nodes %+v; want %d, 1 and node 0", rep.IDs, rep.Duplicates, rep.Nodes, n)
		}
		if peak > c.bound {
			t.Errorf("peak heap in use %.1f MB in chunks of %d, above %d MB", float64(peak)/(1<<20), c.chunk, c.bound>>20)
		}
	}
}

// BenchmarkAudit audits a million IDs of a fleet of 1024 pods, with --by,
// read from memory, and reports IDs per second.
func BenchmarkAudit(b *testing.B) {
	const n = 1_000_000
	var in bytes.Buffer
	if err := writeFleet(&in, n); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		env, _, _ := clitest.Env("", nil)
		env.In = bytes.NewReader(in.Bytes())
		o := &Options{Env: env, Files: []string{"-"}, By: "pod", Within: defaultWithin, Examples: 3, chunk: defaultChunk,
			layout: idlayout.IDLayout{Layout: snowflake.DefaultLayout, Order: idlayout.SnowflakeOrder}}
		if _, err := audit(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}
