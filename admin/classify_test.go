package admin

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// TestClassifyDenied: the object of a permission error is read from the
// server's message, and the privileges from the statement that failed.
func TestClassifyDenied(t *testing.T) {
	t.Parallel()
	denied := func(op, table, msg string) error {
		return &StatementError{Op: op, Table: table, Err: &pgconn.PgError{Severity: "ERROR", Code: pgerrcode.InsufficientPrivilege, Message: msg}}
	}
	for _, c := range []struct {
		err  error
		want Denial
		hint string
	}{
		{denied("claim", "ids.nodes", "permission denied for function nodes_claim"),
			Denial{Kind: "function", Object: "nodes_claim()", Privileges: []string{"EXECUTE"}},
			"the role needs EXECUTE on function nodes_claim(): nodeid init --grant ROLE grants a client what it needs (postgres.GrantSQL)"},
		{denied("renew", "nodes", "permission denied for function nodes_renew"),
			Denial{Kind: "function", Object: "nodes_renew()", Privileges: []string{"EXECUTE"}},
			"the role needs EXECUTE on function nodes_renew(): nodeid init --grant ROLE grants a client what it needs (postgres.GrantSQL)"},
		{denied("read configuration", "ids.nodes", "permission denied for table nodes_config"),
			Denial{Kind: "table", Object: "ids.nodes_config", Privileges: []string{"SELECT"}},
			"the role needs SELECT on table ids.nodes_config"},
		{denied("list", "nodes", "permission denied for table nodes_history"),
			Denial{Kind: "table", Object: "nodes_history"},
			"the role needs a privilege on table nodes_history"},
		{denied("check the server", "ids.nodes", "permission denied for function pg_control_system"),
			Denial{Kind: "function", Object: "pg_control_system()", Privileges: []string{"EXECUTE"}},
			"the role needs EXECUTE on function pg_control_system()"},
		{&StatementError{Op: "check the server", Table: "ids.nodes", Err: &WALError{err: &pgconn.PgError{Code: pgerrcode.InsufficientPrivilege, Message: "permission denied for function pg_walfile_name"}}},
			Denial{Kind: "function", Object: "pg_walfile_name()", Privileges: []string{"EXECUTE"}},
			"the role needs EXECUTE on function pg_walfile_name()"},
		{denied("list", "ids.nodes", "permission denied for schema ids"),
			Denial{Kind: "schema", Object: "ids", Privileges: []string{"USAGE"}},
			"the role needs USAGE on schema ids"},
		{denied("create", "ids.nodes", "permission denied for schema ids"),
			Denial{Kind: "schema", Object: "ids", Privileges: []string{"USAGE", "CREATE"}},
			"the role needs USAGE and CREATE on schema ids"},
		{denied("apply the schema", "ids.nodes", "must be owner of table nodes"),
			Denial{Kind: "table", Object: "ids.nodes", Owner: true},
			"it must run as the owner of table ids.nodes"},
		{denied("claim", "ids.nodes", "permission denied for table elsewhere"),
			Denial{Kind: "table", Object: "elsewhere"},
			"the role needs a privilege on table elsewhere"},
		{&StatementError{Op: "check schema", Table: "ids.nodes", Err: &privilegeError{kind: "table", table: "ids.nodes_history", privilege: "INSERT"}},
			Denial{Kind: "table", Object: "ids.nodes_history", Privileges: []string{"INSERT"}},
			"the role needs INSERT on table ids.nodes_history"},
	} {
		d, ok := Denied(c.err)
		if !ok || !reflect.DeepEqual(d, c.want) {
			t.Errorf("Denied(%v) = %+v, %v; want %+v", c.err, d, ok, c.want)
		}
		if msg := c.err.Error(); !strings.HasSuffix(msg, "("+c.hint+")") {
			t.Errorf("%v: want the advice %q", msg, c.hint)
		}
	}
	// A message it cannot read (a server speaking another language): the
	// grants of a client.
	err := denied("claim", "nodes", "keine Berechtigung für Tabelle nodes_history")
	if _, ok := Denied(err); ok {
		t.Errorf("Denied(%v) claims to know the object", err)
	}
	if !strings.Contains(err.Error(), "EXECUTE on the functions of nodes") || !strings.Contains(err.Error(), "--grant") {
		t.Errorf("%v: want the grants of a client", err)
	}
	if _, ok := Denied(&pgconn.PgError{Code: pgerrcode.UndefinedTable, Message: "permission denied for table x"}); ok {
		t.Error("an error of another SQLSTATE is not a denial")
	}
}

// roleSeq makes the names of the roles the tests create unique.
var roleSeq atomic.Int64

// TestPermissionDeniedNamesObject: on a real server, a role missing one
// grant at a time gets, from the statement that needs it, an error naming
// the object PostgreSQL refused and what that statement needs on it, and
// not the grants it has.
func TestPermissionDeniedNamesObject(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	admin, dsn := srv.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE SCHEMA ids")
	owner, err := New(admin, Config{Table: "ids.nodes", MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	role := fmt.Sprintf("nodeid_denied_%d_%d", os.Getpid(), roleSeq.Add(1))
	exec("CREATE ROLE " + role + " LOGIN PASSWORD 'pw'")
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.ExecContext(ctx, "DROP OWNED BY "+role)
		_ = srv.Exec(ctx, "postgres", "DROP ROLE IF EXISTS "+role)
	})
	grants, err := GrantSQL("ids.nodes", role, false)
	if err != nil {
		t.Fatal(err)
	}
	exec(grants)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw")
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	claim := func(st *Store) error {
		_, err := st.Claim(ctx, 0, 3, "app", 10*time.Second, 0)
		return err
	}
	readConfig := func(st *Store) error { _, err := st.ReadConfig(ctx); return err }
	for _, c := range []struct {
		revoke, grant string
		run           func(*Store) error
		says, advice  string
	}{
		{"REVOKE EXECUTE ON FUNCTION ids.nodes_claim(text, bigint, bigint, integer, integer, integer) FROM ROLE",
			"GRANT EXECUTE ON FUNCTION ids.nodes_claim(text, bigint, bigint, integer, integer, integer) TO ROLE", claim,
			"permission denied for function nodes_claim", "the role needs EXECUTE on function nodes_claim(): nodeid init --grant ROLE"},
		{"REVOKE SELECT ON ids.nodes_config FROM ROLE", "GRANT SELECT ON ids.nodes_config TO ROLE", readConfig,
			"permission denied for table nodes_config", "the role needs SELECT on table ids.nodes_config"},
		{"REVOKE USAGE ON SCHEMA ids FROM ROLE", "GRANT USAGE ON SCHEMA ids TO ROLE", readConfig,
			"permission denied for schema ids", "the role needs USAGE on schema ids"},
	} {
		exec(strings.ReplaceAll(c.revoke, "ROLE", role))
		st, err := New(db, Config{Table: "ids.nodes", MinNode: 0, MaxNode: 3})
		if err != nil {
			t.Fatal(err)
		}
		err = c.run(st)
		msg := fmt.Sprint(err)
		if SQLState(err) != pgerrcode.InsufficientPrivilege || !Fatal(err) || !strings.Contains(msg, c.says) || !strings.Contains(msg, c.advice) {
			t.Errorf("after %s: %v; want a Fatal 42501 saying %q and %q", c.revoke, err, c.says, c.advice)
		}
		if strings.Count(msg, "the role needs") != 1 {
			t.Errorf("after %s: %v; want one advice, not the grants the role has", c.revoke, err)
		}
		exec(strings.ReplaceAll(c.grant, "ROLE", role))
	}
	// With every grant back, the role claims.
	st, err := New(db, Config{Table: "ids.nodes", MinNode: 0, MaxNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := claim(st); err != nil {
		t.Errorf("with every grant: %v", err)
	}
}
