package warden

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// The supervisor and its warden talk over two pipes, one JSON object a
// line: the supervisor sends messages on the warden's file descriptor 3,
// the warden answers with events on its file descriptor 4. When the
// supervisor dies, descriptor 3 reads EOF.
const (
	ctlFD    = 3
	statusFD = 4
)

// Operations of message.
const (
	opStart     = "start"     // start the command
	opLease     = "lease"     // a renewal: new deadline and ceiling
	opSignal    = "signal"    // send Signal to the command's process group
	opTerminate = "terminate" // SIGTERM now, SIGKILL at KillAt at the latest
)

// message is one message of the supervisor to its warden.
type message struct {
	Op string `json:"op"`

	// opStart.
	Argv     []string      `json:"argv,omitempty"`
	Env      []string      `json:"env,omitempty"`
	Name     string        `json:"name,omitempty"` // argv[0], printable, for messages
	Grace    time.Duration `json:"grace,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"`
	LeaseDir string        `json:"lease_dir,omitempty"` // removed by the warden if the supervisor dies

	// opStart, opLease: the deadline in CLOCK_BOOTTIME nanoseconds and the
	// horizon ceiling in unix milliseconds.
	Deadline int64 `json:"deadline,omitempty"`
	Ceiling  int64 `json:"ceiling,omitempty"`

	Signal int   `json:"signal,omitempty"`  // opSignal
	KillAt int64 `json:"kill_at,omitempty"` // opTerminate, CLOCK_BOOTTIME nanoseconds
}

// Events of event.
const (
	evStarted = "started" // the command runs as Pid
	evFailed  = "failed"  // the command could not start: Err; nothing ran
	evTerm    = "term"    // SIGTERM sent to the running command (Why), SIGKILL in In
	evKill    = "kill"    // SIGKILL sent to every process of the command (Why)
	evExit    = "exit"    // the command exited with Code (128+N for signal N)
	evDone    = "done"    // the command and all its descendants are gone
)

// Reasons of evTerm and evKill, and of Exit.KilledBy.
const (
	WhyDeadline = "deadline" // the lease's deadline (less the grace, for SIGTERM)
	WhyGrace    = "grace"    // the grace after a SIGTERM is over
	WhyCeiling  = "ceiling"  // the wall clock reached the horizon ceiling less TTL/20
	whyExited   = "exited"   // the command exited: its leftovers are killed
	whyAsked    = "asked"    // SIGTERM asked for by the supervisor (Supervisor.Terminate)
)

// event is one report of the warden to its supervisor.
type event struct {
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
