package nodeid

// Tests of the metrics: each instrument moves in the scenario that should
// move it, on the fake store where timing matters and against a real
// PostgreSQL otherwise, read with metrictest's recording MeterProvider.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/metrictest"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// metricNames are the instruments of a Registry.
var metricNames = []string{metricLeaseHeld, metricLeaseTimeLeft, metricLeaseLost, metricLeaseRenewals,
	metricLeaseRenewalDuration, metricAcquireDuration, metricAcquireWaiting, metricLeaseTTL, metricRangeSize,
	metricQuarantineUntil}

// wantSum fails the test unless the points of name that match the
// key-value pairs add up to want.
func wantSum(t *testing.T, ms map[string]metrictest.Metric, name string, want float64, match ...string) {
	t.Helper()
	if got := ms[name].Sum(match...); got != want {
		t.Errorf("%s%v = %v, want %v (points %v)", name, match, got, want, ms[name].Points)
	}
}

// A scenario that records every instrument of a Registry: the reader sees
// exactly the documented ones, with the documented kinds and units.
func TestMetricsAreTheDocumentedOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(0, 0)
		r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer r.Close()
		l := mustAcquire(t, r)
		waiting := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer waiting.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := waiting.Acquire(ctx); !errors.Is(err, ErrNoNodeIDAvailable) {
			t.Fatalf("waiting Acquire on a full range = %v", err)
		}
		time.Sleep(testTTL / 3) // one renewal
		synctest.Wait()
		seen := rd.Collect(t, scopeName)
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		for name, m := range rd.Collect(t, scopeName) {
			if _, ok := seen[name]; !ok {
				seen[name] = m
			}
		}

		docs := metrictest.CheckDocumented(t, "Registry", seen)
		for _, name := range metricNames {
			if _, ok := docs[name]; !ok {
				t.Errorf("instrument %s is not documented", name)
			}
		}
	})
}

// Renewals count their outcomes and durations; the time left is the local
// deadline less now; a deadline that passes is told from the database's
// expiry, though both are ErrExpired.
func TestMetricsRenewalsAndLocalDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(0, 0)
		st.latency = 100 * time.Millisecond
		r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer r.Close()
		l := mustAcquire(t, r)
		const failures = 4
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				if n <= failures {
					return admin.Outcome{}, errors.New("connection reset")
				}
				st.set(func() { st.renewHook = nil })
				return st.Renew(ctx, k, testTTL, 0)
			}
		})
		time.Sleep(testTTL * 6 / 10) // the failures and one success, as in TestRenewRetriesTransientErrors
		synctest.Wait()
		ms := rd.Collect(t, scopeName)
		scope := []string{attrTable, "snowflake_nodes", attrNodeRange, "0-0"}
		wantSum(t, ms, metricLeaseRenewals, failures, append(scope, attrOutcome, outcomeRetried)...)
		wantSum(t, ms, metricLeaseRenewals, 1, append(scope, attrOutcome, outcomeRenewed)...)
		wantSum(t, ms, metricLeaseRenewalDuration, failures+1, scope...)
		wantSum(t, ms, metricLeaseHeld, 1, scope...)
		left := ms[metricLeaseTimeLeft].Select(append(scope, attrNodeID, "0")...)
		if want := time.Until(l.Deadline()).Seconds(); len(left) != 1 || left[0].Value != want {
			t.Errorf("time left = %v, want one point of %v s", left, want)
		}
		// The failures came at once; the success took the store's latency.
		for outcome, want := range map[string]float64{outcomeRetried: 0, outcomeRenewed: st.latency.Seconds()} {
			if p := ms[metricLeaseRenewalDuration].Select(attrOutcome, outcome); len(p) != 1 || p[0].Sum != want {
				t.Errorf("renewal durations %s: %v, want %v s in all", outcome, p, want)
			}
		}

		// The database stops answering: the lease is lost at its deadline.
		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				<-ctx.Done()
				return admin.Outcome{}, ctx.Err()
			}
		})
		<-l.Done()
		synctest.Wait()
		if !errors.Is(l.Err(), ErrExpired) {
			t.Fatalf("Err = %v, want ErrExpired", l.Err())
		}
		ms = rd.Collect(t, scopeName)
		wantSum(t, ms, metricLeaseLost, 1, append(scope, attrCause, causeDeadline)...)
		wantSum(t, ms, metricLeaseLost, 1, scope...) // and no other cause
		wantSum(t, ms, metricLeaseRenewals, 1, append(scope, attrOutcome, outcomeLost)...)
		wantSum(t, ms, metricLeaseHeld, 0, scope...)
		if p := ms[metricLeaseTimeLeft].Points; len(p) != 0 {
			t.Errorf("time left of a lost lease: %v", p)
		}
	})
}

// A renewal that finds the lease gone counts the loss with the cause the
// row shows.
func TestMetricsLossCauses(t *testing.T) {
	for _, c := range []struct {
		cause string
		row   func(k admin.Key) admin.Outcome
	}{
		{admin.CauseTakenOver, func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: "other", Epoch: k.Epoch + 1}
		}},
		{admin.CauseEvicted, func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Epoch: k.Epoch, EndReason: "evicted"}
		}},
		{admin.CauseExpired, func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Owner: k.Owner, Epoch: k.Epoch}
		}},
		{admin.CauseFailover, func(k admin.Key) admin.Outcome {
			return admin.Outcome{Exists: true, Epoch: k.Epoch - 1, EndReason: "released"}
		}},
	} {
		t.Run(c.cause, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rd := metrictest.New()
				st := newFakeStore(0, 0)
				r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
				defer r.Close()
				l := mustAcquire(t, r)
				st.set(func() {
					st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
						o := c.row(k)
						o.Now = time.Now()
						return o, nil
					}
				})
				<-l.Done()
				synctest.Wait()
				ms := rd.Collect(t, scopeName)
				wantSum(t, ms, metricLeaseLost, 1, attrCause, c.cause)
				wantSum(t, ms, metricLeaseLost, 1)
				wantSum(t, ms, metricLeaseRenewals, 1, attrOutcome, outcomeLost)
				wantSum(t, ms, metricLeaseRenewals, 1)
				wantSum(t, ms, metricLeaseHeld, 0)
			})
		})
	}
}

// Acquire calls waiting for a node ID are counted while they wait; every
// Acquire's duration is recorded with its outcome.
func TestMetricsWaitingAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(0, 0)
		holder := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer holder.Close()
		plain := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer plain.Close()
		waiting := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer waiting.Close()
		held := mustAcquire(t, holder)
		if _, err := plain.TryAcquire(context.Background()); !errors.Is(err, ErrNoNodeIDAvailable) {
			t.Fatalf("Acquire on a full range = %v", err)
		}

		got := make(chan error, 1)
		start := time.Now()
		go func() {
			l, err := waiting.Acquire(context.Background())
			if err == nil {
				err = l.Release(context.Background())
			}
			got <- err
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait() // the Acquire is polling
		ms := rd.Collect(t, scopeName)
		wantSum(t, ms, metricAcquireWaiting, 1, attrTable, "snowflake_nodes", attrNodeRange, "0-0")
		unused(t, held)
		if err := held.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		waited := time.Since(start)
		ms = rd.Collect(t, scopeName)
		wantSum(t, ms, metricAcquireWaiting, 0)
		wantSum(t, ms, metricAcquireDuration, 2, attrOutcome, outcomeAcquired)
		wantSum(t, ms, metricAcquireDuration, 1, attrOutcome, outcomeNoneAvailable)
		wantSum(t, ms, metricAcquireDuration, 3)
		// The waiting Acquire's duration includes the wait: it fell in a
		// bucket above 10 s, which only it can have reached.
		if waited < 10*time.Second {
			t.Fatalf("the waiting Acquire returned after %s", waited)
		}
		wantSum(t, ms, metricLeaseLost, 2, attrCause, admin.CauseReleased)
	})
}

// countingProvider wraps a MeterProvider and counts the callbacks
// registered, unregistered and called.
type countingProvider struct {
	metric.MeterProvider
	registered, unregistered, calls atomic.Int64
}

func (p *countingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &countingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type countingMeter struct {
	metric.Meter
	p *countingProvider
}

func (m *countingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		m.p.calls.Add(1)
		return f(ctx, o)
	}, insts...)
	if err != nil {
		return nil, err
	}
	m.p.registered.Add(1)
	return &countingRegistration{Registration: reg, p: m.p}, nil
}

type countingRegistration struct {
	metric.Registration
	p *countingProvider
}

func (r *countingRegistration) Unregister() error {
	r.p.unregistered.Add(1)
	return r.Registration.Unregister()
}

// Close unregisters the callback of the time left: the provider no longer
// calls into a closed Registry.
func TestMetricsCallbackUnregisteredOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		p := &countingProvider{MeterProvider: rd.Provider}
		r := fakeRegistry(t, newFakeStore(0, 0), WithMeterProvider(p))
		mustAcquire(t, r)
		if ms := rd.Collect(t, scopeName); len(ms[metricLeaseTimeLeft].Points) != 1 || p.calls.Load() != 1 {
			t.Fatalf("before Close: time left %v, %d calls of the callback", ms[metricLeaseTimeLeft].Points, p.calls.Load())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		rd.Collect(t, scopeName)
		if p.calls.Load() != 1 {
			t.Errorf("the callback was called %d times after Close", p.calls.Load()-1)
		}
		_ = r.Close()
		if p.registered.Load() != 1 || p.unregistered.Load() != 1 {
			t.Errorf("%d callbacks registered, %d unregistered; want 1 and 1", p.registered.Load(), p.unregistered.Load())
		}
	})
}

func TestWithMeterProviderNil(t *testing.T) {
	r, err := New(&sql.DB{}, WithMeterProvider(nil))
	if r != nil || !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "meter provider is nil") {
		t.Fatalf("New(WithMeterProvider(nil)) = %v, %v; want ErrInvalidOption naming it", r, err)
	}
}

// globalReader installs, once per process, the global MeterProvider.
var globalReader = sync.OnceValue(func() *metrictest.Reader {
	rd := metrictest.New()
	otel.SetMeterProvider(rd.Provider)
	return rd
})

var globalRuns atomic.Int64

// Without WithMeterProvider a Registry records with the global provider,
// also one installed after the Registry was made (tested by the first run
// in a process; later runs find it installed).
func TestMetricsGlobalProviderByDefault(t *testing.T) {
	table := fmt.Sprintf("global_provider_%d", globalRuns.Add(1))
	r := fakeRegistry(t, newFakeStore(0, 0), WithTable(table))
	defer r.Close()
	rd := globalReader()
	l := mustAcquire(t, r)
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms := rd.Collect(t, scopeName)
	wantSum(t, ms, metricAcquireDuration, 1, attrTable, table, attrOutcome, outcomeAcquired)
	wantSum(t, ms, metricLeaseLost, 1, attrTable, table, attrCause, admin.CauseReleased)
}

// Against PostgreSQL: an acquire, a none-available, a failed Acquire, the
// time left of the held lease, and its release.
func TestMetricsAcquireAndReleaseOnPostgres(t *testing.T) {
	t.Parallel()
	db := connect(t, "direct").db
	ctx := testContext(t)
	rd := metrictest.New()
	const ttl = time.Minute
	r := newTestRegistry(t, db, WithNodeRange(5, 5), WithTTL(ttl), WithMeterProvider(rd.Provider))
	before := time.Now()
	l := acquire(t, r)
	other := newTestRegistry(t, db, WithNodeRange(5, 5), WithMeterProvider(rd.Provider))
	if _, err := other.TryAcquire(ctx); !errors.Is(err, ErrNoNodeIDAvailable) {
		t.Fatalf("second Acquire of node ID 5 = %v", err)
	}
	missing, err := New(db, WithTable("no_such_table"), WithMeterProvider(rd.Provider))
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	if _, err := missing.Acquire(ctx); err == nil {
		t.Fatal("Acquire on a missing table succeeded")
	}

	scope := []string{attrTable, "snowflake_nodes", attrNodeRange, "5-5"}
	most := time.Until(l.Deadline()).Seconds()
	ms := rd.Collect(t, scopeName)
	least := time.Until(l.Deadline()).Seconds()
	wantSum(t, ms, metricAcquireDuration, 1, append(scope, attrOutcome, outcomeAcquired)...)
	wantSum(t, ms, metricAcquireDuration, 1, append(scope, attrOutcome, outcomeNoneAvailable)...)
	failed := ms[metricAcquireDuration].Select(attrTable, "no_such_table", attrOutcome, outcomeError)
	if len(failed) != 1 || failed[0].Value != 1 {
		t.Errorf("failed Acquire: %v, want one", failed)
	} else if r, ok := failed[0].Attrs[attrNodeRange]; ok {
		t.Errorf("an Acquire that never read the table's range recorded range %q", r)
	}
	wantSum(t, ms, metricLeaseHeld, 1, scope...)
	left := ms[metricLeaseTimeLeft].Points
	if len(left) != 1 || left[0].Attrs[attrNodeID] != "5" || left[0].Value > most || left[0].Value < least {
		t.Errorf("time left = %v, want one point for node ID 5 within [%v, %v]", left, least, most)
	}
	if most > (ttl - ttl/10).Seconds() {
		t.Errorf("deadline %v s away, more than TTL - TTL/10 after a claim at most %s ago", most, time.Since(before))
	}

	unused(t, l)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ms = rd.Collect(t, scopeName)
	wantSum(t, ms, metricLeaseLost, 1, append(scope, attrCause, admin.CauseReleased)...)
	wantSum(t, ms, metricLeaseLost, 1)
	wantSum(t, ms, metricLeaseHeld, 0, scope...)
	if p := ms[metricLeaseTimeLeft].Points; len(p) != 0 {
		t.Errorf("time left after Release: %v", p)
	}
}

// expireRow makes the database find node's lease expired, and its horizon
// passed, as a forward step of its clock would.
func expireRow(t *testing.T, db *sql.DB, node int64) {
	t.Helper()
	if _, err := db.ExecContext(testContext(t), `UPDATE snowflake_nodes SET `+clockJump+` WHERE node_id = $1`, node); err != nil {
		t.Fatal(err)
	}
}

// Against PostgreSQL: a takeover, a lapse the database reports, and an
// operator's eviction each end the lease at its next renewal, counted with
// its cause.
func TestMetricsLossCausesOnPostgres(t *testing.T) {
	t.Parallel()
	// Long enough that the renewal after TTL/3 reports the cause well
	// before the local deadline, on a loaded machine too.
	const ttl = 15 * time.Second
	for _, c := range []struct {
		cause string
		want  error
		end   func(t *testing.T, ep endpoint, l *Lease)
	}{
		{admin.CauseEvicted, ErrEvicted, func(t *testing.T, ep endpoint, l *Lease) {
			st, err := admin.New(ep.db, admin.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := st.Evict(testContext(t), l.NodeID(), l.Epoch()); !ev.OK || err != nil {
				t.Fatalf("Evict = %+v, %v", ev, err)
			}
		}},
		{admin.CauseExpired, ErrExpired, func(t *testing.T, ep endpoint, l *Lease) {
			expireRow(t, ep.db, l.NodeID())
		}},
		{admin.CauseTakenOver, ErrTakenOver, nil}, // through a proxy, below
	} {
		t.Run(c.cause, func(t *testing.T) {
			t.Parallel()
			ep := connect(t, "direct")
			rd := metrictest.New()
			holderDB := ep.db
			var proxy *pgtest.Proxy
			if c.end == nil {
				// The holder reaches the database through a proxy, so that the
				// takeover cannot race its renewals.
				var err error
				if proxy, err = pgtest.NewProxy(ep.addr); err != nil {
					t.Fatal(err)
				}
				defer proxy.Close()
				if holderDB, err = sql.Open("pgx", pgtest.WithAddr(ep.dsn, proxy.Addr())); err != nil {
					t.Fatal(err)
				}
				defer holderDB.Close()
			}
			r := newTestRegistry(t, holderDB, WithNodeRange(2, 2), WithTTL(ttl), WithMeterProvider(rd.Provider), WithOwner("holder"))
			l := acquire(t, r)
			if c.end != nil {
				c.end(t, ep, l)
			} else {
				proxy.Blackhole()
				expireRow(t, ep.db, 2)
				newer := newTestRegistry(t, ep.db, WithNodeRange(2, 2), WithTTL(ttl), WithOwner("newer"))
				acquire(t, newer)
				proxy.Restore()
			}
			waitLost(t, l, 2*ttl) // the cause below says which end came first
			if !errors.Is(l.Err(), c.want) {
				t.Fatalf("Err = %v, want %v", l.Err(), c.want)
			}
			scope := []string{attrTable, "snowflake_nodes", attrNodeRange, "2-2"}
			ms := rd.Collect(t, scopeName)
			wantSum(t, ms, metricLeaseLost, 1, append(scope, attrCause, c.cause)...)
			wantSum(t, ms, metricLeaseLost, 1)
			wantSum(t, ms, metricLeaseRenewals, 1, append(scope, attrOutcome, outcomeLost)...)
			wantSum(t, ms, metricLeaseHeld, 0, scope...)
			for _, p := range ms[metricLeaseRenewals].Points {
				if o := p.Attrs[attrOutcome]; !slices.Contains([]string{outcomeLost, outcomeRetried, outcomeRenewed}, o) {
					t.Errorf("renewal outcome %q", o)
				}
			}
		})
	}
}

// The attributes of a lease's measurements are the documented ones and
// nothing that grows with the fleet: no owner, no node ID on counters or
// histograms.
func TestMetricsAttributesStayLowCardinality(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(0, 9)
		r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer r.Close()
		for range 5 {
			mustAcquire(t, r)
		}
		time.Sleep(testTTL / 2)
		synctest.Wait()
		ms := rd.Collect(t, scopeName)
		allowed := map[string][]string{
			metricLeaseTimeLeft:        {attrNodeID},
			metricLeaseTTL:             {attrNodeID},
			metricLeaseLost:            {attrCause},
			metricLeaseRenewals:        {attrOutcome},
			metricLeaseRenewalDuration: {attrOutcome},
			metricAcquireDuration:      {attrOutcome},
		}
		for name, m := range ms {
			for _, p := range m.Points {
				for k := range p.Attrs {
					if k != attrTable && k != attrNodeRange && !slices.Contains(allowed[name], k) {
						t.Errorf("%s has attribute %s=%s", name, k, p.Attrs[k])
					}
				}
			}
		}
		if got := len(ms[metricLeaseTimeLeft].Points); got != 5 {
			t.Errorf("%d time-left series for 5 leases", got)
		}
		var nodes []string
		for _, p := range ms[metricLeaseTimeLeft].Points {
			nodes = append(nodes, p.Attrs[attrNodeID])
		}
		slices.Sort(nodes)
		if want := []string{"0", "1", "2", "3", "4"}; !slices.Equal(nodes, want) {
			t.Errorf("time left for node IDs %v, want %v", nodes, want)
		}
		if got := len(ms[metricLeaseRenewals].Points); got != 3 {
			t.Errorf("renewals of 5 leases in %d series, want 3, one per outcome: %v", got, ms[metricLeaseRenewals].Points)
		}
		if got := len(ms[metricLeaseTTL].Points); got != 5 {
			t.Errorf("%d TTL series for 5 leases", got)
		}
		wantSum(t, ms, metricLeaseRenewals, 5, attrOutcome, outcomeRenewed)
		wantSum(t, ms, metricLeaseHeld, 5, attrNodeRange, "0-9")
	})
}

// points returns the points of m as their attributes, each with its value
// under the key "=".
func points(m metrictest.Metric) []map[string]string {
	var out []map[string]string
	for _, p := range m.Points {
		a := maps.Clone(p.Attrs)
		a["="] = strconv.FormatFloat(p.Value, 'g', -1, 64)
		out = append(out, a)
	}
	return out
}

// wantPoints fails the test unless the points of name are exactly those of
// want: for each value of key, one point with the attributes of scope and
// key=value, of the value want gives it.
func wantPoints(t *testing.T, ms map[string]metrictest.Metric, name string, scope map[string]string, key string, want map[string]float64) {
	t.Helper()
	var wants []map[string]string
	for v, n := range want {
		a := maps.Clone(scope)
		a[key] = v
		a["="] = strconv.FormatFloat(n, 'g', -1, 64)
		wants = append(wants, a)
	}
	got := points(ms[name])
	byText := func(a, b map[string]string) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	slices.SortFunc(got, byText)
	slices.SortFunc(wants, byText)
	if !slices.EqualFunc(got, wants, maps.Equal) {
		t.Errorf("%s: points\n%v\nwant\n%v", name, got, wants)
	}
}

// Once the first Acquire has read the table's range, every cause of a
// loss and every outcome of a renewal has a series at 0, with the
// attributes of the measurements that follow: a loss then adds to a series
// that was there, and makes none.
func TestMetricsCountersStartAtZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(3, 4)
		r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer r.Close()
		if ms := rd.Collect(t, scopeName); len(ms[metricLeaseLost].Points)+len(ms[metricLeaseRenewals].Points) != 0 {
			t.Fatalf("counted before the range was known: %v, %v", ms[metricLeaseLost].Points, ms[metricLeaseRenewals].Points)
		}
		l := mustAcquire(t, r)
		scope := map[string]string{attrTable: "snowflake_nodes", attrNodeRange: "3-4"}
		causes := map[string]float64{admin.CauseTakenOver: 0, admin.CauseExpired: 0, "deadline": 0,
			admin.CauseReleased: 0, admin.CauseEvicted: 0, admin.CauseFailover: 0}
		outcomes := map[string]float64{"renewed": 0, "retried": 0, "lost": 0}
		ms := rd.Collect(t, scopeName)
		wantPoints(t, ms, metricLeaseLost, scope, attrCause, causes)
		wantPoints(t, ms, metricLeaseRenewals, scope, attrOutcome, outcomes)
		wantSum(t, ms, metricAcquireWaiting, 0, attrTable, "snowflake_nodes", attrNodeRange, "3-4")
		if p := ms[metricAcquireWaiting].Points; len(p) != 1 {
			t.Errorf("waiting: %v, want one point at 0", p)
		}

		st.set(func() {
			st.renewHook = func(ctx context.Context, k admin.Key, n int) (admin.Outcome, error) {
				return admin.Outcome{Exists: true, Owner: "other", Epoch: k.Epoch + 1, Now: time.Now()}, nil
			}
		})
		<-l.Done()
		synctest.Wait()
		causes[admin.CauseTakenOver], outcomes["lost"] = 1, 1
		ms = rd.Collect(t, scopeName)
		wantPoints(t, ms, metricLeaseLost, scope, attrCause, causes)
		wantPoints(t, ms, metricLeaseRenewals, scope, attrOutcome, outcomes)
	})
}

// The gauges: the TTL of each held lease, on the series of its time left;
// the size of the range; and the end of the quarantine that refused the
// latest claim, 0 once it has passed or a claim succeeded.
func TestMetricsGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd := metrictest.New()
		st := newFakeStore(0, 1)
		r := fakeRegistry(t, st, WithMeterProvider(rd.Provider))
		defer r.Close()
		scope := []string{attrTable, "snowflake_nodes", attrNodeRange, "0-1"}
		quarantined := func(until time.Time) {
			t.Helper()
			st.set(func() { st.quarantine = until })
			_, err := r.TryAcquire(context.Background())
			var ue *UnavailableError
			if !errors.As(err, &ue) || ue.Why != "quarantine" {
				t.Fatalf("TryAcquire in a quarantine = %v", err)
			}
		}
		wantQuarantine := func(want float64) {
			t.Helper()
			ms := rd.Collect(t, scopeName)
			if p := ms[metricQuarantineUntil].Select(scope...); len(p) != 1 || p[0].Value != want || len(p[0].Attrs) != 2 {
				t.Errorf("quarantine until = %v, want one point of %v", p, want)
			}
		}

		until := time.Now().Add(10 * time.Second)
		quarantined(until)
		wantQuarantine(float64(until.UnixMilli()) / 1000)
		ms := rd.Collect(t, scopeName)
		if p := ms[metricRangeSize].Select(scope...); len(p) != 1 || p[0].Value != 2 {
			t.Errorf("range size = %v, want one point of 2", p)
		}
		time.Sleep(10 * time.Second) // the quarantine ends
		wantQuarantine(0)

		quarantined(time.Now().Add(time.Hour))
		wantQuarantine(float64(time.Now().Add(time.Hour).UnixMilli()) / 1000)
		st.set(func() { st.quarantine = time.Time{} }) // lifted, as far as the Registry knows, by a claim
		l := mustAcquire(t, r)
		wantQuarantine(0)

		ms = rd.Collect(t, scopeName)
		ttl, left := ms[metricLeaseTTL].Points, ms[metricLeaseTimeLeft].Points
		if len(ttl) != 1 || ttl[0].Value != testTTL.Seconds() || len(left) != 1 || !maps.Equal(ttl[0].Attrs, left[0].Attrs) ||
			ttl[0].Attrs[attrNodeID] != strconv.FormatInt(l.NodeID(), 10) {
			t.Errorf("TTL %v and time left %v: want one point each, of %v s, on the same attributes", ttl, left, testTTL.Seconds())
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p := rd.Collect(t, scopeName)[metricLeaseTTL].Points; len(p) != 0 {
			t.Errorf("TTL of a released lease: %v", p)
		}
	})
}

// Against PostgreSQL: a claim refused by the quarantine of a new
// generation (as a failover begins one; set by hand here) sets the
// quarantine's end, to the millisecond the table records; a claim after it
// sets 0.
func TestMetricsQuarantineOnPostgres(t *testing.T) {
	t.Parallel()
	db := connect(t, "direct").db
	ctx := testContext(t)
	rd := metrictest.New()
	r := newTestRegistry(t, db, WithNodeRange(6, 6), WithMeterProvider(rd.Provider))
	l := acquire(t, r)
	if err := l.ReleaseStamped(ctx, l.PreviousHorizon()); err != nil { // claimable again at once
		t.Fatal(err)
	}
	var quarantineUntil int64
	if err := db.QueryRowContext(ctx, `UPDATE snowflake_nodes_config SET generation = generation + 1, generation_at = now(),
		quarantine_until_ms = (extract(epoch FROM now()) * 1000)::bigint + 600000 RETURNING quarantine_until_ms`).Scan(&quarantineUntil); err != nil {
		t.Fatal(err)
	}
	var ue *UnavailableError
	if _, err := r.TryAcquire(ctx); !errors.As(err, &ue) || ue.Why != "quarantine" {
		t.Fatalf("TryAcquire in a quarantine = %v", err)
	}
	scope := []string{attrTable, "snowflake_nodes", attrNodeRange, "6-6"}
	wantSum(t, rd.Collect(t, scopeName), metricQuarantineUntil, float64(quarantineUntil)/1000, scope...)
	if _, err := db.ExecContext(ctx, `UPDATE snowflake_nodes_config SET quarantine_until_ms = quarantine_until_ms - 1200000`); err != nil {
		t.Fatal(err)
	}
	l = acquire(t, r)
	unused(t, l)
	ms := rd.Collect(t, scopeName)
	wantSum(t, ms, metricQuarantineUntil, 0, scope...)
	wantSum(t, ms, metricLeaseTTL, DefaultTTL.Seconds(), append(scope, attrNodeID, "6")...)
	wantSum(t, ms, metricRangeSize, 1, scope...)
}
