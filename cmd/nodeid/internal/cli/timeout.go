package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeid/nodeid/postgres"
)

// DefaultTimeout is the default of --timeout.
const DefaultTimeout = 10 * time.Second

// inspectTimeout bounds the look-up, on another connection, of what a
// timed-out command's statements waited for, and their cancellation: a
// new connection to a loaded server may take a few seconds.
const inspectTimeout = 5 * time.Second

// Timed runs f, the database work of a command, within --timeout (no limit
// if it is 0). When the time is up, the statements of the command still
// running on the server are looked up on another connection, described and
// cancelled there, and only then is f's context cancelled; the error then
// says what the statements waited for (see timeoutError).
func (c *Conn) Timed(ctx context.Context, f func(context.Context) error) error {
	if c.timeout == 0 {
		return f(ctx)
	}
	if _, err := c.DB(); err != nil { // before the timer, which reads c.db
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fired := make(chan struct{})
	timer := time.AfterFunc(c.timeout, func() {
		defer close(fired)
		cancel(c.timedOut())
	})
	err := f(ctx)
	if timer.Stop() {
		return err // in time
	}
	<-fired // the timer's function may still be looking up the statements
	var te *timeoutError
	if err == nil || !errors.As(context.Cause(ctx), &te) {
		return err
	}
	te.err = err // the timer's function is done with it
	return te
}

// timeoutError is the error of a command whose --timeout passed: what its
// statements were waiting for, as the server said on another connection,
// and the error they ended with.
type timeoutError struct {
	cmd       string
	limit     time.Duration
	looked    bool   // the statements were looked up
	waits     []wait // the statements that were running
	cancelled bool   // and the server cancelled them
	err       error
}

func (e *timeoutError) Unwrap() error { return e.err }

func (e *timeoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gave up after %s (--timeout)", e.cmd, e.limit)
	switch {
	case len(e.waits) == 0 && e.looked:
		b.WriteString(": the database did not answer in time, and none of the command's statements is running on the server any more")
		return b.String()
	case len(e.waits) == 0:
		b.WriteString(": the database did not answer in time; the server may still run the statement")
		return b.String()
	}
	for i, w := range e.waits {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(w.String())
	}
	if e.cancelled {
		b.WriteString("; the statement was cancelled")
	} else {
		b.WriteString("; it could not be cancelled and may still complete")
	}
	if e.waits[0].isLock() {
		b.WriteString(": end the blocking transaction, or raise --timeout")
	} else {
		b.WriteString(": raise --timeout if the database is busy")
	}
	return b.String()
}

// wait is what a statement of the command was waiting for, from
// pg_stat_activity and pg_locks.
type wait struct {
	pid                int
	eventType, event   string // wait_event_type, wait_event: "" if none
	lockType, relation string // of the lock it requested, if any
	mode               string
	blockers           []blocker
}

// blocker is a process holding a lock a statement waits for.
type blocker struct {
	pid              int     // 0: a prepared transaction
	user, app, state string  // "" if the role may not see them
	xactAge          float64 // seconds since its transaction began; < 0 if unknown
	modes            string  // the modes it holds on the relation
}

func (w wait) isLock() bool { return w.eventType == "Lock" }

// String describes the wait: "it waited for an AccessShareLock on table
// snowflake_nodes (wait event Lock/relation), held in AccessExclusiveLock
// mode by process 4242 (user ...)".
func (w wait) String() string {
	if !w.isLock() {
		if w.eventType == "" {
			return fmt.Sprintf("its statement (server process %d) was still running, waiting for nothing", w.pid)
		}
		return fmt.Sprintf("its statement (server process %d) was waiting on %s/%s", w.pid, w.eventType, w.event)
	}
	var b strings.Builder
	b.WriteString("its statement (server process " + fmt.Sprint(w.pid) + ") waited for a lock")
	if w.mode != "" {
		b.WriteString(": " + w.mode)
	}
	switch {
	case w.relation != "":
		b.WriteString(" on table " + Printable(w.relation))
	case w.lockType == "transactionid" || w.lockType == "tuple":
		b.WriteString(" on a row that another transaction has changed or locked")
	}
	fmt.Fprintf(&b, " (wait event %s/%s)", w.eventType, w.event)
	for i, bl := range w.blockers {
		if i == 0 {
			b.WriteString(", held ")
		} else {
			b.WriteString(" and ")
		}
		b.WriteString(bl.String())
	}
	return b.String()
}

func (bl blocker) String() string {
	if bl.pid == 0 {
		return "by a prepared transaction (see pg_prepared_xacts)"
	}
	s := ""
	if bl.modes != "" {
		s = "in " + bl.modes + " mode "
	}
	s += fmt.Sprintf("by process %d", bl.pid)
	var about []string
	if bl.user != "" {
		about = append(about, "user "+quoted(bl.user))
	}
	if bl.app != "" {
		about = append(about, "application "+quoted(bl.app))
	}
	if bl.state != "" {
		about = append(about, bl.state)
	}
	if bl.xactAge >= 0 {
		about = append(about, "in a transaction begun "+Span(time.Duration(bl.xactAge*float64(time.Second)))+" ago")
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	return s
}

// quoted quotes s for a message, escaping what is not printable.
func quoted(s string) string { return fmt.Sprintf("%q", s) }

// timedOut runs when --timeout passes, while the command's statements may
// still wait on the server: it looks them up on another connection by the
// command's application_name, and cancels them, so that none completes
// after the command said it gave up.
func (c *Conn) timedOut() *timeoutError {
	te := &timeoutError{cmd: c.name, limit: c.timeout}
	if c.appName == "" || !c.connected.Load() {
		return te // not connected yet, or the statements cannot be told apart
	}
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	waits, err := c.waits(ctx)
	if err != nil {
		return te
	}
	te.looked, te.waits = true, waits
	if len(waits) > 0 {
		pids := make([]int32, len(waits))
		for i, w := range waits {
			pids[i] = int32(w.pid)
		}
		var n int
		err := c.db.QueryRowContext(ctx, cancelSQL, c.appName, pids).Scan(&n)
		te.cancelled = err == nil && n == len(waits)
	}
	return te
}

// waitsSQL lists the statements running in the server processes of the
// application $1 but the caller's, each with the lock it requested, if
// any, and one row per process holding a lock that blocks it.
const waitsSQL = `SELECT w.pid, COALESCE(w.wait_event_type, ''), COALESCE(w.wait_event, ''),
    COALESCE(l.locktype, ''), COALESCE(l.relation::regclass::text, ''), COALESCE(l.mode, ''),
    bp.pid, COALESCE(b.usename::text, ''), COALESCE(b.application_name, ''), COALESCE(b.state, ''),
    COALESCE(extract(epoch FROM now() - b.xact_start)::float8, -1), COALESCE(held.modes, '')
FROM pg_stat_activity AS w
LEFT JOIN LATERAL (SELECT locktype, relation, mode FROM pg_locks
    WHERE pid = w.pid AND NOT granted LIMIT 1) AS l ON true
LEFT JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid) ON true
LEFT JOIN pg_stat_activity AS b ON b.pid = bp.pid
LEFT JOIN LATERAL (SELECT string_agg(DISTINCT mode, ', ') AS modes FROM pg_locks
    WHERE pid = bp.pid AND granted AND relation = l.relation) AS held ON true
WHERE w.application_name = $1 AND w.pid <> pg_backend_pid() AND w.state = 'active'
ORDER BY w.pid, bp.pid`

// cancelSQL cancels the statements of the processes $2 that still belong
// to the application $1, and counts them.
const cancelSQL = `SELECT count(*) FROM pg_stat_activity
WHERE pid = ANY($2::integer[]) AND application_name = $1 AND pg_cancel_backend(pid)`

// waits returns what the command's statements are waiting for.
func (c *Conn) waits(ctx context.Context) ([]wait, error) {
	rows, err := c.db.QueryContext(ctx, waitsSQL, c.appName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []wait
	for rows.Next() {
		var (
			w  wait
			bl blocker
			bp *int
		)
		if err := rows.Scan(&w.pid, &w.eventType, &w.event, &w.lockType, &w.relation, &w.mode,
			&bp, &bl.user, &bl.app, &bl.state, &bl.xactAge, &bl.modes); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].pid != w.pid {
			out = append(out, w)
		}
		if bp != nil {
			bl.pid = *bp
			last := &out[len(out)-1]
			last.blockers = append(last.blockers, bl)
		}
	}
	return out, rows.Err()
}

// lockHolders describes the sessions that hold a lock on the lease table,
// for a statement that gave up waiting for one (SQLSTATE 55P03): the
// lease statements and the maintenance wait at most a second, so that a
// long transaction delays the maintenance, never the fleet behind it.
func (c *Conn) lockHolders(err error) string {
	msg := err.Error()
	if c == nil || c.db == nil {
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, qerr := c.db.QueryContext(ctx, `SELECT a.pid, COALESCE(a.usename, ''), COALESCE(a.application_name, ''), COALESCE(a.state, ''),
    COALESCE(extract(epoch FROM now() - a.xact_start)::float8, -1)
FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE l.granted AND l.relation IN (to_regclass($1), to_regclass($2)) AND a.pid <> pg_backend_pid()
GROUP BY 1, 2, 3, 4, 5 ORDER BY 1`, c.table, postgres.ConfigTable(c.table))
	if qerr != nil {
		return msg
	}
	defer rows.Close()
	var held []string
	for rows.Next() {
		var bl blocker
		if rows.Scan(&bl.pid, &bl.user, &bl.app, &bl.state, &bl.xactAge) == nil {
			held = append(held, bl.String())
		}
	}
	if len(held) == 0 {
		return msg
	}
	return msg + "; the table is locked " + strings.Join(held, " and ") + ": end that transaction, or try again when it has"
}
