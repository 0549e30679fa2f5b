package dev.nodeid;

import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One claim of a node ID, renewed by a thread of its own every TTL/3 until
 * it is released or lost; the rules are docs/sql.md's, and the Go library's
 * (renew.go):
 *
 * <ul>
 * <li>the monotonic clock is read (t0) before each claim or renewal, and
 * the local deadline is t0 + (expires_at - now) - TTL/10;
 * <li>an ID may be stamped only after {@link #previousHorizon()} and at or
 * below {@link #horizon()}, the horizon the last claim or renewal recorded,
 * and only before the deadline ({@link #check});
 * <li>each renewal attempt gives up after TTL/5, or at the deadline; a
 * failed one is tried again after TTL/30 (jittered) until the deadline; a
 * status other than ok ends the lease;
 * <li>a renewal that answers after the deadline passed never revives it;
 * <li>a timer ends the lease at its deadline, whatever the renewal thread
 * is doing, and the call's connection is opened before t0 is read.
 * </ul>
 *
 * All methods are safe for concurrent use.
 */
public final class Lease implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger("dev.nodeid");

    private static final java.util.concurrent.ExecutorService NOTIFY = java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "nodeid-end");
        t.setDaemon(true);
        return t;
    });

    /** Bounds a release, as the Go library's ReleaseTimeout. */
    public static final Duration RELEASE_TIMEOUT = Duration.ofSeconds(5);

    /** What a generator checks on every ID: immutable, replaced as a whole. */
    private record Fence(long deadlineNanos, long horizonMs, EndCause end) {
    }

    private final LeaseStore store;
    private final Clock clock;
    private final long nodeId, epoch, prevMs, ttlMs, ttlNanos, claimedAt;
    private final String owner, table;
    private final Object mu = new Object();
    private volatile Fence fence;
    private final CompletableFuture<EndCause> end = new CompletableFuture<>();
    private LongSupplier sealer; // guarded by mu
    private Thread renewer;
    private boolean releaseDone; // guarded by mu of releaseLock
    private Object releaseResult;
    private final Object releaseLock = new Object();
    private volatile int renewals;

    Lease(LeaseStore store, Clock clock, String table, String owner, long ttlMs, long t0, LeaseStore.Claim c) {
        this.store = store;
        this.clock = clock;
        this.table = table;
        this.owner = owner;
        this.nodeId = c.nodeId();
        this.epoch = c.epoch();
        this.prevMs = c.afterMs();
        this.ttlMs = ttlMs;
        this.ttlNanos = TimeUnit.MILLISECONDS.toNanos(ttlMs);
        this.claimedAt = t0;
        this.fence = new Fence(localDeadline(t0, c.leftNanos(), ttlNanos), c.untilMs(), null);
    }

    /** The timing rules, fractions of the TTL (renew.go). */
    static long renewInterval(long ttlNanos) {
        return ttlNanos / 3;
    }

    static long attemptTimeout(long ttlNanos) {
        return ttlNanos / 5;
    }

    static long retryBase(long ttlNanos) {
        return ttlNanos / 30;
    }

    static long safetyMargin(long ttlNanos) {
        return ttlNanos / 10;
    }

    /** docs/sql.md rule 2: t0 read before the call, plus the time the server granted, less the margin. */
    static long localDeadline(long t0, long leftNanos, long ttlNanos) {
        return t0 + leftNanos - safetyMargin(ttlNanos);
    }

    /** The horizon a claim or renewal sent at wall clock wallMs asks to record: at most now + TTL. */
    static long horizonFor(long wallMs, long ttlMs) {
        return wallMs + ttlMs;
    }

    /** Ends leases at their deadlines whatever their renewal threads are doing. */
    private static final java.util.concurrent.ScheduledExecutorService DEADLINES =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "nodeid-deadline");
                t.setDaemon(true);
                return t;
            });

    void start() {
        scheduleDeadline(fence.deadlineNanos() - clock.nanoTime());
        Thread t = new Thread(this::renewLoop, "nodeid-renew-" + table + "-" + nodeId);
        t.setDaemon(true);
        renewer = t;
        t.start();
    }

    private void scheduleDeadline(long inNanos) {
        DEADLINES.schedule(this::onDeadline, Math.max(inNanos, 0), TimeUnit.NANOSECONDS);
    }

    /**
     * The deadline timer: the lease expires unless a renewal moved the
     * deadline meanwhile, and then the timer is set again (the Go Lease's
     * onDeadline). The renewal thread may be stuck connecting or in a call
     * that its cancel has not ended yet: the end comes on time all the same.
     */
    private void onDeadline() {
        synchronized (mu) {
            Fence f = fence;
            if (f.end() != null) {
                return;
            }
            long left = f.deadlineNanos() - clock.nanoTime();
            if (left > 0) {
                scheduleDeadline(left);
                return;
            }
            endLocked(EndCause.EXPIRED);
        }
    }

    public long nodeId() {
        return nodeId;
    }

    public long epoch() {
        return epoch;
    }

    public String owner() {
        return owner;
    }

    public String table() {
        return table;
    }

    Clock clock() {
        return clock;
    }

    /** The previous holder's horizon, unix ms: every ID of this lease is stamped strictly after it. */
    public long previousHorizon() {
        return prevMs;
    }

    /** The horizon recorded by the claim or the last renewal, unix ms: no ID is stamped after it. */
    public long horizon() {
        return fence.horizonMs();
    }

    /** The local deadline, in the clock's nanoTime: nothing is minted at or after it. */
    public long deadlineNanos() {
        return fence.deadlineNanos();
    }

    /** How many renewals succeeded. */
    public int renewals() {
        return renewals;
    }

    /** Null while the lease is held; after, why it ended (EXPIRED once the deadline has passed). */
    public EndCause endCause() {
        Fence f = fence;
        if (f.end() == null && passed(f, clock.nanoTime())) {
            return EndCause.EXPIRED;
        }
        return f.end();
    }

    /**
     * A future completed with the cause when the lease ends: taken over,
     * expired (lapsed), evicted, lost in a failover, or released. It
     * completes on a thread of its own, just after endCause() says so; its
     * actions may block, or exit the JVM.
     */
    public CompletableFuture<EndCause> ended() {
        return end;
    }

    /** Waits up to timeout for the end; returns its cause, or null if the lease is still held. */
    public EndCause awaitEnd(Duration timeout) throws InterruptedException {
        long until = clock.nanoTime() + timeout.toNanos();
        synchronized (mu) {
            for (;;) {
                Fence f = fence;
                long now = clock.nanoTime();
                if (f.end() == null && passed(f, now)) {
                    endLocked(EndCause.EXPIRED);
                }
                if (fence.end() != null) {
                    return fence.end();
                }
                long wait = Math.min(until, f.deadlineNanos()) - now;
                if (until - now <= 0) {
                    return null;
                }
                TimeUnit.NANOSECONDS.timedWait(mu, Math.max(wait, 100_000));
            }
        }
    }

    private static boolean passed(Fence f, long now) {
        return now - f.deadlineNanos() >= 0;
    }

    /**
     * Whether an ID stamped with unix millisecond ms may be minted at
     * nanoTime now: nothing if so; else the lease's end (LEASE_ENDED, with
     * EXPIRED at and after the deadline) or CLOCK_AHEAD for a stamp past the
     * recorded horizon. Generators call it for every ID.
     */
    public void check(long now, long ms) throws NodeIdException {
        Fence f = fence;
        if (f.end() != null) {
            throw NodeIdException.ended(nodeId, epoch, f.end());
        }
        if (passed(f, now)) {
            throw NodeIdException.ended(nodeId, epoch, EndCause.EXPIRED);
        }
        if (ms > f.horizonMs()) {
            throw new NodeIdException(NodeIdException.Reason.CLOCK_AHEAD,
                    "nodeid: clock ahead of recorded horizon: node ID " + nodeId + ", epoch " + epoch + ": stamp " + ms
                            + " is after the horizon " + f.horizonMs() + " the lease recorded; the next renewal raises it");
        }
    }

    /**
     * Registers the seal of the one generator that mints under the lease:
     * release calls it once the lease admits no more IDs, and records the
     * last millisecond it returns as the horizon.
     */
    void bind(LongSupplier seal) throws NodeIdException {
        synchronized (mu) {
            if (fence.end() != null) {
                throw NodeIdException.ended(nodeId, epoch, fence.end());
            }
            if (sealer != null) {
                throw new IllegalStateException("nodeid: node ID " + nodeId + " (epoch " + epoch
                        + ") already has a generator: two on one lease would mint the same IDs; share the first");
            }
            sealer = seal;
        }
    }

    private void endLocked(EndCause cause) {
        Fence f = fence;
        if (f.end() != null) {
            return;
        }
        fence = new Fence(f.deadlineNanos(), f.horizonMs(), cause);
        mu.notifyAll();
        // The future's actions run on a thread of their own, never under the
        // lease's lock nor on its renewal thread: one may exit the JVM, whose
        // shutdown hook releases the lease.
        NOTIFY.execute(() -> end.complete(cause));
        if (cause.lost()) {
            LOG.log(Level.WARNING, "nodeid: lease lost: node ID {0}, epoch {1}: {2}", new Object[] {nodeId, epoch, cause});
        }
    }

    void lose(EndCause cause) {
        synchronized (mu) {
            endLocked(cause);
        }
    }

    /**
     * Waits until target (nanoTime) while the lease is held; ends it as
     * EXPIRED if the deadline passes first. Reports whether it is still held.
     */
    private boolean waitUntil(long target) {
        synchronized (mu) {
            for (;;) {
                Fence f = fence;
                if (f.end() != null) {
                    return false;
                }
                long now = clock.nanoTime();
                if (passed(f, now)) {
                    endLocked(EndCause.EXPIRED);
                    return false;
                }
                if (now - target >= 0) {
                    return true;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(mu, Math.min(target, f.deadlineNanos()) - now);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
    }

    private void renewLoop() {
        store.prepare(); // the first renewal's connection, while there is time
        if (!waitUntil(claimedAt + renewInterval(ttlNanos))) {
            return;
        }
        int failed = 0;
        for (;;) {
            store.prepare(); // connecting is no part of the renewal's time
            long t0 = clock.nanoTime();
            Boolean r = renewOnce(t0);
            if (r == null) {
                return;
            }
            if (r) {
                if (failed > 0) {
                    LOG.log(Level.INFO, "nodeid: renewals recovered after {0} failed attempts", failed);
                }
                failed = 0;
                if (!waitUntil(t0 + renewInterval(ttlNanos))) {
                    return;
                }
                continue;
            }
            failed++;
            long base = retryBase(ttlNanos);
            long jitter = base / 2 + ThreadLocalRandom.current().nextLong(Math.max(base, 1));
            if (!waitUntil(clock.nanoTime() + jitter)) {
                return;
            }
        }
    }

    /**
     * One renewal attempt, t0 read before it: TRUE renewed, FALSE failed
     * (try again before the deadline), null the lease ended.
     */
    Boolean renewOnce(long t0) {
        long wall = clock.currentTimeMillis();
        Fence f = fence;
        if (f.end() != null) {
            return null;
        }
        if (passed(f, t0)) {
            lose(EndCause.EXPIRED);
            return null;
        }
        long timeout = Math.min(f.deadlineNanos() - t0, attemptTimeout(ttlNanos));
        LeaseStore.Outcome o;
        try {
            o = store.renew(nodeId, owner, epoch, ttlMs, horizonFor(wall, ttlMs), timeout);
        } catch (SQLException e) {
            if (fence.end() != null) {
                return null;
            }
            LOG.log(Level.WARNING, "nodeid: renewal of node ID {0} failed; retrying until the deadline: {1}",
                    new Object[] {nodeId, e.getMessage()});
            return false;
        }
        EndCause cause = EndCause.ofStatus(o.status(), epoch, o.rowEpoch());
        synchronized (mu) {
            Fence now = fence;
            if (now.end() != null) {
                return null; // released or lost while the statement ran
            }
            if (cause != null) {
                endLocked(cause);
                return null;
            }
            if (passed(now, clock.nanoTime())) {
                endLocked(EndCause.EXPIRED); // never revived
                return null;
            }
            fence = new Fence(localDeadline(t0, o.leftNanos(), ttlNanos), Math.max(now.horizonMs(), o.untilMs()), null);
            renewals++;
            mu.notifyAll();
            return true;
        }
    }

    /**
     * Stops renewing, makes the generator refuse, and frees the node ID for
     * immediate claim, recording the last millisecond the bound generator
     * stamped (or, with none, the horizon of the last renewal). Bounded by
     * RELEASE_TIMEOUT and idempotent. After a takeover, an eviction or a
     * failover it changes nothing and throws the loss; after a local expiry
     * it still frees the row if the database holds it for this lease.
     */
    public void release() throws NodeIdException, SQLException {
        releaseWith(null);
    }

    /**
     * release for IDs stamped outside a bound generator: lastMs is the
     * latest millisecond stamped (previousHorizon() if none was).
     */
    public void releaseStamped(long lastMs) throws NodeIdException, SQLException {
        releaseWith(Math.max(lastMs, prevMs));
    }

    private void releaseWith(Long stamped) throws NodeIdException, SQLException {
        synchronized (releaseLock) {
            if (!releaseDone) {
                try {
                    doRelease(stamped);
                    releaseResult = null;
                } catch (NodeIdException | SQLException e) {
                    releaseResult = e;
                }
                releaseDone = true;
            }
            if (releaseResult instanceof NodeIdException e) {
                throw e;
            }
            if (releaseResult instanceof SQLException e) {
                throw e;
            }
        }
    }

    private void doRelease(Long stamped) throws NodeIdException, SQLException {
        long start = clock.nanoTime();
        long until = start + RELEASE_TIMEOUT.toNanos();
        EndCause prior;
        Long exact;
        synchronized (mu) {
            if (fence.end() == null && passed(fence, clock.nanoTime())) {
                endLocked(EndCause.EXPIRED);
            }
            prior = fence.end();
            endLocked(EndCause.RELEASED); // from here on nothing is minted, nor renewed
            exact = stamped;
            if (sealer != null) {
                long s = Math.max(prevMs, sealer.getAsLong());
                exact = exact == null ? s : Math.max(exact, s);
            }
        }
        Thread r = renewer;
        if (r != null && r != Thread.currentThread()) {
            try {
                r.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(until - clock.nanoTime())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            if (prior != null && prior != EndCause.EXPIRED) {
                throw NodeIdException.ended(nodeId, epoch, prior); // not ours to free
            }
            long backoff = retryBase(ttlNanos);
            for (int attempt = 0;; attempt++) {
                LeaseStore.Outcome o;
                try {
                    o = store.release(nodeId, owner, epoch, exact, until - clock.nanoTime());
                } catch (SQLException e) {
                    if (until - clock.nanoTime() <= backoff || !Retry.retryable(e)) {
                        LOG.log(Level.WARNING, "nodeid: release of node ID {0} failed; it frees up when its lease expires: {1}",
                                new Object[] {nodeId, e.getMessage()});
                        throw e;
                    }
                    clock.parkNanos(backoff);
                    backoff = Math.min(backoff * 2, TimeUnit.SECONDS.toNanos(1));
                    continue;
                }
                if ("ok".equals(o.status())) {
                    return;
                }
                if (attempt > 0 && "released".equals(o.endReason())) {
                    return; // an earlier attempt that seemed to fail did release it
                }
                throw NodeIdException.ended(nodeId, epoch, EndCause.ofStatus(o.status(), epoch, o.rowEpoch()));
            }
        } finally {
            store.close();
        }
    }

    /** release, but a lease already lost is no error: as the Go Registry's Close. */
    @Override
    public void close() throws SQLException {
        try {
            release();
        } catch (NodeIdException e) {
            if (!e.leaseLost()) {
                throw new SQLException(e.getMessage(), e);
            }
        }
    }
}
