package holder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// Metrics is the HTTP endpoint of "nodeid run --metrics-addr" and of
// "nodeid serve": the lease's metrics (the library's OpenTelemetry
// instruments, through the OpenTelemetry Prometheus exporter) and the
// process's, in Prometheus's text format on /metrics, and the lease's
// health on /healthz.
type Metrics struct {
	// Provider is the meter provider to give the Registry and the
	// generator (nodeid.WithMeterProvider).
	Provider *sdkmetric.MeterProvider
	// Addr is where StartMetrics serves.
	Addr net.Addr

	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	// health reports why the process is not healthy, or nil.
	health atomic.Pointer[func() error]
}

// StartMetrics listens on addr and serves until Close.
func StartMetrics(addr string) (*Metrics, error) {
	m, mux, err := NewMetrics()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = m.Provider.Shutdown(context.Background())
		return nil, cli.Usagef("--metrics-addr %s: %v", addr, err)
	}
	m.Addr = ln.Addr()
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(m.served)
		_ = m.srv.Serve(ln)
	}()
	return m, nil
}

// NewMetrics returns the metrics and their handler of /metrics and
// /healthz, not yet served: "nodeid serve" serves it beside its IDs.
func NewMetrics() (*Metrics, http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	m := &Metrics{
		Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		served:   make(chan struct{}),
	}
	noLease := func() error { return errors.New("no lease yet") }
	m.health.Store(&noLease)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", m.healthz)
	return m, mux, nil
}

// LeaseHealth is the health of a process under lease: it fails once the
// lease is lost or ended, and when its deadline is less than grace away
// (a renewal is overdue: the command is about to be stopped).
func LeaseHealth(lease *nodeid.Lease, grace time.Duration) func() error {
	return func() error {
		select {
		case <-lease.Done():
			return fmt.Errorf("lease of node ID %d lost: %w", lease.NodeID(), lease.Err())
		default:
		}
		if left := time.Until(lease.Deadline()); left < grace {
			return fmt.Errorf("lease of node ID %d: %s to its deadline, less than the grace %s", lease.NodeID(), left.Round(time.Millisecond), grace)
		}
		return nil
	}
}

// SetHealth makes /healthz report check's verdict.
func (m *Metrics) SetHealth(check func() error) { m.health.Store(&check) }

func (m *Metrics) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := (*m.health.Load())(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "unhealthy: %s\n", strings.TrimPrefix(err.Error(), "nodeid: "))
		return
	}
	fmt.Fprintln(w, "ok")
}

// Close stops serving, waits for the server, and stops the meter provider.
func (m *Metrics) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv != nil {
		_ = m.srv.Shutdown(ctx)
		<-m.served
	}
	_ = m.Provider.Shutdown(ctx)
}
