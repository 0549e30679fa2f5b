// Package javatest tests the Java client of clients/java against real
// PostgreSQL servers and PgBouncer, beside the Go library: it compiles the
// client with javac against the PostgreSQL JDBC driver
// (/usr/share/java/postgresql.jar, Debian's libpostgresql-jdbc-java), runs
// its unit tests, a conformance test against the Go library, and a chaos
// test of real JVM processes and Go holders on one table.
//
// Without javac, java or the driver the tests skip, unless CI=true or
// NODEID_TEST_REQUIRE_DB=1, which make that a failure. -java.long runs the
// long chaos test (minutes) instead of the CI one (under a minute).
package javatest

import (
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
