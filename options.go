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

	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// Limits and defaults of the options.
const (
	// DefaultTTL is the lease TTL when WithTTL is not given.
	DefaultTTL = time.Minute
	// MinTTL is the shortest TTL accepted: renewal runs every TTL/3, and a
	// shorter TTL would leave too little room for a round trip and a retry.
	MinTTL = 3 * time.Second
	// MaxTTL is the longest TTL accepted.
	MaxTTL = 24 * time.Hour
	// MaxOwnerLen is the longest owner accepted, in characters.
	MaxOwnerLen = 255
)

type config struct {
	ttl    time.Duration
	owner  string
	table  store.Config
	logger *slog.Logger
	create bool
	wait   bool
}

func defaultConfig() config {
	return config{
		ttl:    DefaultTTL,
		table:  store.DefaultConfig(),
		logger: slog.New(slog.DiscardHandler),
		create: true,
	}
}

// Option configures a Registry. Every option is validated by New, which
// returns an error wrapping ErrInvalidOption and naming the bad value.
type Option func(*config) error

// WithTTL sets how long a lease lasts in the database without renewal.
// Renewal runs every TTL/3. A shorter TTL frees a crashed process's node ID
// sooner but tolerates shorter database outages: a holder that cannot renew
// loses its lease (Lost closes) within the TTL. Default 1 minute; at least 3
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
// Registry: 1 to 255 characters of valid UTF-8 with no control characters.
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
	n := utf8.RuneCountInString(owner)
	switch {
	case owner == "":
		return invalid("owner is empty; it must be 1 to %d characters", MaxOwnerLen)
	case !utf8.ValidString(owner):
		return invalid("owner %q is not valid UTF-8", owner)
	case n > MaxOwnerLen:
		return invalid("owner is %d characters long; at most %d are allowed", n, MaxOwnerLen)
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

// WithNodeRange sets the node IDs this Registry leases, lo to hi inclusive.
// Two fleets can split one table's node space with disjoint ranges. Default
// 0 to 1023 (the 10 node bits of the default Snowflake layout); at most
// 0 to 1,048,575.
func WithNodeRange(lo, hi int64) Option {
	return func(c *config) error {
		if err := postgres.ValidateRange(lo, hi); err != nil {
			return invalid("%v", err)
		}
		c.table.MinNode, c.table.MaxNode = lo, hi
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
// they are missing (default true). Turn it off where a migration tool
// provisions them (see postgres.SchemaSQL) and the role has no CREATE
// privilege. Either way the first Acquire inserts any missing rows of the
// node range.
func WithCreateTable(create bool) Option {
	return func(c *config) error {
		c.create = create
		return nil
	}
}

// WithWait sets whether Acquire, when every node ID is held, waits for one
// to free up (polling with jittered backoff until its context ends) instead
// of returning ErrNoNodeIDAvailable at once. Default false.
func WithWait(wait bool) Option {
	return func(c *config) error {
		c.wait = wait
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
