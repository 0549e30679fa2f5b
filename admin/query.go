package admin

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgxConn is what github.com/jackc/pgx/v5/stdlib's driver connection offers.
type pgxConn interface{ Conn() *pgx.Conn }

// queryRow runs the one-row statement q of a lease operation (claim, renew,
// release) and scans its row into dest; the error matches sql.ErrNoRows when
// it returns none. once marks a statement the Store runs once (below).
//
// On a pgx connection it runs the statement through pgx itself:
// database/sql starts a goroutine for every query whose context can be
// cancelled, to watch it, which every renewal and release pays (each is
// bounded by a deadline or a timeout). pgx watches the context without one,
// and answers cancellation the same way. Like database/sql, it tries again,
// on another connection, when the connection fails before the statement was
// sent; any other driver goes through database/sql.
//
// A statement run once (ClaimFirst's) is sent unprepared (pgx's exec mode:
// parsed, planned and run in one round trip) whatever the connection's
// default: prepared, it took a round trip more and stayed in the
// connection's statement cache, and in its server process, unused.
func (s *Store) queryRow(ctx context.Context, q string, once bool, args []any, dest ...any) error {
	pgxArgs := args
	if once {
		pgxArgs = append([]any{pgx.QueryExecModeExec}, args...)
	}
	var err error
	for range 2 {
		var c *sql.Conn
		if c, err = s.db.Conn(ctx); err != nil {
			return err
		}
		native, retry := false, false
		rawErr := c.Raw(func(dc any) error {
			pc, ok := dc.(pgxConn)
			if !ok {
				return nil
			}
			native = true
			err = pc.Conn().QueryRow(ctx, q, pgxArgs...).Scan(dest...)
			if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
				// Nothing reached the server: drop the connection and try
				// another one.
				retry = true
				return driver.ErrBadConn
			}
			return nil
		})
		switch {
		case !native && rawErr == nil:
			err = c.QueryRowContext(ctx, q, args...).Scan(dest...)
		case !native:
			err = rawErr
		}
		c.Close()
		if !retry {
			return err
		}
	}
	return err
}
