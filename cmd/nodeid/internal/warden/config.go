package warden

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// ErrUnsupported is returned where the warden cannot run: it needs Linux's
// process control (a child subreaper, CLOCK_BOOTTIME timers, /proc).
var ErrUnsupported = errors.New("nodeid run needs Linux: its command is bounded by a child subreaper, CLOCK_BOOTTIME timers and /proc, which this system lacks")

// Config is a command to start under a warden, and the lease that bounds it.
type Config struct {
	Argv []string // the command and its arguments; Argv[0] is looked up in PATH
	Env  []string // the command's environment
	Name string   // Argv[0] as messages print it (default: quoted)

	NodeID   int64         // the leased node ID, for messages
	Deadline time.Time     // the lease's deadline, on Go's monotonic clock
	Ceiling  int64         // the lease's horizon ceiling, unix ms: the command must not stamp after it
	Grace    time.Duration // SIGTERM this long before the deadline; positive
	TTL      time.Duration // the lease's TTL: the warden kills at the ceiling less TTL/20
	LeaseDir string        // removed by the warden if the supervisor dies ("" for none)

	// Warden returns the command of the warden process: a program that
	// calls Serve (this program re-executed, typically). Start sets its
	// ExtraFiles, standard streams and SysProcAttr; its Env is kept.
	Warden func() (*exec.Cmd, error)
	// Stdin, Stdout and Stderr are the warden's, hence the command's.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Log receives the supervisor's messages, one line each.
	Log io.Writer

	Clock *WallClock // the wall clock; the warden must read the same one
	Steps *StepWatch // the wall clock's steps since before the claim (nil: none watched)

	// Shared says that the calling process runs other work beside this
	// supervisor, as the tests that run nodeid run in their own process
	// do. Its second line (the warden died, or the deadline came before
	// the warden reported) then kills and reaps only the processes of the
	// command's process group: every process the calling process adopted
	// since the warden started is not the command's then, and a process of
	// the command that left its group escapes it.
	Shared bool
}

func (c *Config) check() error {
	switch {
	case len(c.Argv) == 0:
		return errors.New("warden: no command")
	case c.Warden == nil || c.Clock == nil:
		return errors.New("warden: Config.Warden and Config.Clock are required")
	case c.Grace <= 0 || c.TTL <= 0:
		return fmt.Errorf("warden: grace %s and TTL %s must be positive", c.Grace, c.TTL)
	case c.Ceiling <= 0:
		return fmt.Errorf("warden: horizon ceiling %d: it must be a positive unix millisecond", c.Ceiling)
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Exit is how a command under a warden ended.
type Exit struct {
	Started    bool   // the command started
	StartErr   error  // why the command could not start, if it could not
	Exited     bool   // the command exited with Code (128+N if signal N killed it)
	Code       int    // the command's exit code, if Exited
	KilledBy   string // why every process of the command was killed before its exit was reported: WhyDeadline, WhyGrace, WhyCeiling, or ""
	SecondLine bool   // the supervisor killed the command's processes itself (the warden died, or missed the deadline)
	// Terminated says that the command was stopped before its exit was
	// reported: SIGTERM was sent to it while it ran (asked for with
	// Terminate, or a grace before the deadline), or the supervisor killed
	// its processes itself after Terminate. A Terminate that came once the
	// command had exited, reaped or not, signals nothing and counts not.
	Terminated bool
	Stepped    bool // the wall clock was stepped while the lease was held
	// Horizon is the horizon at exit, unix ms: at least every stamp the
	// command could have made. It is the wall clock read once every process
	// of the command was gone or, if the clock was stepped, the larger of
	// that and the last horizon ceiling.
	Horizon int64
}

// NothingRan reports whether the command could not start, so that nothing
// it could have stamped needs a horizon.
func (e Exit) NothingRan() bool { return e.StartErr != nil && !e.Started }

// PollInterval is how often the supervisor should look for a renewal to
// pass on with Extend: often enough that a renewal made TTL/3 into the
// lease reaches the warden well before the deadline less the grace.
func PollInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/60, 10*time.Millisecond), 250*time.Millisecond)
}
