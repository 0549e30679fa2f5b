package admin

import (
	"context"
	"database/sql"
	"strings"
)

// newStore returns a Store whose reads in Go read the server's clock
// through clock, when it is not nil; installClock gives the table's
// functions the same clock. The tests give a server's clock an offset, or
// stop it, so: no setting a client can change moves the functions' clock.
func newStore(db *sql.DB, cfg Config, clock *strings.Replacer) (*Store, error) {
	st, err := New(db, cfg)
	if err != nil || clock == nil {
		return st, err
	}
	for _, q := range []*string{&st.readConfigSQL, &st.historySQL, &st.whoSQL, &st.listWatchedSQL, &st.listTrustedSQL} {
		*q = clock.Replace(*q)
	}
	return st, nil
}

// installClock remakes the functions of table on db with their clock read
// through clock: clock-shifted copies of the functions.
func installClock(ctx context.Context, db *sql.DB, table string, clock *strings.Replacer) error {
	fns, err := FunctionsSQL(table)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, clock.Replace(fns))
	return err
}
