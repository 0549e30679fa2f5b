package dev.nodeid;

/**
 * The two clocks a lease reads: a monotonic one for its deadline and the
 * wall clock for the stamps of IDs and the horizons. {@link #SYSTEM} is
 * System.nanoTime and System.currentTimeMillis; tests give a fake.
 *
 * <p>System.nanoTime does not advance during a system suspend, so a deadline
 * measured with it can be late after one. The horizon a lease records in the
 * database is a wall-clock ceiling that a suspend does not stretch: a
 * generator never stamps past it, whatever the monotonic clock says.
 */
public interface Clock {
    /** Monotonic nanoseconds, comparable only by difference. */
    long nanoTime();

    /** Unix milliseconds of the wall clock. */
    long currentTimeMillis();

    /** Sleeps for up to nanos, or until woken; a fake clock may advance itself. */
    default void parkNanos(long nanos) {
        java.util.concurrent.locks.LockSupport.parkNanos(nanos);
    }

    Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public long currentTimeMillis() {
            return System.currentTimeMillis();
        }
    };
}
