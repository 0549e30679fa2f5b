//go:build linux

package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/internal/testkit"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// Environment of BenchmarkServe.
const (
	// EnvServeBenchSeconds is how long each load runs (default 5).
	EnvServeBenchSeconds = "NODEID_SERVE_BENCH_SECONDS"
	// EnvServeBenchLoad picks the load generator: wrk (the default when it
	// is installed) or go (a keep-alive client in this process).
	EnvServeBenchLoad = "NODEID_SERVE_BENCH_LOAD"
	// EnvServeBenchLayout is the --layout preset serve mints in (default
	// bwmarrin; js53 for IDs below 2^53, whose cap is 4 IDs a millisecond).
	EnvServeBenchLayout = "NODEID_SERVE_BENCH_LAYOUT"
)

// serveBenchConns is the number of keep-alive connections of the load.
const serveBenchConns = 16

// BenchmarkServe measures "nodeid serve" (the binary, built without the
// race detector) side by side with a bare net/http server that writes a
// constant (testdata/servebench/bare), under the same load generator on
// this host: GET /id against the bare handler, and GET /ids?count=1000 in
// IDs per second. Each load runs once, for NODEID_SERVE_BENCH_SECONDS:
//
//	go test -run '^$' -bench BenchmarkServe -benchtime 1x ./cmd/nodeid/
//
// Besides requests per second and p99 it reports the server's CPU time
// per request (its utime+stime over the run), from which the rate with
// the load generator on another host is estimated (docs/serve-bench.md).
func BenchmarkServe(b *testing.B) {
	secs := 5
	if v := os.Getenv(EnvServeBenchSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: it must be a whole number of seconds, at least 1", EnvServeBenchSeconds, v)
		}
		secs = n
	}
	load := os.Getenv(EnvServeBenchLoad)
	if load == "" {
		load = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			load = "wrk"
		}
	}
	if load != "wrk" && load != "go" {
		b.Fatalf("%s=%q: it must be wrk or go", EnvServeBenchLoad, load)
	}
	layout := os.Getenv(EnvServeBenchLayout)
	if layout == "" {
		layout = "bwmarrin"
	}
	// A request of /ids asks for a millisecond's cap of IDs at most: js53
	// mints 4 a millisecond, where bwmarrin's 4,096 allow 1,000.
	count, ok := map[string]int{"bwmarrin": 1000, "js53": 4}[layout]
	if !ok {
		b.Fatalf("%s=%q: it must be bwmarrin or js53", EnvServeBenchLayout, layout)
	}
	_, dsn := pgtest.NewDB(b)
	dir := b.TempDir()
	nodeidBin, bareBin := clitest.BuildBinary(b), filepath.Join(dir, "bare")
	goBuild(b, bareBin, "./testdata/servebench/bare")

	bare := startBenchServer(b, regexp.MustCompile(`listening on (http://\S+)`), true, bareBin)
	serve := startBenchServer(b, servingOn, false, nodeidBin, "serve", "--dsn", dsn, "--create", "--listen", "127.0.0.1:0", "--layout", layout)
	testkit.Until(b, 60*time.Second, "nodeid serve healthy", testkit.True(func() bool {
		r, err := http.Get(serve.base + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	}))
	b.Logf("load: %s, %d connections, %ds each, GOMAXPROCS %d, %d CPUs; serve --layout %s", load, serveBenchConns, secs, runtime.GOMAXPROCS(0), runtime.NumCPU(), layout)
	for _, c := range []struct {
		name string
		srv  *benchServer
		path string
		ids  int
	}{
		{"bare", bare, "/id", 1},
		{"id", serve, "/id", 1},
		{fmt.Sprintf("ids%d", count), serve, fmt.Sprintf("/ids?count=%d", count), count},
	} {
		b.Run(c.name+"/"+load, func(b *testing.B) {
			cpu0 := procCPU(b, c.srv.cmd.Process.Pid)
			var res loadResult
			if load == "wrk" {
				res = wrkLoad(b, c.srv.base+c.path, secs)
			} else {
				res = goLoad(b, c.srv.base+c.path, secs)
			}
			cpu := procCPU(b, c.srv.cmd.Process.Pid) - cpu0
			if res.requests == 0 {
				b.Fatal("no request completed")
			}
			b.ReportMetric(res.rps, "req/s")
			b.ReportMetric(float64(res.p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(res.requests), "cpu-µs/req")
			if c.ids > 1 {
				b.ReportMetric(res.rps*float64(c.ids), "IDs/s")
			}
			b.ReportMetric(1e9/res.rps, "ns/op")
		})
	}
}

// goBuild builds the package at pkg into out, without the race detector.
func goBuild(b *testing.B, out, pkg string) {
	b.Helper()
	if o, err := exec.Command(clitest.GoTool(), "build", "-o", out, pkg).CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, o)
	}
}

// benchServer is a server process under load.
type benchServer struct {
	cmd  *exec.Cmd
	base string
}

// startBenchServer starts argv and reads its address from its stdout (or
// stderr) with addr.
func startBenchServer(b *testing.B, addr *regexp.Regexp, stdout bool, argv ...string) *benchServer {
	b.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	var pipe io.ReadCloser
	var err error
	if stdout {
		pipe, err = c.StdoutPipe()
	} else {
		pipe, err = c.StderrPipe()
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	s := &benchServer{cmd: c}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			if m := addr.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		close(found)
	}()
	b.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	select {
	case s.base = <-found:
	case <-time.After(60 * time.Second):
	}
	if s.base == "" {
		b.Fatalf("%s did not say where it listens", argv[0])
	}
	return s
}

// procCPU returns the user and system CPU time of process pid.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// loadResult is what a load generator measured.
type loadResult struct {
	requests int64
	rps      float64
	p99      time.Duration
}

var (
	wrkRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99      = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)\b`)
	wrkRequests = regexp.MustCompile(`(\d+) requests in`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkErrors   = regexp.MustCompile(`Socket errors: .*`)
)

// wrkLoad runs wrk, one thread, serveBenchConns connections.
func wrkLoad(b *testing.B, url string, secs int) loadResult {
	b.Helper()
	out, err := exec.Command("wrk", "-t1", fmt.Sprintf("-c%d", serveBenchConns), fmt.Sprintf("-d%ds", secs), "--latency", url).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	s := string(out)
	if m := wrkNon2xx.FindStringSubmatch(s); m != nil {
		b.Fatalf("wrk: %s responses were not 200:\n%s", m[1], s)
	}
	if m := wrkErrors.FindString(s); m != "" {
		b.Fatalf("wrk: %s\n%s", m, s)
	}
	rps, p99, n := wrkRPS.FindStringSubmatch(s), wrkP99.FindStringSubmatch(s), wrkRequests.FindStringSubmatch(s)
	if rps == nil || p99 == nil || n == nil {
		b.Fatalf("cannot read wrk's output:\n%s", s)
	}
	r := loadResult{}
	r.rps, _ = strconv.ParseFloat(rps[1], 64)
	r.requests, _ = strconv.ParseInt(n[1], 10, 64)
	v, _ := strconv.ParseFloat(p99[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[p99[2]]
	r.p99 = time.Duration(v * float64(unit))
	return r
}

// goLoad runs serveBenchConns keep-alive clients in this process.
func goLoad(b *testing.B, url string, secs int) loadResult {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: serveBenchConns, MaxConnsPerHost: serveBenchConns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	var (
		mu   sync.Mutex
		lat  []time.Duration
		fail error
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range serveBenchConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				r, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						fail = err
						mu.Unlock()
					}
					break
				}
				_, err = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				if err == nil && r.StatusCode != 200 {
					err = fmt.Errorf("status %d", r.StatusCode)
				}
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						fail = err
						mu.Unlock()
					}
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if fail != nil {
		b.Fatal(fail)
	}
	if len(lat) == 0 {
		return loadResult{}
	}
	slices.Sort(lat)
	return loadResult{
		requests: int64(len(lat)),
		rps:      float64(len(lat)) / elapsed.Seconds(),
		p99:      lat[len(lat)*99/100],
	}
}
