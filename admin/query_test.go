package admin_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// connector opens pgx's database/sql connections, wrapped by wrap.
type connector struct {
	dsn   string
	wrap  func(*stdlib.Conn) driver.Conn
	opens atomic.Int32
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	dc, err := stdlib.GetDefaultDriver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	c.opens.Add(1)
	return c.wrap(dc.(*stdlib.Conn)), nil
}

func (c *connector) Driver() driver.Driver { return stdlib.GetDefaultDriver() }

// plainConn offers database/sql's interfaces of pgx's connection, but not
// pgx's own connection, as a driver other than pgx's would.
type plainConn struct {
	driver.Conn
	driver.QueryerContext
	driver.ExecerContext
}

// closingConn closes its pgx connection the first time the lease
// statements reach for it, as if it broke between the pool and the query.
type closingConn struct {
	pgxConn
	calls *atomic.Int32
}

// pgxConn is pgx's connection under another name, so that closingConn can
// embed it and still define Conn.
type pgxConn = *stdlib.Conn

func (c closingConn) Conn() *pgx.Conn {
	pc := c.pgxConn.Conn()
	if c.calls.Add(1) == 1 {
		pc.Close(context.Background())
	}
	return pc
}

func storeOn(t *testing.T, c *connector) *admin.Store {
	t.Helper()
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	s, err := admin.New(db, admin.Config{Table: postgres.DefaultTable, MinNode: 0, MaxNode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(t.Context(), time.Minute); err != nil {
		t.Fatal(err)
	}
	return s
}

// The lease statements run through pgx when the driver is pgx's, and through
// database/sql with any other driver, with the same results.
func TestLeaseStatementsThroughAnyDriver(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	for name, wrap := range map[string]func(*stdlib.Conn) driver.Conn{
		"pgx":   func(c *stdlib.Conn) driver.Conn { return c },
		"plain": func(c *stdlib.Conn) driver.Conn { return plainConn{c, c, c} },
	} {
		t.Run(name, func(t *testing.T) {
			s := storeOn(t, &connector{dsn: dsn, wrap: wrap})
			for _, q := range []string{
				"TRUNCATE snowflake_nodes_history",
				"UPDATE snowflake_nodes SET owner = '', epoch = 0, expires_at = '-infinity', horizon_ms = 0",
			} {
				if _, err := s.DB().ExecContext(t.Context(), q); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.Claim(t.Context(), s.Config().MinNode, s.Config().MaxNode, "a", time.Minute, 100)
			ok := c.OK
			if err != nil || !ok {
				t.Fatalf("claim: ok %v, %v", ok, err)
			}
			if c.NodeID != 0 || c.Epoch != 1 || c.Horizon != 100 || c.Expires.Sub(c.Now) != time.Minute {
				t.Fatalf("claim %+v, want node 0, epoch 1, horizon 100, expiry now + 1m", c)
			}
			o, err := s.Renew(t.Context(), c.Key, time.Minute, 200)
			if err != nil || !o.OK || o.Horizon != 200 || o.Epoch != 1 || o.Owner != "a" {
				t.Fatalf("renew: %+v, %v", o, err)
			}
			o, err = s.Renew(t.Context(), admin.Key{NodeID: 0, Owner: "b", Epoch: 1}, time.Minute, 300)
			if err != nil || o.OK || !o.Exists || o.Owner != "a" {
				t.Fatalf("renew by another owner: %+v, %v", o, err)
			}
			o, err = s.Release(t.Context(), c.Key, 150)
			if err != nil || !o.OK || o.Horizon != 150 {
				t.Fatalf("release: %+v, %v", o, err)
			}
			o, err = s.Release(t.Context(), admin.Key{NodeID: 5, Owner: "a", Epoch: 1}, admin.NoHorizon)
			if err != nil || o.Exists {
				t.Fatalf("release of a node ID without a row: %+v, %v", o, err)
			}
			rows, _, err := s.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].Owner != "" || rows[0].Epoch != 1 || rows[0].HorizonMs != 150 || !rows[0].ExpiresAt.IsZero() {
				t.Fatalf("rows after release: %+v", rows)
			}
		})
	}
}

// A pgx connection that fails before the statement is sent is dropped and
// the statement runs on another one, as database/sql does.
func TestLeaseStatementRetriedOnAnotherConnection(t *testing.T) {
	_, dsn := pgtest.NewDB(t)
	var calls atomic.Int32
	conn := &connector{dsn: dsn, wrap: func(c *stdlib.Conn) driver.Conn { return closingConn{c, &calls} }}
	s := storeOn(t, conn)
	before := conn.opens.Load()
	c, err := s.Claim(t.Context(), s.Config().MinNode, s.Config().MaxNode, "a", time.Minute, 0)
	ok := c.OK
	if err != nil || !ok {
		t.Fatalf("claim: ok %v, %v", ok, err)
	}
	if calls.Load() != 2 || conn.opens.Load() != before+1 {
		t.Fatalf("the claim reached for %d pgx connections and opened %d, want 2 and 1", calls.Load(), conn.opens.Load()-before)
	}
	if c.NodeID != 0 || c.Epoch != 1 {
		t.Fatalf("claim %+v, want node 0, epoch 1", c)
	}
}
