//go:build unix

package pgserver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestTemplateServersAreDistinctClusters starts three servers on an empty
// cache: the first from initdb, which leaves the template, the others
// from the template. Each must have a system identifier of its own, the
// one pg_control names and the server reports, and a server from the
// template must keep what it wrote across a restart.
func TestTemplateServersAreDistinctClusters(t *testing.T) {
	needServers(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // os.UserCacheDir on Linux and the BSDs
	t.Setenv("HOME", cache)           // on macOS
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := map[uint64]bool{}
	for i := range 3 {
		srv, err := StartLocal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if tmpl := srv.Controller().(*local).templateDir(); i == 0 && !strings.HasPrefix(tmpl, cache) {
			t.Fatalf("the template is kept at %q, not in the cache %s", tmpl, cache)
		} else if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err != nil {
			t.Fatalf("after server %d: no template: %v", i, err)
		}
		id := systemIdentifier(t, ctx, srv)
		if ids[id] {
			t.Fatalf("server %d has the system identifier %d of the one before", i, id)
		}
		ids[id] = true
		l := srv.Controller().(*local)
		b, err := os.ReadFile(filepath.Join(l.data(), "global", "pg_control"))
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.NativeEndian.Uint64(b); got != id {
			t.Fatalf("pg_control names %d, the server %d", got, id)
		}
		if i == 2 {
			db, err := sql.Open("pgx", srv.AdminDSN())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `CREATE TABLE kept AS SELECT 42 AS v`); err != nil {
				t.Fatal(err)
			}
			if err := srv.Stop(ctx, Fast); err != nil {
				t.Fatal(err)
			}
			if err := l.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := srv.WaitReady(ctx, l.Exited()); err != nil {
				t.Fatal(err)
			}
			var v int
			if err := db.QueryRowContext(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 42 {
				t.Fatalf("after a restart: %d, %v", v, err)
			}
		}
	}
}

// needServers skips the test under -short, and where the local PostgreSQL
// programs are missing unless NODEID_TEST_REQUIRE_DB is set.
func needServers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test starts PostgreSQL servers")
	}
	if _, err := FindBinaries(); err != nil {
		if os.Getenv("NODEID_TEST_REQUIRE_DB") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func systemIdentifier(t *testing.T, ctx context.Context, srv *Server) uint64 {
	t.Helper()
	db, err := sql.Open("pgx", srv.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	if err := db.QueryRowContext(ctx, `SELECT system_identifier FROM pg_control_system()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return uint64(id)
}

// TestControlCRCOffset finds the CRC of a made-up control file wherever it
// is, and none in bytes that carry none.
func TestControlCRCOffset(t *testing.T) {
	for _, at := range []int{16, 296, 508} {
		b := bytes.Repeat([]byte{7}, 8192)
		for i := range at {
			b[i] = byte(i * 31)
		}
		binary.NativeEndian.PutUint32(b[at:], crc32.Checksum(b[:at], castagnoli))
		if got, err := controlCRCOffset(b); err != nil || got != at {
			t.Errorf("CRC at %d: found %d, %v", at, got, err)
		}
	}
	if at, err := controlCRCOffset(bytes.Repeat([]byte{7}, 8192)); err == nil {
		t.Errorf("no CRC: found one at %d", at)
	}
}
