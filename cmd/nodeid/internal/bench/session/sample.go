package session

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// sampleSQL reads, in one statement, the wait events of the benchmark's
// active backends and the lock requests they wait for.
const sampleSQL = `WITH a AS (
    SELECT pid, wait_event_type, wait_event FROM pg_stat_activity
    WHERE application_name = 'nodeid-bench' AND state = 'active' AND pid <> pg_backend_pid()
)
SELECT 'wait', wait_event_type || ':' || wait_event, count(*) FROM a
WHERE wait_event_type IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'lock', l.locktype, count(*) FROM pg_locks l JOIN a USING (pid)
WHERE NOT l.granted GROUP BY 2`

// Sampler polls sampleSQL on a connection of its own until stopped.
type Sampler struct {
	stop chan struct{}
	done chan struct{}
	w    report.Waits
	err  error
}

// StartSampler starts sampling on a connection of db. It has taken one
// sample when it returns, so that the connection is ready.
func StartSampler(ctx context.Context, db *sql.DB) (*Sampler, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{}),
		w: report.Waits{Events: map[string]int{}, Ungranted: map[string]int{}}}
	if err := s.sample(ctx, conn); err != nil {
		conn.Close()
		return nil, err
	}
	s.w = report.Waits{Events: map[string]int{}, Ungranted: map[string]int{}}
	go func() {
		defer close(s.done)
		defer conn.Close()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if err := s.sample(ctx, conn); err != nil {
				s.err = err
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return s, nil
}

func (s *Sampler) sample(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, sampleSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	lockWaiters := 0
	for rows.Next() {
		var kind, what string
		var n int
		if err := rows.Scan(&kind, &what, &n); err != nil {
			return err
		}
		switch kind {
		case "wait":
			s.w.Events[what] = max(s.w.Events[what], n)
			if strings.HasPrefix(what, "Lock:") {
				lockWaiters += n
			}
		case "lock":
			s.w.Ungranted[what] = max(s.w.Ungranted[what], n)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.w.Samples++
	if lockWaiters > 0 {
		s.w.LockSamples++
		s.w.MaxLockWaiters = max(s.w.MaxLockWaiters, lockWaiters)
	}
	return nil
}

// Finish stops sampling and returns what it saw.
func (s *Sampler) Finish() (report.Waits, error) {
	close(s.stop)
	<-s.done
	return s.w, s.err
}

// Parallel calls f(0) to f(n-1) from at most width goroutines and returns
// the first error.
func Parallel(ctx context.Context, n, width int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(width, n) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
