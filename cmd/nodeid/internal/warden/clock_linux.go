package warden

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The clocks of the supervisor and its warden, each used for one thing:
//
//   - CLOCK_BOOTTIME, system-wide and never set, bounds the command by the
//     lease's deadline. The supervisor converts each deadline (Go's
//     monotonic clock) to an absolute boot-clock time, reading the boot
//     clock first, so the converted deadline is never later than the
//     lease's. Unlike CLOCK_MONOTONIC it also counts time the host spends
//     suspended, which the database's expiry counts too.
//   - The wall clock stamps IDs; the warden kills the command when it nears
//     the lease's horizon ceiling, and the supervisor watches it for steps
//     (StepWatch).

// bootNow returns CLOCK_BOOTTIME in nanoseconds.
func bootNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("warden: clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // cannot fail on Linux ≥ 2.6.39
	}
	return ts.Nano()
}

// BootTime converts a time read from Go's monotonic clock (a lease's
// deadline) to CLOCK_BOOTTIME nanoseconds. The boot clock is read before
// the remaining time, so the result is not later than t.
func BootTime(t time.Time) int64 {
	now := bootNow()
	return now + int64(time.Until(t))
}

// A timerfd is a kernel timer read through Go's poller.
type timerfd struct {
	f *os.File
}

func newTimerfd(clock int) (*timerfd, error) {
	fd, err := unix.TimerfdCreate(clock, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	return &timerfd{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// set arms the timer at absolute time ns of its clock (disarms it if ns is
// 0), with extra flags besides TFD_TIMER_ABSTIME.
func (t *timerfd) set(ns int64, flags int) error {
	if ns < 0 {
		ns = 1 // in the past: fires at once (0 would disarm)
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(ns)}
	var err error
	ctlErr := t.rawControl(func(fd uintptr) {
		err = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME|flags, &spec, nil)
	})
	if ctlErr != nil {
		return ctlErr
	}
	return os.NewSyscallError("timerfd_settime", err)
}

func (t *timerfd) rawControl(f func(fd uintptr)) error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}

// wait blocks until the timer expires (nil), the clock was set while
// TFD_TIMER_CANCEL_ON_SET is armed (ECANCELED), or the timer is closed.
func (t *timerfd) wait() error {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	if err != nil && errors.Is(err, syscall.ECANCELED) {
		return syscall.ECANCELED
	}
	return err
}

func (t *timerfd) close() error { return t.f.Close() }

// clockAlarm is a timer on one clock whose expiries arrive on C. An expiry may
// be stale (armed before the last set): receivers compare the clock with
// their own target.
type clockAlarm struct {
	t    *timerfd
	C    chan struct{}
	done chan struct{}
}

func newClockAlarm(clock int) (*clockAlarm, error) {
	t, err := newTimerfd(clock)
	if err != nil {
		return nil, err
	}
	a := &clockAlarm{t: t, C: make(chan struct{}, 1), done: make(chan struct{})}
	go a.loop()
	return a, nil
}

func (a *clockAlarm) loop() {
	defer close(a.done)
	for {
		err := a.t.wait()
		if err != nil && !errors.Is(err, syscall.ECANCELED) {
			return // closed
		}
		select {
		case a.C <- struct{}{}:
		default:
		}
	}
}

// at arms the clockAlarm at ns on its clock.
func (a *clockAlarm) at(ns int64) error { return a.t.set(ns, 0) }

// stop closes the clockAlarm and waits for its goroutine.
func (a *clockAlarm) stop() {
	_ = a.t.close()
	<-a.done
}

// StepWatch reports whether the wall clock was set (stepped) since it
// started: the kernel cancels a CLOCK_REALTIME timerfd armed with
// TFD_TIMER_CANCEL_ON_SET at every discontinuous change of the clock; with
// an Offset, a change of the offset counts too.
type StepWatch struct {
	clock   *WallClock
	base    int64 // the Offset at the start
	t       *timerfd
	stepped atomic.Bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewStepWatch starts watching clock for steps; Close stops it.
func NewStepWatch(clock *WallClock) (*StepWatch, error) {
	t, err := newTimerfd(unix.CLOCK_REALTIME)
	if err != nil {
		return nil, err
	}
	s := &StepWatch{clock: clock, base: clock.Offset(), t: t, stop: make(chan struct{})}
	if err := s.arm(); err != nil {
		t.close()
		return nil, err
	}
	s.wg.Add(1)
	go s.watchKernel()
	if clock.hooked() {
		s.wg.Add(1)
		go s.watchHook()
	}
	return s, nil
}

// arm sets the timer a year ahead: it is there to be cancelled, not to fire.
func (s *StepWatch) arm() error {
	return s.t.set(time.Now().Add(365*24*time.Hour).UnixNano(), unix.TFD_TIMER_CANCEL_ON_SET)
}

func (s *StepWatch) watchKernel() {
	defer s.wg.Done()
	for {
		err := s.t.wait()
		switch {
		case errors.Is(err, syscall.ECANCELED):
			s.stepped.Store(true)
			if s.arm() != nil {
				return
			}
		case err != nil:
			return // closed
		default:
			if s.arm() != nil { // a year passed
				return
			}
		}
	}
}

func (s *StepWatch) watchHook() {
	defer s.wg.Done()
	tick := time.NewTicker(hookPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			if s.clock.Offset() != s.base {
				s.stepped.Store(true)
			}
		}
	}
}

// Stepped reports whether the wall clock was stepped since the watch
// started.
func (s *StepWatch) Stepped() bool {
	if s.clock.Offset() != s.base {
		s.stepped.Store(true)
	}
	return s.stepped.Load()
}

// Close stops the watch and waits for its goroutines.
func (s *StepWatch) Close() {
	close(s.stop)
	_ = s.t.close()
	s.wg.Wait()
}
