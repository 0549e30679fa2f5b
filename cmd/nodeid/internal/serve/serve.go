package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/holder"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
	"github.com/nodeid/nodeid/postgres"
	"github.com/nodeid/nodeid/snowflake"
)

// ServeMaxCount is the most IDs one GET /ids of "nodeid serve" returns.
const ServeMaxCount = 10000

// serveDefaultListen is where "nodeid serve" listens unless told: loopback.
const serveDefaultListen = "127.0.0.1:8080"

// The pause between failed claims of "nodeid serve" doubles from
// serveRetryMin to serveRetryMax.
const (
	serveRetryMin = 100 * time.Millisecond
	serveRetryMax = 5 * time.Second
)

// Options are the flags of serve.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	holder.Flags
	Listen string
	Layout idlayout.LayoutFlags

	network, addr string        // of Listen, parsed by Validate
	nodes         cli.NodeRange // resolved by Validate
	layout        snowflake.Layout
}

// Validate checks the grace, the layout, --listen and the node range.
func (o *Options) Validate() error {
	if err := o.ValidateGrace(); err != nil {
		return err
	}
	l, err := o.Layout.Layout()
	if err != nil {
		return err
	}
	o.layout = l.Layout
	if o.network, o.addr, err = listenAddr(o.Listen); err != nil {
		return err
	}
	o.nodes, err = o.Nodes()
	return err
}

// NewCmdServe returns "nodeid serve". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdServe(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve fenced Snowflake IDs over HTTP, under a node-ID lease",
		Long: `Lease a node ID, mint Snowflake IDs under it (in the layout of
github.com/bwmarrin/snowflake unless --layout says otherwise: 41 time bits,
10 node bits, 12 step bits) and serve them over HTTP, for programs in any
language:

  GET /id              one ID, as decimal text and a newline
  GET /ids?count=N     N IDs (1 to ` + fmt.Sprint(ServeMaxCount) + `), one a line
  GET /healthz         200 "ok" while the lease is held and its deadline is
                       more than the grace away; 503 and the reason otherwise
  GET /metrics         the lease's and the process's metrics, in Prometheus's
                       text format (as "nodeid run --metrics-addr"), and
                       serve's own: the duration of each request by method,
                       route and status (http_server_request_duration_seconds)
                       and the IDs served (nodeid_serve_ids_total)

With "Accept: application/json", /id answers {"id":"...","node":N,
"epoch":E,"owner":"..."} and /ids {"ids":["...",...],"node":...}: the IDs
are strings, since a 64-bit integer does not fit a JSON number in many
languages (JavaScript's Number, JSON.parse included, rounds integers above
2^53). In a layout whose IDs are below 2^53 (--layout js53, or --total-bits
53 or less) they are JSON numbers, which every parser reads exactly. Every
response carries the headers X-Nodeid-Node, X-Nodeid-Epoch and
X-Nodeid-Owner of the lease its IDs are minted under.

The layout: --layout bwmarrin (the default) or js53 (IDs below 2^53 for
clients in JavaScript: 4 IDs per millisecond, against bwmarrin's 4096), and
each field's flag given replaces that field of it. A layout is chosen per
table, when the table is new, and never changed under IDs already minted:
an ID of one layout may equal an ID of another.

Safety: no ID is minted after the lease is lost (taken over, evicted,
expired, or its deadline passed for want of renewals). Requests then get 503
with the cause at once, and serve claims a node ID again, waits until this
host's clock is past the horizon the previous holder left, and serves IDs
from the new lease, without a restart. SIGTERM or SIGINT stops accepting
requests, lets those under way finish (for at most the grace), and releases
the node ID with an exact horizon, so that the next holder may start at
once. Stamps come from this host's wall clock.

Bad requests (a count that is missing, not a number, 0 or above the
maximum; an unknown path; a method other than GET) get 400, 404 or 405 with
a one-line reason, and cost no ID.

--listen takes HOST:PORT, or unix:PATH for a Unix socket (a sidecar). It is
loopback by default: listening on any other address lets every host that
reaches it take IDs, which is the operator's choice to make (behind a
Kubernetes Service, for instance). Several serve processes, each with a node
ID of its own, behind one address make a highly available ID service.`,
		Example: `  nodeid serve --create
  curl http://127.0.0.1:8080/id
  curl 'http://127.0.0.1:8080/ids?count=100'
  nodeid serve --listen unix:/run/nodeid/ids.sock
  nodeid serve --listen 0.0.0.0:8080 --ttl 30s --range 0-63
  nodeid serve --create --layout js53      # JSON numbers, exact in JavaScript`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, c *cli.Conn) error {
			o.Conn = c
			return cli.Run(cmd.Context(), o, runF, serve)
		}),
	}
	cmd.Flags().StringVar(&o.Listen, "listen", serveDefaultListen, "HOST:PORT, or unix:PATH, to serve on (loopback unless told)")
	o.Register(cmd, "/healthz fails when the deadline is closer than this; requests under way at SIGTERM get this long; at most TTL/2")
	o.Layout.RegisterMinting(cmd)
	return cmd
}

// listen listens on addr. A Unix socket that no process accepts on (a
// serve that was killed leaves its socket behind) is removed first, so that
// a restart after a crash serves again; one that a process still accepts
// on is left alone, and the listen fails. Serves on one path take turns
// through a lock on PATH.lock, held while the socket serves (see
// lockSocketPath): two serves started at once on a socket left behind
// would otherwise both find it stale, and the second would remove the
// first's new socket. An abstract socket (Linux's @NAME) has no file to
// leave behind, and so no lock: the kernel frees its name when it closes.
func listen(network, addr string) (net.Listener, error) {
	if network != "unix" || abstractSocket(addr) {
		return net.Listen(network, addr)
	}
	lock, err := lockSocketPath(addr)
	if err != nil {
		return nil, err
	}
	ln, err := listenUnix(addr)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return lockedListener{ln, lock}, nil
}

// abstractSocket reports whether the Unix socket address addr is an
// abstract one, which names no file: @NAME on Linux (and Android); a path
// elsewhere.
func abstractSocket(addr string) bool {
	return strings.HasPrefix(addr, "@") && (runtime.GOOS == "linux" || runtime.GOOS == "android")
}

// lockedListener holds the lock of its socket's path until it is closed.
type lockedListener struct {
	net.Listener
	lock io.Closer
}

// Close closes the listener, which removes its socket, then releases the
// path's lock.
func (l lockedListener) Close() error {
	err := l.Listener.Close()
	l.lock.Close()
	return err
}

// listenUnix listens on the Unix socket addr, removing one that no process
// accepts on; the caller holds the path's lock.
func listenUnix(addr string) (net.Listener, error) {
	ln, err := net.Listen("unix", addr)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	if fi, serr := os.Lstat(addr); serr != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, err
	}
	c, derr := net.DialTimeout("unix", addr, time.Second)
	if derr == nil {
		c.Close()
		return nil, fmt.Errorf("%w: another process serves on the socket", err)
	}
	if !errors.Is(derr, syscall.ECONNREFUSED) || os.Remove(addr) != nil {
		return nil, err
	}
	return net.Listen("unix", addr)
}

// listenAddr parses --listen: HOST:PORT or unix:PATH.
func listenAddr(s string) (network, addr string, err error) {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		if p == "" {
			return "", "", cli.Usagef("--listen %q: unix: needs a socket path, as unix:/run/nodeid.sock", s)
		}
		return "unix", p, nil
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", cli.Usagef("--listen %q: it must be HOST:PORT (127.0.0.1:8080) or unix:PATH: %v", s, err)
	}
	if n, err := strconv.ParseUint(port, 10, 64); err == nil && n > 65535 {
		return "", "", cli.Usagef("--listen %q: port %s is not a TCP port, which must be 0 to 65535", s, port)
	}
	return "tcp", s, nil
}

func serve(ctx context.Context, o *Options) error {
	c, env, table, r := o.Conn, o.Env, o.Conn.Table(), o.nodes
	db, err := c.DB()
	if err != nil {
		return err
	}
	m, metrics, err := holder.NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = m.Provider.Shutdown(context.Background()) }()
	l := o.layout
	opts := append(o.Options(table),
		nodeid.WithNodeBits(int(l.NodeBits)),
		nodeid.WithLogger(holder.NewLogger(env.Err, slog.LevelInfo)),
		nodeid.WithMeterProvider(m.Provider),
	)
	if o.Range.Given() {
		if max := l.MaxNode(); r.Hi > max {
			return cli.Usagef("node range %s: node IDs above %d do not fit the %d node bits of the IDs serve mints", r, max, l.NodeBits)
		}
		opts = append(opts, nodeid.WithNodeRange(r.Lo, r.Hi))
	}
	reg, err := nodeid.New(db, opts...)
	if err != nil {
		return cli.Usage(err)
	}
	defer reg.Close()

	ln, err := listen(o.network, o.addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	s := newIDServer(metrics, m.Provider, l.Width() <= snowflake.JSSafeBits)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	where := "http://" + ln.Addr().String()
	if o.network == "unix" {
		where = "unix:" + o.addr + " (http)"
	}
	fmt.Fprintf(env.Err, "nodeid: serving IDs on %s: GET /id, /ids?count=N, /healthz, /metrics\n", where)

	ctx, stop := env.Interrupted(ctx)
	defer stop()
	h := &keeper{c: c, log: env.Err, reg: reg, m: m, s: s, grace: o.Grace, ttl: o.TTL, layout: l}
	lease, holdErr := h.hold(ctx)
	holdErr = cli.Needs(holder.Privileges(table), o.CreateHint(c, holdErr))

	// Drain: new requests get 503, those under way finish, then the node
	// ID is released; the generator, bound to the lease, is sealed first,
	// so that the horizon recorded is the last millisecond stamped.
	s.state.Store(&serveState{err: errors.New("shutting down: the node ID is being released"), hdr: s.state.Load().hdr})
	m.SetHealth(func() error { return errors.New("shutting down") })
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	_ = srv.Close()
	<-served
	if lease != nil {
		if err := lease.Release(context.Background()); err != nil {
			fmt.Fprintf(env.Err, "nodeid: releasing node ID %d (epoch %d): %v\n", lease.NodeID(), lease.Epoch(), err)
		} else {
			fmt.Fprintf(env.Err, "nodeid: released node ID %d (epoch %d)\n", lease.NodeID(), lease.Epoch())
		}
	}
	return holdErr
}

// keeper keeps serve's lease: it claims a node ID, builds the generator,
// publishes it to the server, and claims again when the lease is lost.
type keeper struct {
	c          *cli.Conn
	log        io.Writer
	reg        *nodeid.Registry
	m          *holder.Metrics
	s          *idServer
	grace, ttl time.Duration
	layout     snowflake.Layout
}

// hold runs until ctx ends, and returns the lease held then (nil if none),
// or an error that stops serve: one that a retry cannot fix, met before
// the first lease.
func (h *keeper) hold(ctx context.Context) (*nodeid.Lease, error) {
	pause := admin.Backoff{Next: serveRetryMin, Max: serveRetryMax}
	first := true
	for {
		lease, err := h.reg.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			if first && !postgres.Retryable(err) {
				return nil, err // a missing table, a privilege, options the table refuses
			}
			h.unavailable(fmt.Errorf("no lease: %s; claiming again", h.c.Explain(err)), serveHeader{})
			fmt.Fprintf(h.log, "nodeid: claim failed, retrying in about %s: %s\n", pause.Next, h.c.Explain(err))
			if !pause.Wait(ctx) {
				return nil, nil
			}
			continue
		}
		pause = admin.Backoff{Next: serveRetryMin, Max: serveRetryMax}
		hdr := newServeHeader(lease)
		// The generator stamps from the system's clock.
		if err := holder.WaitPastHorizon(ctx, h.log, lease, holder.SystemClock{}, h.ttl, true); err != nil {
			holder.ReleaseUnused(lease)
			if ctx.Err() != nil {
				return nil, nil
			}
			h.unavailable(err, hdr)
			continue
		}
		gen, err := snowflake.New(lease, snowflake.WithLayout(h.layout), snowflake.WithMeterProvider(h.m.Provider))
		if err != nil {
			// Bound or not, releasing leaves a horizon no earlier than the
			// previous holder's.
			holder.ReleaseUnused(lease)
			if first {
				return nil, err
			}
			h.unavailable(err, hdr)
			continue
		}
		first = false
		h.s.state.Store(h.s.minting(lease, gen))
		h.m.SetHealth(holder.LeaseHealth(lease, h.grace))
		after := ""
		if prev := lease.PreviousHorizon(); prev > 0 {
			after = ", stamping after the previous holder's horizon " + cli.ExactMs(prev)
		}
		fmt.Fprintf(h.log, "nodeid: minting under node ID %d (epoch %d, owner %s)%s\n",
			lease.NodeID(), lease.Epoch(), cli.Printable(lease.Owner()), after)
		select {
		case <-ctx.Done():
			return lease, nil
		case <-lease.Done():
		}
		lost := fmt.Errorf("%s; claiming a node ID again", strings.TrimPrefix(lease.Err().Error(), "nodeid: "))
		h.unavailable(lost, hdr)
		fmt.Fprintf(h.log, "nodeid: %v\n", lost)
		_ = lease.Release(context.Background()) // frees the row of a lease that lapsed, if still ours
	}
}

// unavailable makes requests and /healthz answer 503 with why.
func (h *keeper) unavailable(why error, hdr serveHeader) {
	h.s.state.Store(&serveState{err: why, hdr: hdr})
	h.m.SetHealth(func() error { return why })
}

// serveHeader is what every response says of the lease, precomputed.
type serveHeader struct {
	node, epoch, owner []string // header values
	json               []byte   // `,"node":N,"epoch":E,"owner":"..."}`
}

func newServeHeader(l *nodeid.Lease) serveHeader {
	node, epoch := fmt.Sprint(l.NodeID()), fmt.Sprint(l.Epoch())
	return serveHeader{
		node: []string{node}, epoch: []string{epoch}, owner: []string{headerSafe(l.Owner())},
		json: fmt.Appendf(nil, `,"node":%s,"epoch":%s,"owner":%s}`, node, epoch, jsonString(l.Owner())),
	}
}

// headerSafe replaces what may not appear in an HTTP header value.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// serveState is what the server mints with: a generator, or why there is
// none.
type serveState struct {
	gen *snowflake.Generator // nil: err says why
	err error
	hdr serveHeader
	ids metric.AddOption // the attributes of the IDs gen mints (instruments.leaseIDs)
}

// idServer is the HTTP handler of serve.
type idServer struct {
	state   atomic.Pointer[serveState]
	metrics http.Handler // /metrics and /healthz of holder.Metrics
	instr   *instruments
	// numbers writes the IDs in JSON as numbers, not strings: for a layout
	// whose IDs are below 2^53, which every JSON parser reads exactly.
	numbers bool
}

// newIDServer returns the handler of serve, answering 503 until it is
// given a generator: metrics serves /metrics and /healthz, mp records the
// requests and the IDs served.
func newIDServer(metrics http.Handler, mp metric.MeterProvider, numbers bool) *idServer {
	s := &idServer{metrics: metrics, instr: newInstruments(mp), numbers: numbers}
	s.state.Store(&serveState{err: errors.New("no lease yet: claiming a node ID")})
	return s
}

// minting returns the state of a server that mints with gen, under lease.
func (s *idServer) minting(lease *nodeid.Lease, gen *snowflake.Generator) *serveState {
	return &serveState{gen: gen, hdr: newServeHeader(lease), ids: s.instr.leaseIDs(lease)}
}

var (
	textPlain = []string{"text/plain; charset=utf-8"}
	appJSON   = []string{"application/json"}
	allowGet  = []string{"GET"}
	allowRead = []string{"GET, HEAD"}
	noSniff   = []string{"nosniff"}
)

// Header names, canonical, so that they can be set without allocating.
const (
	hdrNode  = "X-Nodeid-Node"
	hdrEpoch = "X-Nodeid-Epoch"
	hdrOwner = "X-Nodeid-Owner"
)

// ServeHTTP answers a request, and records its duration with its method,
// route and status.
func (s *idServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	route, status := s.handle(w, r)
	s.instr.request(r.Method, route, status, time.Since(start))
}

// handle answers a request, and returns its route ("" for none) and the
// status of the answer.
func (s *idServer) handle(w http.ResponseWriter, r *http.Request) (route string, status int) {
	st := s.state.Load()
	h := w.Header()
	if st.hdr.node != nil {
		h[hdrNode], h[hdrEpoch], h[hdrOwner] = st.hdr.node, st.hdr.epoch, st.hdr.owner
	}
	asJSON := wantsJSON(r)
	switch route = r.URL.Path; route {
	case routeID, routeIDs:
		if r.Method != http.MethodGet {
			h["Allow"] = allowGet
			return route, s.fail(w, asJSON, http.StatusMethodNotAllowed, "method %s: %s takes GET only", cli.Printable(r.Method), route)
		}
		count := 1
		if route == routeIDs {
			var err error
			if count, err = parseCount(r); err != nil {
				return route, s.fail(w, asJSON, http.StatusBadRequest, "%v", err)
			}
		} else if r.URL.RawQuery != "" {
			return route, s.fail(w, asJSON, http.StatusBadRequest, "/id takes no query (/ids?count=N returns N IDs)")
		}
		return route, s.mint(w, st, count, route == routeIDs, asJSON)
	case routeHealthz, routeMetrics:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h["Allow"] = allowRead
			return route, s.fail(w, asJSON, http.StatusMethodNotAllowed, "method %s: %s takes GET or HEAD", cli.Printable(r.Method), route)
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.metrics.ServeHTTP(sw, r)
		return route, sw.status
	default:
		return "", s.fail(w, asJSON, http.StatusNotFound, "no such path %q: the paths are /id, /ids?count=N, /healthz and /metrics", cli.Printable(r.URL.Path))
	}
}

// wantsJSON reports whether the request asks for JSON.
func wantsJSON(r *http.Request) bool {
	a := r.Header["Accept"]
	return len(a) > 0 && strings.Contains(a[0], "application/json")
}

// parseCount reads the count of GET /ids: 1 to ServeMaxCount.
func parseCount(r *http.Request) (int, error) {
	q := r.URL.Query()
	for k := range q {
		if k != "count" {
			return 0, fmt.Errorf("unknown query parameter %q: /ids takes count=N only", cli.Printable(k))
		}
	}
	v, ok := q["count"]
	switch {
	case !ok:
		return 0, fmt.Errorf("/ids needs count=N, N from 1 to %d", ServeMaxCount)
	case len(v) > 1:
		return 0, errors.New("count is given more than once")
	}
	n := 0
	for _, c := range []byte(v[0]) {
		if c < '0' || c > '9' || n > ServeMaxCount {
			n = -1
			break
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > ServeMaxCount || len(v[0]) == 0 {
		return 0, fmt.Errorf("count %q: it must be a whole number from 1 to %d", cli.Printable(v[0]), ServeMaxCount)
	}
	return n, nil
}

// bufPool holds response buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64); return &b }}

// mint writes count IDs, or 503 if the generator refuses one: the IDs
// minted before the refusal are dropped (they are unique still). It
// returns the status of the answer, and counts the IDs it wrote.
func (s *idServer) mint(w http.ResponseWriter, st *serveState, count int, many, asJSON bool) int {
	if st.gen == nil {
		return s.fail(w, asJSON, http.StatusServiceUnavailable, "%v", st.err)
	}
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	switch {
	case asJSON && many:
		b = append(b, `{"ids":[`...)
	case asJSON:
		b = append(b, `{"id":`...)
	}
	for i := range count {
		id, err := st.gen.Generate()
		if err != nil {
			*bp = b
			bufPool.Put(bp)
			return s.fail(w, asJSON, http.StatusServiceUnavailable, "%v", err)
		}
		if asJSON {
			if i > 0 {
				b = append(b, ',')
			}
			if s.numbers {
				b = strconv.AppendInt(b, id.Int64(), 10)
			} else {
				b = append(b, '"')
				b = strconv.AppendInt(b, id.Int64(), 10)
				b = append(b, '"')
			}
		} else {
			b = strconv.AppendInt(b, id.Int64(), 10)
			b = append(b, '\n')
		}
	}
	h := w.Header()
	if asJSON {
		if many {
			b = append(b, ']')
		}
		b = append(b, st.hdr.json...)
		b = append(b, '\n')
		h["Content-Type"] = appJSON
	} else {
		h["Content-Type"] = textPlain
	}
	_, _ = w.Write(b)
	if cap(b) <= 1<<20 {
		*bp = b
		bufPool.Put(bp)
	}
	s.instr.served(count, st.ids)
	return http.StatusOK
}

// fail answers with status and a one-line reason, and returns status.
func (s *idServer) fail(w http.ResponseWriter, asJSON bool, status int, format string, args ...any) int {
	msg := strings.ReplaceAll(strings.TrimPrefix(fmt.Sprintf(format, args...), "nodeid: "), "\n", " ")
	h := w.Header()
	h["X-Content-Type-Options"] = noSniff
	if asJSON {
		h["Content-Type"] = appJSON
		w.WriteHeader(status)
		fmt.Fprintf(w, "{\"error\":%s}\n", jsonString(msg))
		return status
	}
	h["Content-Type"] = textPlain
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
	return status
}

// jsonString quotes s as a JSON string.
func jsonString(s string) []byte {
	b := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}
