package nodeid

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// Limits and defaults of the options.
const (
	// DefaultTTL is the lease TTL when WithTTL is not given.
	DefaultTTL = time.Minute
	// MinTTL is the shortest TTL accepted, of a lease and of a table's
	// maximum: renewal runs every TTL/3, and a shorter TTL would leave too
	// little room for a round trip and a retry.
	MinTTL = admin.MinTTL
	// MaxTTL is the longest TTL accepted. A table also records the longest
	// TTL its leases may take (postgres.Schema.MaxTTL).
	MaxTTL = admin.MaxTTL
	// MaxOwnerLen is the longest owner accepted, in bytes of UTF-8: the
	// table's check counts characters in the database's encoding, which
	// are never more.
	MaxOwnerLen = 255
	// DefaultNodeBits is the width of the node field of the default
	// Snowflake layout: node IDs 0 to 1023, a table's default range.
	DefaultNodeBits = admin.DefaultNodeBits
)

type config struct {
	ttl      time.Duration
	owner    string
	table    admin.Config // the range is the table's unless rangeSet
	rangeSet bool
	nodeBits int
	logger   *slog.Logger
	create   bool
	meters   metric.MeterProvider
}

func defaultConfig() config {
	return config{
		ttl:      DefaultTTL,
		table:    admin.DefaultConfig(),
		nodeBits: DefaultNodeBits,
		logger:   slog.New(slog.DiscardHandler),
		meters:   otel.GetMeterProvider(),
	}
}

// checkRange checks that node IDs lo to hi fit the node bits; whose says
// whose range it is.
func (c *config) checkRange(lo, hi int64, whose string) error {
	if hi >= 1<<c.nodeBits {
		return invalid("%s node range %d-%d does not fit %d node bits (node IDs 0-%d): IDs with the higher node IDs could not be minted; narrow the range, or pass WithNodeBits for a layout with more node bits",
			whose, lo, hi, c.nodeBits, int64(1)<<c.nodeBits-1)
	}
	return nil
}

// Option configures a Registry. Every option is validated by New, which
// returns an error wrapping ErrInvalidOption and naming the bad value.
type Option func(*config) error

// WithTTL sets how long a lease lasts in the database without renewal.
// Renewal runs every TTL/3. A shorter TTL frees a crashed process's node ID
// sooner but tolerates shorter database outages: a holder that cannot renew
// loses its lease (Done closes) within the TTL. Default 1 minute; at least 3
// seconds, at most 24 hours.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) error {
		if ttl < MinTTL || ttl > MaxTTL {
			return invalid("TTL %s is outside %s to %s", ttl, MinTTL, MaxTTL)
		}
		c.ttl = ttl
		return nil
	}
}

// WithOwner sets the name recorded as the holder of every lease of the
// Registry: 1 to 255 bytes of valid UTF-8 with no control characters.
// It is a label for operators, not an authenticated identity. Default: the
// host name, the process ID and a random suffix.
func WithOwner(owner string) Option {
	return func(c *config) error {
		if err := validOwner(owner); err != nil {
			return err
		}
		c.owner = owner
		return nil
	}
}

func validOwner(owner string) error {
	switch {
	case owner == "":
		return invalid("owner is empty; it must be 1 to %d bytes", MaxOwnerLen)
	case !utf8.ValidString(owner):
		return invalid("owner %q is not valid UTF-8", owner)
	case len(owner) > MaxOwnerLen:
		return invalid("owner is %d bytes long in UTF-8; at most %d are allowed", len(owner), MaxOwnerLen)
	}
	if i := strings.IndexFunc(owner, isControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(owner[i:])
		return invalid("owner %q contains the control character %U", owner, r)
	}
	return nil
}

// isControl reports control characters (C0, DEL, C1) and the Unicode
// formatting characters that reorder text, which owners must not contain.
func isControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// WithTable sets the lease table: a lowercase SQL identifier, optionally
// schema-qualified ("ids.snowflake_nodes"), at most 50 bytes without the
// schema. Names that would need quoting are rejected, never quoted. The
// history table is the same name with "_history" appended. Default
// "snowflake_nodes".
func WithTable(name string) Option {
	return func(c *config) error {
		if err := postgres.ValidateTable(name); err != nil {
			return invalid("%v", err)
		}
		c.table.Table = name
		return nil
	}
}

// WithNodeRange sets the node IDs this Registry leases, lo to hi inclusive:
// a part of the range the table records, which Acquire checks. Two fleets
// can split one table's node space with disjoint ranges. Default: the
// table's whole range (0 to 1023 for a table the Registry creates). The
// range must fit the node bits (WithNodeBits).
func WithNodeRange(lo, hi int64) Option {
	return func(c *config) error {
		if err := admin.ValidateRange(lo, hi); err != nil {
			return invalid("%v", err)
		}
		c.table.MinNode, c.table.MaxNode, c.rangeSet = lo, hi, true
		return nil
	}
}

// WithNodeBits sets the width of the node field of the IDs minted under the
// Registry's leases: a node range, the Registry's or the table's, that
// exceeds it is an error before any claim, rather than a generator that
// fails only on the replicas that drew a high node ID. Default 10, the
// default Snowflake layout's (snowflake.Layout.NodeBits); 1 to 20.
func WithNodeBits(bits int) Option {
	return func(c *config) error {
		if bits < 1 || bits > 20 {
			return invalid("node bits %d is outside 1 to 20", bits)
		}
		c.nodeBits = bits
		return nil
	}
}

// WithLogger sets the logger for renewals, retries and losses. Default: no
// logging; nil also means no logging.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
		return nil
	}
}

// WithCreateTable sets whether the first Acquire creates the tables when
// the lease table is missing, recording the Registry's node range (default
// 0 to 1023) and a maximum TTL of the larger of a minute and the Registry's
// TTL. Default false: a missing table is an error, so that a mistyped table
// name cannot start a second pool of the same node IDs. Provision the
// tables with "nodeid init" or the DDL of postgres.Schema.SQL, or turn this
// on where the application owns its schema. It never changes an existing
// table.
func WithCreateTable(create bool) Option {
	return func(c *config) error {
		c.create = create
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry MeterProvider the Registry
// records its metrics with, under the instrumentation scope
// "github.com/nodeid/nodeid". Default: the global one (otel.GetMeterProvider),
// which records nothing until the application installs a provider
// (otel.SetMeterProvider), and then records with it. nil is an error.
// Close unregisters the Registry's callback from the provider.
//
// The instruments, each with the attributes nodeid.table and
// nodeid.node_range (the node range, "lo-hi", absent from an Acquire that
// failed before the table's configuration was read):
//
//   - nodeid.lease.held (UpDownCounter, {lease}): leases held now.
//   - nodeid.lease.time_left (observable Gauge, s): for each held lease, the
//     time left until its local deadline, with nodeid.node_id: one series
//     per held lease, at most one per node ID of the range. It stays above
//     TTL·9/10 - TTL/3 less a round trip while renewals succeed.
//   - nodeid.lease.lost (Counter, {lease}): leases that ended, by
//     nodeid.cause: taken_over, expired (the database found the lease
//     expired), deadline (the local deadline passed without a renewal;
//     ErrExpired too), released, evicted, failover.
//   - nodeid.lease.renewals (Counter, {renewal}) and
//     nodeid.lease.renewal.duration (Histogram, s): renewal attempts, by
//     nodeid.outcome: renewed, retried (failed; another attempt follows
//     while the deadline allows), lost (the lease ended during the attempt).
//     An attempt cut short by Release is not counted.
//   - nodeid.acquire.duration (Histogram, s): Acquire calls, waiting
//     included, by nodeid.outcome: acquired, none_available, error.
//   - nodeid.acquire.waiting (UpDownCounter, {call}): Acquire calls waiting
//     now for a node ID to free up.
//   - nodeid.lease.ttl (observable Gauge, s): the TTL of each held lease,
//     with nodeid.node_id as nodeid.lease.time_left, so that the two
//     compare series by series.
//   - nodeid.range.size (observable Gauge, {node_id}): the number of node
//     IDs of the range, once the table's configuration was read.
//   - nodeid.quarantine.until (observable Gauge, s): the unix time at
//     which the quarantine that refused the latest claim ends (after a
//     failover, a move or a restore); 0 when none is in force, or once a
//     claim succeeded.
//
// The counters start at 0 for every cause and outcome, and the up-down
// counters at 0, once the table's configuration was read (the first
// Acquire), with the attributes of the measurements that follow: a query
// of the increase of a counter sees its first event.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return invalid("meter provider is nil")
		}
		c.meters = mp
		return nil
	}
}

// defaultOwner returns "host-pid-random", cut to MaxOwnerLen characters.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || validOwner(host) != nil {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	suffix := fmt.Sprintf("-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	if r := []rune(host); len(r)+len(suffix) > MaxOwnerLen {
		host = string(r[:MaxOwnerLen-len(suffix)])
	}
	return host + suffix
}
