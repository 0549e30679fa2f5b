package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The supervisor ("nodeid run") and its fence ("nodeid run-fence") talk
// over two pipes, one JSON object a line: the supervisor sends fenceMsgs on
// the fence's file descriptor 3, the fence answers with fenceEvents on its
// file descriptor 4. When the supervisor dies, descriptor 3 reads EOF.
const (
	fenceCtlFD    = 3
	fenceStatusFD = 4
)

// Operations of fenceMsg.
const (
	opStart     = "start"     // start the command
	opLease     = "lease"     // a renewal: new deadline and ceiling
	opSignal    = "signal"    // send Signal to the command's process group
	opTerminate = "terminate" // SIGTERM now, SIGKILL at KillAt at the latest
)

// fenceMsg is one message of the supervisor to its fence.
type fenceMsg struct {
	Op string `json:"op"`

	// opStart.
	Argv     []string      `json:"argv,omitempty"`
	Env      []string      `json:"env,omitempty"`
	Grace    time.Duration `json:"grace,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"`
	LeaseDir string        `json:"lease_dir,omitempty"` // removed by the fence if the supervisor dies

	// opStart, opLease: the deadline in CLOCK_BOOTTIME nanoseconds and the
	// horizon ceiling in unix milliseconds.
	Deadline int64 `json:"deadline,omitempty"`
	Ceiling  int64 `json:"ceiling,omitempty"`

	Signal int   `json:"signal,omitempty"`  // opSignal
	KillAt int64 `json:"kill_at,omitempty"` // opTerminate, CLOCK_BOOTTIME nanoseconds
}

// Events of fenceEvent.
const (
	evStarted = "started" // the command runs as Pid
	evFailed  = "failed"  // the command could not start: Err; nothing ran
	evTerm    = "term"    // SIGTERM sent (Why), SIGKILL in In
	evKill    = "kill"    // SIGKILL sent to every process of the command (Why)
	evExit    = "exit"    // the command exited with Code (128+N for signal N)
	evDone    = "done"    // the command and all its descendants are gone
)

// Reasons of evTerm and evKill.
const (
	whyDeadline = "deadline" // the lease's deadline, less the grace for evTerm
	whyGrace    = "grace"    // the grace after a SIGTERM is over
	whyCeiling  = "ceiling"  // the wall clock reached the horizon ceiling
	whyExited   = "exited"   // the command exited: its leftovers are killed
)

// fenceEvent is one report of the fence to its supervisor.
type fenceEvent struct {
	Ev   string        `json:"ev"`
	Pid  int           `json:"pid,omitempty"`
	Err  string        `json:"err,omitempty"`
	Why  string        `json:"why,omitempty"`
	In   time.Duration `json:"in,omitempty"`
	Code int           `json:"code,omitempty"`
}

// jsonLines writes JSON lines, one Write each, safe for concurrent use.
type jsonLines struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *jsonLines) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// The lease file of a command: EnvLeaseFile names it, and the supervisor
// rewrites it (write, then rename) at every renewal and when the lease
// ends. One key=value a line:
//
//	node=NODE
//	epoch=EPOCH
//	held=true|false
//	deadline_ms=UNIX_MS
//	deadline_boottime_ns=NS
//	horizon_ceiling_ms=UNIX_MS
const leaseFileName = "lease"

// leaseState is what the lease file says.
type leaseState struct {
	node, epoch      int64
	held             bool
	deadlineMs       int64 // wall clock, as of the writing
	deadlineBootNs   int64 // CLOCK_BOOTTIME
	horizonCeilingMs int64
}

func (s leaseState) String() string {
	return fmt.Sprintf("node=%d\nepoch=%d\nheld=%t\ndeadline_ms=%d\ndeadline_boottime_ns=%d\nhorizon_ceiling_ms=%d\n",
		s.node, s.epoch, s.held, s.deadlineMs, s.deadlineBootNs, s.horizonCeilingMs)
}

// writeLeaseFile replaces dir/lease atomically.
func writeLeaseFile(dir string, s leaseState) error {
	tmp := filepath.Join(dir, leaseFileName+".tmp")
	if err := os.WriteFile(tmp, []byte(s.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, leaseFileName))
}
