package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq" // the database/sql driver "postgres", which does not abort a running statement on its own

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/internal/testkit/pgtest"
	"github.com/nodeid/nodeid/postgres"
)

// lateness runs f, which should return when a timer of d started with it
// fires, and reports how long after that timer f returned: a loaded machine
// delays both alike.
func lateness(d time.Duration, f func()) time.Duration {
	var (
		mu    sync.Mutex
		fired time.Time
	)
	control := time.AfterFunc(d, func() {
		mu.Lock()
		fired = time.Now()
		mu.Unlock()
	})
	defer control.Stop()
	f()
	returned := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if fired.IsZero() {
		return returned.Sub(time.Now().Add(d)) // returned before the bound: negative
	}
	return returned.Sub(fired)
}

// Acquire, Release and Close are bounded by their context or
// ReleaseTimeout with github.com/lib/pq too, whose calls wait for the
// server, against a real server paused (SIGSTOP) for longer than those
// bounds.
func TestBoundedWithLibPQOnAPausedServer(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	admin, dsn := srv.NewDB(t)
	ddl, _ := postgres.DefaultSchema().SQL()
	if _, err := admin.ExecContext(ctxOf(t), ddl); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxOf(t)
	holder, err := nodeid.New(db, nodeid.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := nodeid.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Resume()
		}
	}()
	const slack = time.Second

	var acqErr error
	late := lateness(1500*time.Millisecond, func() {
		actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, acqErr = other.Acquire(actx)
	})
	if !errors.Is(acqErr, context.DeadlineExceeded) || late > slack {
		t.Errorf("Acquire with a 1.5s context on a paused server = %v, %s after its deadline", acqErr, late)
	}

	var relErr error
	late = lateness(nodeid.ReleaseTimeout, func() { relErr = l.Release(context.Background()) })
	if relErr == nil || late > slack {
		t.Errorf("Release on a paused server = %v, %s after ReleaseTimeout", relErr, late)
	}
	if !errors.Is(l.Err(), nodeid.ErrReleased) {
		t.Errorf("Err after Release = %v, want ErrReleased", l.Err())
	}

	late = lateness(nodeid.ReleaseTimeout, func() { _ = other.Close() })
	if late > slack {
		t.Errorf("Close on a paused server returned %s after ReleaseTimeout", late)
	}

	// Once the server answers again, the statements left running finish and
	// Close collects them.
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := holder.Close(); err != nil {
		t.Errorf("Close after the server resumed: %v", err)
	}
}
