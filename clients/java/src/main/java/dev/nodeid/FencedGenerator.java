package dev.nodeid;

import java.time.Duration;

/**
 * Mints Snowflake IDs of a {@link Layout} under one {@link Lease}, with the
 * Go snowflake Generator's rules and error causes:
 *
 * <ul>
 * <li>the first ID is stamped with the first time unit after the previous
 * holder's horizon, waiting for the clock up to the max wait
 * (CLOCK_BEHIND after that);
 * <li>every ID is checked against the lease: nothing after its end or its
 * local deadline (LEASE_ENDED), no stamp (the last millisecond of its time
 * unit) past the horizon the lease recorded (CLOCK_AHEAD);
 * <li>a used-up time unit waits for the next; a clock that steps back goes
 * on in the unit already stamped; TIME_OVERFLOW at the layout's end.
 * </ul>
 *
 * It binds itself to the lease: the lease's release seals it and records the
 * last millisecond it stamped. One generator per lease; it is thread-safe.
 */
public final class FencedGenerator {
    /** How long next() may wait for the clock by default, as Go's DefaultMaxWait. */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofSeconds(5);

    private final Lease lease;
    private final Layout layout;
    private final Clock clock;
    private final long maxWaitNanos, node, epoch, prevMs, initial;
    private long state; // (time unit << seqBits | seq): the least value the next ID may take; guarded by this
    private boolean sealed;

    public FencedGenerator(Lease lease, Layout layout) throws NodeIdException {
        this(lease, layout, DEFAULT_MAX_WAIT);
    }

    public FencedGenerator(Lease lease, Layout layout, Duration maxWait) throws NodeIdException {
        this.lease = lease;
        this.layout = layout;
        this.clock = lease.clock();
        this.node = lease.nodeId();
        this.epoch = lease.epoch();
        this.prevMs = lease.previousHorizon();
        this.maxWaitNanos = maxWait.toNanos();
        if (node < 0 || node > layout.maxNode()) {
            throw new IllegalArgumentException("nodeid: node ID " + node + " does not fit the layout " + layout
                    + ": its node bits hold 0-" + layout.maxNode());
        }
        if (maxWait.toMillis() < layout.unitMs()) {
            throw new IllegalArgumentException("nodeid: max wait " + maxWait + " is shorter than the layout's time unit of "
                    + layout.unitMs() + " ms");
        }
        long t = unitOf(prevMs) + 1;
        long init = 0;
        if (t > 0) {
            if (t >= layout.maxT()) {
                throw new NodeIdException(NodeIdException.Reason.TIME_OVERFLOW, "nodeid: time beyond the end of the ID layout: node ID "
                        + node + ": the previous holder's horizon " + prevMs + " leaves no time unit before the layout's end " + layout.endMs());
            }
            init = t << layout.seqBits();
        }
        this.initial = init;
        this.state = init;
        lease.bind(this::seal);
    }

    public Layout layout() {
        return layout;
    }

    public Lease lease() {
        return lease;
    }

    private long unitOf(long ms) {
        return ms < layout.originMs() ? -1 : (ms - layout.originMs()) / layout.unitMs();
    }

    private long firstMs(long t) {
        return layout.originMs() + t * layout.unitMs();
    }

    private long lastMs(long t) {
        return firstMs(t + 1) - 1;
    }

    /**
     * Mints an ID, or says why not (NodeIdException.reason()). A wait for
     * the clock (the next time unit, or the previous holder's horizon) is
     * made without the generator's lock, so that a release seals it at once.
     */
    public long next() throws NodeIdException {
        long waitStart = 0;
        boolean waiting = false;
        for (;;) {
            long remaining;
            synchronized (this) {
                int seqBits = layout.seqBits();
                // The stamping clock first, then the monotonic one the deadline is
                // checked against: a pause between them only makes the check stricter.
                long ms = clock.currentTimeMillis();
                long now = clock.nanoTime();
                if (sealed) {
                    lease.check(now, Long.MIN_VALUE);
                    throw NodeIdException.ended(node, epoch, EndCause.RELEASED);
                }
                long tn = unitOf(ms);
                long next = Math.max(state, Math.min(Math.max(tn, 0), layout.maxT()) << seqBits);
                long t = next >> seqBits;
                if (t >= layout.maxT()) {
                    throw new NodeIdException(NodeIdException.Reason.TIME_OVERFLOW, "nodeid: time beyond the end of the ID layout: node ID "
                            + node + ": the clock reads " + ms + "; the layout ends at " + layout.endMs());
                }
                if (t <= tn || (next & layout.seqMask()) != 0) {
                    lease.check(now, lastMs(t));
                    state = next + 1;
                    return layout.id(t, node, epoch, next & layout.seqMask());
                }
                // The clock is behind a time unit not stamped yet: the last
                // unit's sequence is used up, or the clock is behind the unit
                // after the previous holder's horizon.
                if (!waiting) {
                    waiting = true;
                    waitStart = now;
                }
                remaining = (firstMs(t) - ms) * 1_000_000L;
                if (remaining > maxWaitNanos - (now - waitStart)) {
                    String why = next == initial ? "the previous holder's horizon is " + prevMs
                            : "the last stamped time unit has used up its sequence";
                    throw new NodeIdException(NodeIdException.Reason.CLOCK_BEHIND, "nodeid: clock behind horizon: node ID " + node
                            + ": the clock reads " + ms + ", but the next ID needs " + firstMs(t) + " or later (" + why
                            + "); the max wait of " + maxWaitNanos / 1_000_000 + " ms would end first");
                }
            }
            clock.parkNanos(Math.max(remaining - 500_000, 50_000));
        }
    }

    /** Stops the generator for good; returns the last millisecond stamped, or the previous horizon if none. */
    synchronized long seal() {
        sealed = true;
        if (state == initial) {
            return prevMs;
        }
        return lastMs((state - 1) >> layout.seqBits());
    }
}
