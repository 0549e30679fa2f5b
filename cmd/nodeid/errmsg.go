package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/pgerr"
	"github.com/nodeid/nodeid/internal/store"
	"github.com/nodeid/nodeid/postgres"
)

// describe turns an error of a command into the one-line message printed on
// stderr: what went wrong and, where the fix is known, how to fix it.
func (a *app) describe(err error) string {
	return "nodeid: " + oneLine(a.redact.String(strings.TrimPrefix(a.explain(err), "nodeid: ")))
}

func (a *app) explain(err error) string {
	var (
		ce  *pgconn.ConnectError
		pe  *pgconn.PgError
		te  *timeoutError
		tce *nodeid.TableConfigError
		we  *store.WALError
	)
	table := a.table
	code := pgerr.Code(err)
	switch {
	case errors.As(err, &ce) && errors.As(err, &te):
		return a.explainConnect(ce, code, fmt.Sprintf("%s (--timeout)", te.limit))
	case errors.As(err, &ce):
		return a.explainConnect(ce, code, "")
	case errors.As(err, &te):
		return te.Error()
	case errors.As(err, &tce):
		return explainTableConfig(tce)
	case errors.As(err, &we):
		return fmt.Sprintf("%v (table %s records asynchronous replication; if the database's failovers never lose an acknowledged commit, record that with \"nodeid init --table %s --replication sync\")",
			err, table, table)
	case code == pgerrcode.LockNotAvailable:
		return a.lockHolders(err)
	case errors.Is(err, postgres.ErrUnconfigured):
		return fmt.Sprintf("table %s has no recorded configuration, or one of an earlier version of nodeid: bring it up to date with \"nodeid init --table %s\" as the table's owner",
			table, table)
	case code == pgerrcode.UndefinedTable:
		return fmt.Sprintf("table %s does not exist in %s: create it with \"nodeid init --table %s\" (or apply the DDL of \"nodeid schema\"), or name the right table with --table",
			table, a.conn.where(), table)
	case code == pgerrcode.InvalidSchemaName:
		return fmt.Sprintf("the schema of table %s does not exist in %s: create the schema, or fix --table", table, a.conn.where())
	case code == pgerrcode.InsufficientPrivilege:
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		need := a.privileges
		if need == "" {
			need = "SELECT, INSERT and UPDATE on " + table + " and " + table + "_history"
		}
		return fmt.Sprintf("%s: the role %q needs %s; ask the table's owner to GRANT it", msg, a.user(), need)
	case code == pgerrcode.UndefinedColumn || code == pgerrcode.DatatypeMismatch:
		return fmt.Sprintf("table %s does not have the columns nodeid expects (%v): compare it with \"nodeid schema\"", table, rootMessage(err))
	case code == pgerrcode.ReadOnlySQLTransaction:
		return fmt.Sprintf("%s is read-only: point --dsn or DATABASE_URL at the primary", a.conn.where())
	case pgerr.Pooler(err):
		return fmt.Sprintf("%v: %s", rootMessage(err), pgerr.PoolerHint)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%v: the database did not answer in time", err)
	}
	return err.Error()
}

// explainTableConfig explains a run whose --range or --ttl asks for more
// than the table records, with the commands that change either side.
func explainTableConfig(e *nodeid.TableConfigError) string {
	if e.MinNode < e.TableMinNode || e.MaxNode > e.TableMaxNode {
		return fmt.Sprintf("node range %d-%d is not within the range %d-%d recorded by table %s: lease a part of the table's range with --range, or widen it with \"nodeid init --table %s --range %d-%d\" as the table's owner",
			e.MinNode, e.MaxNode, e.TableMinNode, e.TableMaxNode, e.Table, e.Table, e.MinNode, e.MaxNode)
	}
	return fmt.Sprintf("TTL %s is above the maximum %s recorded by table %s: lower --ttl, or raise the table's maximum with \"nodeid init --table %s --max-ttl %s\" as the table's owner",
		e.TTL, e.MaxTTL, e.Table, e.Table, e.TTL)
}

// explainConnect explains a failure to connect. timedOut is the limit that
// ended the attempt if --timeout did ("1s (--timeout)"), else "".
func (a *app) explainConnect(ce *pgconn.ConnectError, code, timedOut string) string {
	where := a.conn.where()
	switch code {
	case pgerrcode.InvalidPassword, pgerrcode.InvalidAuthorizationSpecification:
		return fmt.Sprintf("authentication failed for %s: check the password (in the DSN, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf", where)
	case pgerrcode.InvalidCatalogName:
		return fmt.Sprintf("%s does not exist: create it, or fix the database name in %s", where, a.connSource())
	}
	if timedOut == "" && pgconn.Timeout(ce) {
		timedOut = fmt.Sprintf("%s (connect_timeout)", ce.Config.ConnectTimeout)
	}
	var (
		de *net.DNSError
		oe *net.OpError
	)
	accepted := a.dialed.accepted()
	switch {
	case timedOut != "" && len(accepted) > 0:
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): the server at %s accepted the connection but did not answer within %s: check that it is PostgreSQL and that it is not stuck (a proxy or pooler with no server behind it does the same)",
			where, strings.Join(accepted, " and "), timedOut)
	case timedOut != "":
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): no server accepted the connection within %s: check that %s points at the server (--dsn, DATABASE_URL or PGHOST/PGPORT) and that no firewall drops the packets",
			where, timedOut, a.connSource())
	case errors.As(ce, &de):
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): cannot resolve host %s (%s): fix the host in %s",
			where, de.Name, de.Err, a.connSource())
	case errors.As(ce, &oe):
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): %v: check that the server is running and that %s points at it (--dsn, DATABASE_URL or PGHOST/PGPORT)",
			where, oe, a.connSource())
	}
	return fmt.Sprintf("cannot connect to PostgreSQL (%s): %v", where, rootMessage(ce))
}

func (a *app) connSource() string {
	if a.conn == nil {
		return "the connection settings"
	}
	return a.conn.source
}

func (a *app) user() string {
	if a.conn == nil {
		return ""
	}
	return a.conn.cfg.User
}

// rootMessage returns the message of the innermost error that says
// something: the server's message for a PostgreSQL error, else the last
// wrapped error's text.
func rootMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
