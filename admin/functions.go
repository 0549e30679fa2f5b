package admin

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The SQL functions of a lease table, one file per family: the client's
// (lease.sql), the operator's (operator.sql), and what is done once they are
// made (install.sql). Their only placeholder is {t}, the lease table.
var (
	//go:embed sql/lease.sql
	leaseSQL string
	//go:embed sql/operator.sql
	operatorSQL string
	//go:embed sql/install.sql
	installSQL string
)

// placeholder matches what expandTable substitutes, and what it must not
// leave behind.
var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

// expandTable substitutes the validated table name for {t}, and fails on
// any other placeholder, so that no SQL runs half expanded.
func expandTable(text, table string) (string, error) { return expand(text, table) }

// expand substitutes the validated table name for {t} and each of the
// placeholder-value pairs, and fails on a placeholder it was not given: the
// one expander of the package's SQL.
func expand(text, table string, pairs ...string) (string, error) {
	if err := ValidateTable(table); err != nil {
		return "", err
	}
	known := append([]string{"{t}", table}, pairs...)
	blank := make([]string, len(known))
	for i := 0; i < len(known); i += 2 {
		blank[i] = known[i]
	}
	if bad := placeholder.FindString(strings.NewReplacer(blank...).Replace(text)); bad != "" {
		return "", fmt.Errorf("nodeid: the SQL text has the unknown placeholder %s", bad)
	}
	return strings.NewReplacer(known...).Replace(text), nil
}

// FunctionsSQL returns the DDL that makes (or remakes) the SQL functions
// of the lease table and revokes them from PUBLIC: part of Schema.SQL.
func FunctionsSQL(table string) (string, error) {
	return expandTable(leaseSQL+"\n"+operatorSQL+"\n"+installSQL, table)
}

// The functions a client role may run, and those an operator role may.
var (
	clientFunctions = []string{
		"_claim(text, bigint, bigint, integer, integer, integer)", "_renew(integer, text, bigint, bigint, bigint)",
		"_release(integer, text, bigint, bigint)", "_verify(integer, text, bigint)",
		// The first use of a table whose creation or raise is pending
		// confirms it once the standbys have it.
		"_mark()", "_standbys(text, text, text)", "_created(text, bigint)", "_raised(bigint, text, bigint)",
		// Whether the server tells its identity to the functions' owner
		// (CheckReplication).
		"_server()",
	}
	operatorFunctions = []string{"_evict(integer, bigint, bigint)", "_restored(bigint, bigint)", "_prune(bigint, boolean)"}
)

// GrantSQL returns the statements that give role what a client of the
// lease table needs: USAGE on its schema, EXECUTE on the client functions
// and SELECT on the three tables, and never INSERT, UPDATE, DELETE or
// TRUNCATE. With operator, EXECUTE on the operator functions too (evict,
// restored, prune).
func GrantSQL(table, role string, operator bool) (string, error) {
	if err := ValidateTable(table); err != nil {
		return "", err
	}
	if role == "" {
		return "", fmt.Errorf("role is empty: name the role to grant to")
	}
	r := pgx.Identifier{role}.Sanitize()
	var b strings.Builder
	// The table's schema, resolved as the table name is.
	fmt.Fprintf(&b, "DO $grant$ BEGIN EXECUTE format('GRANT USAGE ON SCHEMA %%I TO %%s', "+
		"(SELECT n.nspname FROM pg_class AS k JOIN pg_namespace AS n ON n.oid = k.relnamespace WHERE k.oid = '%s'::regclass), %s); END $grant$;\n",
		table, quoteLiteral(r))
	fns := clientFunctions
	if operator {
		fns = append(append([]string{}, fns...), operatorFunctions...)
	}
	for _, f := range fns {
		fmt.Fprintf(&b, "GRANT EXECUTE ON FUNCTION %s%s TO %s;\n", table, f, r)
	}
	fmt.Fprintf(&b, "GRANT SELECT ON %s, %s, %s TO %s;\n", table, HistoryTable(table), ConfigTable(table), r)
	return b.String(), nil
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings
// on, as since PostgreSQL 9.1).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
