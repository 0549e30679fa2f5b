package pgtest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// serverNice is the nice value of every server pgtest starts (PostgreSQL,
// PgBouncer, etcd, Patroni and what they start), when this process may
// raise a priority (as root; otherwise they run at its own).
//
// A server of a test shares the machine's cores with its clients and with
// whatever else runs there, where in production it has a host of its own.
// On a loaded 2-core machine the difference decides whether a test's
// server answers at all: with two CPU-bound processes alongside a test
// run, servers at nice 0 took up to 6 s to answer a new connection and a
// SELECT 1 (16 of about 300 probes over 2 s in one run), and twice a
// server answered nothing for over 10 s, which lapsed a healthy lease. The
// clients stay at nice 0: a test's holder must keep its lease on a loaded
// machine, as a production one must.
const serverNice = -5

// startFavoured starts cmd at serverNice if this process may, else at the
// process's own priority. A child inherits the nice value of the thread
// that forks it, so the priority is raised on this goroutine's thread for
// the fork only: the server is favoured from its first instruction, with
// every process it forks, and no other thread or child is.
func startFavoured(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority system call returns 20 - nice. Lowering the
	// priority back is always allowed.
	if raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-raw > serverNice {
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, serverNice); err == nil {
			defer syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-raw)
		}
	}
	return cmd.Start()
}
