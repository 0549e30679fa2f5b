// Package warden runs the command of `nodeid run` bounded by its lease's
// deadline, with two processes:
//
//   - the supervisor (the process that holds and renews the lease; Start
//     and Supervisor) starts the warden, passes each renewal (Extend),
//     signal (Signal) and stop (Terminate) on to it, and as a second line
//     kills the command's processes itself at the deadline if the warden
//     has not reported them gone;
//   - the warden (Serve, a process of its own, this program re-executed)
//     leads the command's process group, adopts every orphan of its tree
//     (a child subreaper), holds the deadline on CLOCK_BOOTTIME and kills
//     every process of the tree at the deadline, when the wall clock nears
//     the horizon ceiling, and at once if the supervisor dies. Only a
//     running supervisor moves the deadline: a stopped or killed one
//     cannot extend it.
//
// The words: the deadline is the lease's local deadline (the holder's
// monotonic clock); the ceiling is the lease's horizon ceiling, the latest
// unix millisecond the command may stamp; the horizon at exit
// (Exit.Horizon) is what the supervisor records at release, at least every
// stamp the command could have made.
//
// It needs Linux: elsewhere Supported, Start, Serve and NewStepWatch
// return ErrUnsupported, and nothing runs.
package warden
