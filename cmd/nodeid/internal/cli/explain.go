package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/admin"
	"github.com/nodeid/nodeid/postgres"
)

// NeedsError is the failure of work that needs the privileges Need: a
// permission error met by it names them, so that the table's owner knows
// what to grant. Needs makes one.
type NeedsError struct {
	Need string // "SELECT on t and t_config"
	Err  error
}

func (e *NeedsError) Error() string { return e.Err.Error() }
func (e *NeedsError) Unwrap() error { return e.Err }

// Needs returns err, if not nil, as the failure of work that needs the
// privileges need.
func Needs(need string, err error) error {
	if err == nil {
		return nil
	}
	return &NeedsError{Need: need, Err: err}
}

// explainedError is an error with the message that explains it, made
// while the command's connection was still open.
type explainedError struct {
	msg string
	err error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }

// Describe turns an error into the one-line message printed on stderr:
// what went wrong and, where the fix is known, how to fix it; with every
// known password masked.
func (e *Env) Describe(err error) string { return e.describe(explain(nil, err)) }

func (e *Env) describe(msg string) string {
	return "nodeid: " + OneLine(e.Redact.String(strings.TrimPrefix(msg, "nodeid: ")))
}

// Describe is Env.Describe with what the connection knows: the server, the
// role, the table, and what holds a lock the command waited for.
func (c *Conn) Describe(err error) string { return c.env.describe(c.Explain(err)) }

// Explain says what went wrong and, where the fix is known, how to fix
// it, with what the connection knows, every known password masked: for
// messages that do not go through Describe (serve's answers over HTTP).
func (c *Conn) Explain(err error) string { return c.env.Redact.String(explain(c, err)) }

// explain explains err; c may be nil (no connection).
func explain(c *Conn, err error) string {
	var (
		xe  *explainedError
		ce  *pgconn.ConnectError
		te  *timeoutError
		tce *nodeid.TableConfigError
		we  *admin.WALError
	)
	table := ""
	if c != nil {
		table = c.table
	}
	code := admin.SQLState(err)
	switch {
	case errors.As(err, &xe):
		return xe.msg
	case errors.As(err, &ce) && errors.As(err, &te):
		return c.explainConnect(ce, code, fmt.Sprintf("%s (--timeout)", te.limit))
	case errors.As(err, &ce):
		return c.explainConnect(ce, code, "")
	case errors.As(err, &te):
		return te.Error()
	case errors.As(err, &tce):
		return c.explainTableConfig(tce)
	case errors.As(err, &we):
		return fmt.Sprintf("%v (table %s records asynchronous replication; if the database's failovers never lose an acknowledged commit, record that with \"%s\" as the table's owner)",
			err, table, c.Command("init", "--replication", "sync"))
	case code == pgerrcode.LockNotAvailable:
		return c.lockHolders(err)
	case (errors.Is(err, postgres.ErrUnconfigured) || code == pgerrcode.UndefinedTable || code == pgerrcode.UndefinedColumn || code == pgerrcode.DatatypeMismatch) && c.foreignTable(table):
		return fmt.Sprintf("table %s in %s is not a nodeid table: it exists, but has neither nodeid's configuration table %s, nor its history table, nor its columns; name nodeid's table with --table (\"nodeid list --table NAME\"), or create one under a name of its own with \"nodeid init --table NAME\"",
			table, c.Where(), postgres.ConfigTable(table))
	case errors.Is(err, postgres.ErrUnconfigured):
		return fmt.Sprintf("table %s has no recorded configuration, or one of an earlier version of nodeid: bring it up to date with \"%s\" as the table's owner",
			table, c.Command("init"))
	case code == pgerrcode.UndefinedTable:
		return fmt.Sprintf("table %s does not exist in %s: create it with \"%s\" (or apply the DDL of \"%s\"), or name the right table with --table",
			table, c.Where(), c.Command("init"), schemaCommand(table))
	case code == pgerrcode.InvalidSchemaName:
		return fmt.Sprintf("the schema of table %s does not exist in %s: create the schema, or fix --table", table, c.Where())
	case code == pgerrcode.InsufficientPrivilege:
		return c.explainDenied(err)
	case code == pgerrcode.UndefinedColumn || code == pgerrcode.DatatypeMismatch:
		return fmt.Sprintf("table %s does not have the columns nodeid expects (%v): compare it with \"%s\"", table, rootMessage(err), schemaCommand(table))
	case code == pgerrcode.ReadOnlySQLTransaction:
		return fmt.Sprintf("%s is read-only: point --dsn or DATABASE_URL at the primary", c.Where())
	case admin.Pooler(err):
		return fmt.Sprintf("%v: %s", rootMessage(err), admin.PoolerHint)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%v: the database did not answer in time", err)
	}
	return err.Error()
}

// explainDenied explains a permission error: what the statement was, the
// object the server refused, and the privilege the statement needs on it
// that the role lacks (the server is asked which of those it lacks); if
// the server's message does not name the object, what the command needs,
// as its NeedsError says.
func (c *Conn) explainDenied(err error) string {
	var (
		pe *pgconn.PgError
		se *admin.StatementError
		ne *NeedsError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &se) && errors.As(err, &pe):
		msg = fmt.Sprintf("%s on table %s: %s", se.Op, se.Table, pe.Message)
	case errors.As(err, &pe):
		msg = pe.Message
	case errors.As(err, &se): // without the advice its message adds
		msg = fmt.Sprintf("%s on table %s: %v", se.Op, se.Table, se.Err)
	}
	if d, ok := admin.Denied(err); ok && (d.Owner || len(d.Privileges) > 0) {
		who := "ask the table's owner to GRANT it"
		switch {
		case d.Owner:
			return fmt.Sprintf("%s: the role %q is not the owner of %s %s; run it as the owner", msg, c.user(), d.Kind, d.Object)
		case d.Kind == "table":
			d.Privileges = c.lacking(d.Object, d.Privileges)
			if c != nil && (d.Object == c.table || d.Object == postgres.HistoryTable(c.table) || d.Object == postgres.ConfigTable(c.table)) {
				who = grantHint
			}
		case d.Kind == "schema":
			who = "ask the schema's owner to GRANT it"
		case d.Kind == "function" && c != nil && strings.HasPrefix(d.Object, bareTable(c.table)+"_"):
			who = grantHint
		default:
			who = "ask a superuser (or its owner) to GRANT it"
		}
		return fmt.Sprintf("%s: the role %q needs %s; %s", msg, c.user(), d, who)
	}
	table := ""
	if c != nil {
		table = c.table
	}
	need := "EXECUTE on the functions of " + table + " and SELECT on it and " + postgres.HistoryTable(table)
	if errors.As(err, &ne) {
		need = ne.Need
	}
	return fmt.Sprintf("%s: the role %q needs %s; ask the table's owner to GRANT it", msg, c.user(), need)
}

// bareTable is table without its schema: the server names functions so.
func bareTable(table string) string {
	if _, bare, ok := strings.Cut(table, "."); ok {
		return bare
	}
	return table
}

// grantHint is the advice on a privilege of the lease tables or their
// functions.
const grantHint = "ask the table's owner to grant it: nodeid init --grant ROLE (a client's), --grant-operator ROLE (an operator's)"

// foreignTable reports whether table exists but is not nodeid's: the
// server knows the relation, and neither the configuration nor the history
// table of that name, nor a horizon_ms column in it (a table of an earlier
// version of nodeid has one). It reports false if it cannot tell.
func (c *Conn) foreignTable(table string) bool {
	if c == nil || c.db == nil || table == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var exists, nodeidLike bool
	err := c.db.QueryRowContext(ctx, `SELECT to_regclass($1::text) IS NOT NULL,
	to_regclass($2::text) IS NOT NULL OR to_regclass($3::text) IS NOT NULL
	OR EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1::text) AND attname = 'horizon_ms' AND NOT attisdropped)`,
		table, postgres.ConfigTable(table), postgres.HistoryTable(table)).Scan(&exists, &nodeidLike)
	return err == nil && exists && !nodeidLike
}

// lacking returns those of privileges that the role lacks on table, as the
// server says (has_table_privilege); all of them if it cannot tell, or if
// it says the role lacks none (the grant changed meanwhile).
func (c *Conn) lacking(table string, privileges []string) []string {
	if c == nil || c.db == nil {
		return privileges
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out []string
	for _, p := range privileges {
		var has bool
		if err := c.db.QueryRowContext(ctx, `SELECT has_table_privilege($1::text, $2::text)`, table, p).Scan(&has); err != nil {
			return privileges
		}
		if !has {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return privileges
	}
	return out
}

// explainTableConfig explains a run whose --range or --ttl asks for more
// than the table records, with the commands that change either side.
func (c *Conn) explainTableConfig(e *nodeid.TableConfigError) string {
	if e.MinNode < e.TableMinNode || e.MaxNode > e.TableMaxNode {
		return fmt.Sprintf("node range %d-%d is not within the range %d-%d recorded by table %s: lease a part of the table's range with --range, or widen it with \"%s\" as the table's owner",
			e.MinNode, e.MaxNode, e.TableMinNode, e.TableMaxNode, e.Table, c.commandOn(e.Table, "init", "--range", NodeRange{e.MinNode, e.MaxNode}.String()))
	}
	return fmt.Sprintf("TTL %s is above the maximum %s recorded by table %s: lower --ttl, or raise the table's maximum with \"%s\" as the table's owner",
		e.TTL, e.MaxTTL, e.Table, c.commandOn(e.Table, "init", "--max-ttl", e.TTL.String()))
}

// schemaCommand is the command that prints the DDL of table.
func schemaCommand(table string) string {
	return "nodeid schema --table " + ShellQuote(table)
}

// explainConnect explains a failure to connect. timedOut is the limit that
// ended the attempt if --timeout did ("1s (--timeout)"), else "".
func (c *Conn) explainConnect(ce *pgconn.ConnectError, code, timedOut string) string {
	where := c.Where()
	switch code {
	case pgerrcode.InvalidPassword, pgerrcode.InvalidAuthorizationSpecification:
		return fmt.Sprintf("authentication failed for %s: check the password (in the DSN, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf", where)
	case pgerrcode.InvalidCatalogName:
		return fmt.Sprintf("%s does not exist: create it, or fix the database name in %s", where, c.Source())
	}
	if timedOut == "" && pgconn.Timeout(ce) {
		timedOut = fmt.Sprintf("%s (connect_timeout)", ce.Config.ConnectTimeout)
	}
	var (
		de       *net.DNSError
		oe       *net.OpError
		accepted []string
	)
	if c != nil {
		accepted = c.dialed.accepted()
	}
	switch {
	case timedOut != "" && len(accepted) > 0:
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): the server at %s accepted the connection but did not answer within %s: check that it is PostgreSQL and that it is not stuck (a proxy or pooler with no server behind it does the same)",
			where, strings.Join(accepted, " and "), timedOut)
	case timedOut != "":
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): no server accepted the connection within %s: check that %s points at the server (--dsn, DATABASE_URL or PGHOST/PGPORT) and that no firewall drops the packets",
			where, timedOut, c.Source())
	case errors.As(ce, &de):
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): cannot resolve host %s (%s): fix the host in %s",
			where, de.Name, de.Err, c.Source())
	case errors.As(ce, &oe):
		return fmt.Sprintf("cannot connect to PostgreSQL (%s): %v: check that the server is running and that %s points at it (--dsn, DATABASE_URL or PGHOST/PGPORT)",
			where, oe, c.Source())
	}
	return fmt.Sprintf("cannot connect to PostgreSQL (%s): %v", where, rootMessage(ce))
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
