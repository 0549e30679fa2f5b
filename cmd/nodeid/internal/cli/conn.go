package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/snowflake"
)

// EnvDatabaseURL names the environment variable read when --dsn is not set.
const EnvDatabaseURL = "DATABASE_URL"

// defaultConnectTimeout bounds connecting when the connection string sets
// no connect_timeout (PGCONNECT_TIMEOUT).
const defaultConnectTimeout = 10 * time.Second

// Conn is one command's connection to the database: where the global flags
// point it, the handle its statements run on (opened at the first
// statement, closed when the command ends) and what it learnt of the
// server, for its error messages. Action makes one per command; a command
// that never reaches the database never connects.
type Conn struct {
	env     *Env
	name    string        // the command's name
	table   string        // --table
	dsn     string        // --dsn
	timeout time.Duration // --timeout

	conn *connection // once the connection settings were parsed
	db   *sql.DB
	// appName is the application_name of the command's connections, by
	// which a timed-out command finds its statements on the server; "" if
	// the connection settings name one.
	appName   string
	connected atomic.Bool // a connection to the server was established
	dialed    dialLog     // where TCP connections were accepted
}

// NewConn returns the connection of cmd, from the global flags it sees;
// nothing is connected until its first statement.
func NewConn(env *Env, cmd *cobra.Command) *Conn {
	dsn, table, timeout := globals(cmd)
	return &Conn{env: env, name: cmd.Name(), table: table, dsn: dsn, timeout: timeout}
}

// Table returns the lease table the command works on.
func (c *Conn) Table() string { return c.table }

// SetTable makes the command work on table instead of --table's; before
// its first statement.
func (c *Conn) SetTable(table string) { c.table = table }

// SetDSN makes the command connect with dsn, as if given by --dsn; before
// its first statement, or after Reopen.
func (c *Conn) SetDSN(dsn string) { c.dsn = dsn }

// connection is where the command connects, and how it was told.
type connection struct {
	cfg    *pgx.ConnConfig
	source string // "--dsn", "DATABASE_URL" or "the libpq environment"
}

// DSNSource returns the connection string and where it came from: --dsn,
// else DATABASE_URL, else "" (the libpq environment variables PGHOST,
// PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ... and their defaults).
func (c *Conn) DSNSource() (dsn, source string) {
	switch {
	case c.dsn != "":
		return c.dsn, "--dsn"
	case c.env.Getenv(EnvDatabaseURL) != "":
		return c.env.Getenv(EnvDatabaseURL), EnvDatabaseURL
	}
	return "", "the libpq environment (PGHOST, PGUSER, ...)"
}

// Config parses the connection settings, and keeps them for the command's
// messages. Statements are sent in pgx's exec mode: unnamed prepared
// statements only, so that the command works through PgBouncer and other
// poolers in transaction mode.
func (c *Conn) Config() (*pgx.ConnConfig, error) {
	dsn, source := c.DSNSource()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// The connection string is not printed, nor any part of the
		// parser's message that quotes it: a string the parser cannot read
		// whole may hold a password anywhere ("password=top secret" hides
		// "secret" after the first word, which masking "password=..." would
		// show), and no masking can know where. Printing none of it is the
		// safe choice; the parser's own words on what is wrong, and where
		// the string came from, are enough to find the fault.
		return nil, Usagef("bad connection string in %s (not shown: a password may be anywhere in a string that cannot be read whole): %s; write it as a URL (postgres://USER@HOST:PORT/DATABASE) or as key=value pairs (host=HOST dbname=DATABASE, a value with spaces in single quotes)",
			source, parseFault(err))
	}
	c.env.Redact.AddDSN(dsn)
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		// Unique, so that a timed-out command finds its own statements.
		c.appName = fmt.Sprintf("%s (pid %d, %08x)", strings.TrimSpace("nodeid "+c.name), os.Getpid(), rand.Uint32())
		cfg.RuntimeParams["application_name"] = c.appName
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			c.dialed.add(addr)
		}
		return conn, err
	}
	c.conn = &connection{cfg: cfg, source: source}
	return cfg, nil
}

// parseFault returns what pgx says is wrong with a connection string it
// cannot parse, without the string: its fixed phrase ("failed to parse as
// keyword/value", "invalid port"), cut before any value it quotes, and the
// detail under it if that quotes nothing (`missing "=" after "secret"`
// quotes a word of the string, so it goes).
func parseFault(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "it cannot be parsed"
	}
	msg := pe.Error() // cannot parse `STRING`: PHRASE (DETAIL)
	detail := ""
	if inner := errors.Unwrap(pe); inner != nil {
		detail = inner.Error()
		msg = strings.TrimSuffix(msg, " ("+detail+")")
	}
	i := strings.LastIndex(msg, "`: ")
	if i < 0 {
		return "it cannot be parsed"
	}
	fault := quotesNothing(msg[i+len("`: "):])
	if fault == "" {
		fault = "it cannot be parsed"
	}
	if d := quotesNothing(detail); d != "" && d == detail {
		fault += " (" + d + ")"
	}
	return fault
}

// quotesNothing returns s up to the first quote, backtick or ": " (before
// which pgx's messages name what they go on to quote).
func quotesNothing(s string) string {
	if i := strings.IndexAny(s, "\"'`"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ": "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// dialLog records the addresses at which a TCP (or Unix) connection was
// accepted, to tell a server that is not there from one that does not
// answer.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) add(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.addrs, addr) {
		d.addrs = append(d.addrs, addr)
	}
}

// accepted returns the addresses that accepted a connection.
func (d *dialLog) accepted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

// DB returns the database handle the command's statements run on, opened
// on first use and closed when the command ends. It does not connect: the
// first statement does.
func (c *Conn) DB() (*sql.DB, error) {
	if c.db != nil {
		return c.db, nil
	}
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	c.db = stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(context.Context, *pgx.Conn) error {
		c.connected.Store(true)
		return nil
	}))
	c.db.SetMaxOpenConns(4)
	return c.db, nil
}

// Reopen closes the handle, if open: the next statement connects anew,
// with the connection string of then (see SetDSN).
func (c *Conn) Reopen() {
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

// Close closes the handle, if open.
func (c *Conn) Close() { c.Reopen() }

// Store returns a Store on the command's table for the node range r.
func (c *Conn) Store(r NodeRange) (*admin.Store, error) {
	db, err := c.DB()
	if err != nil {
		return nil, err
	}
	st, err := admin.New(db, admin.Config{Table: c.table, MinNode: r.Lo, MaxNode: r.Hi})
	return st, Usage(err)
}

// NodeRow returns the store of a single node ID, its row and the server's
// time. When the table has no such row, the error names the table's range,
// and advise adds the command that adds it (on this command's table and
// database) and what else that command changes.
func (c *Conn) NodeRow(ctx context.Context, node int64, advise bool) (*admin.Store, admin.Row, time.Time, error) {
	st, err := c.Store(NodeRange{node, node})
	if err != nil {
		return nil, admin.Row{}, time.Time{}, err
	}
	rows, now, err := st.List(ctx)
	if err != nil {
		return nil, admin.Row{}, time.Time{}, err
	}
	if len(rows) == 0 {
		missing := ""
		if advise {
			missing = c.addNode(ctx, st, node)
		} else if tc, err := st.ReadConfig(ctx); err == nil {
			missing = fmt.Sprintf(", whose range is %d-%d", tc.MinNode, tc.MaxNode)
		}
		return nil, admin.Row{}, time.Time{}, fmt.Errorf("node ID %d is not in table %s%s", node, c.table, missing)
	}
	return st, rows[0], now, nil
}

// addNode says how to add node to the table, which has no row for it,
// with a command that init accepts: a node ID beyond the default layout's
// node bits needs the layout's (--node-bits).
func (c *Conn) addNode(ctx context.Context, st *admin.Store, node int64) string {
	one := NodeRange{node, node}
	tc, err := st.ReadConfig(ctx)
	switch {
	case err != nil:
		return fmt.Sprintf(": \"%s\" adds it", c.Command("init", initRange(one)...))
	case node >= tc.MinNode && node <= tc.MaxNode:
		return fmt.Sprintf(", although its range %d-%d holds it (its row was deleted): \"%s\" adds the missing rows of the range",
			tc.MinNode, tc.MaxNode, c.Command("init"))
	}
	wide := NodeRange{min(node, tc.MinNode), max(node, tc.MaxNode)}
	return fmt.Sprintf(", whose range is %d-%d: \"%s\" widens the range to %s, adding %d rows",
		tc.MinNode, tc.MaxNode, c.Command("init", initRange(one)...), wide, wide.Size()-(tc.MaxNode-tc.MinNode+1))
}

// initRange returns the flags of init that add the range r to a table:
// --range, and --node-bits where r goes beyond the default layout's node
// bits (init refuses such a range without them).
func initRange(r NodeRange) []string {
	flags := []string{"--range", r.String()}
	if r.Hi > MaxNodeOf(int(snowflake.DefaultLayout.NodeBits)) {
		flags = append(flags, "--node-bits", strconv.Itoa(bitsFor(r.Hi)))
	}
	return flags
}

// Where describes the server and database of the connection for messages.
func (c *Conn) Where() string {
	if c == nil || c.conn == nil {
		return "the database"
	}
	cfg := c.conn.cfg
	return fmt.Sprintf("database %q on %s:%d as user %q", cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// Source says where the connection settings came from: "--dsn",
// "DATABASE_URL", the libpq environment, or "the connection settings"
// before they were read.
func (c *Conn) Source() string {
	if c == nil || c.conn == nil {
		return "the connection settings"
	}
	return c.conn.source
}

// user returns the role the command connects as, "" before the settings
// were read.
func (c *Conn) user() string {
	if c == nil || c.conn == nil {
		return ""
	}
	return c.conn.cfg.User
}
