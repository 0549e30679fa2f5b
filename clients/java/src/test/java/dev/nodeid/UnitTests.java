package dev.nodeid;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The timing rules of the client with a fake clock and a fake table: run
 * with "java -cp ... dev.nodeid.UnitTests"; it exits 1 if any test fails.
 * No test framework: each test is a method named in TESTS.
 */
public final class UnitTests {
    static final long MS = 1_000_000L;
    static final long TTL_MS = 3000;

    /** A clock that moves only when told, or when parked. */
    static final class FakeClock implements Clock {
        long nanos = 1_000_000_000_000L;
        long wall = 1_767_225_600_000L; // 2026-01-01
        long wallFrac; // nanoseconds into the wall millisecond
        boolean frozenMono; // a system suspend: the wall clock moves, nanoTime does not

        synchronized void advance(long ns) {
            if (!frozenMono) {
                nanos += ns;
            }
            long w = wallFrac + ns;
            wall += w / MS;
            wallFrac = w % MS;
        }

        @Override
        public synchronized long nanoTime() {
            return nanos;
        }

        @Override
        public synchronized long currentTimeMillis() {
            return wall;
        }

        @Override
        public void parkNanos(long ns) {
            advance(ns);
        }
    }

    /** The table's functions as scripted answers; it records every call. */
    static final class FakeStore implements LeaseStore {
        final FakeClock clock;
        long latencyNs = 0; // how long each call takes, on the fake clock
        long leftMs = TTL_MS; // expires_at - now granted
        long afterMs;
        String renewStatus = "ok", releaseStatus = "ok";
        Long rowEpoch;
        SQLException failRenew;
        final List<String> calls = new ArrayList<>();
        Long lastHorizonAsked, releasedLastMs;
        long lastTimeout;
        boolean releaseCalled;

        FakeStore(FakeClock c) {
            clock = c;
            afterMs = c.wall - 1000;
        }

        @Override
        public Claim claim(String owner, long ttlMs, long horizonMs, Long lo, Long hi, Long nodeLimit, long timeoutNanos) {
            calls.add("claim");
            lastHorizonAsked = horizonMs;
            long serverNow = clock.currentTimeMillis() + latencyNs / 2 / MS;
            clock.advance(latencyNs);
            return new Claim("ok", 7L, 3L, afterMs, Math.min(horizonMs, serverNow + ttlMs), leftMs * MS, null, null, null, null, serverNow);
        }

        @Override
        public Outcome renew(long nodeId, String owner, long epoch, long ttlMs, long horizonMs, long timeoutNanos) throws SQLException {
            calls.add("renew");
            lastHorizonAsked = horizonMs;
            lastTimeout = timeoutNanos;
            long serverNow = clock.currentTimeMillis() + latencyNs / 2 / MS;
            clock.advance(latencyNs);
            if (failRenew != null) {
                throw failRenew;
            }
            if (!renewStatus.equals("ok")) {
                return new Outcome(renewStatus, null, null, "other", rowEpoch != null ? rowEpoch : epoch, null);
            }
            return new Outcome("ok", Math.min(horizonMs, serverNow + ttlMs), leftMs * MS, owner, epoch, null);
        }

        @Override
        public Outcome release(long nodeId, String owner, long epoch, Long lastMs, long timeoutNanos) {
            calls.add("release");
            releaseCalled = true;
            releasedLastMs = lastMs;
            return new Outcome(releaseStatus, lastMs, null, "", epoch, releaseStatus.equals("ok") ? "released" : null);
        }
    }

    static final class Fixture {
        final FakeClock clock = new FakeClock();
        final FakeStore store = new FakeStore(clock);

        Leaser leaser() {
            return Leaser.builder(() -> {
                throw new SQLException("no database in unit tests");
            }).ttl(Duration.ofMillis(TTL_MS)).owner("unit").clock(clock).stores(() -> store).noRenewThread().build();
        }

        Lease lease() throws Exception {
            return leaser().tryAcquire();
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static NodeIdException refusal(FencedGenerator g) {
        try {
            long id = g.next();
            throw new AssertionError("minted " + id + ", want a refusal");
        } catch (NodeIdException e) {
            return e;
        }
    }

    // The deadline counts from t0 read before the call: a slow claim shortens it.
    static void deadlineFromBeforeTheCall() throws Exception {
        Fixture f = new Fixture();
        f.store.latencyNs = 400 * MS;
        long t0 = f.clock.nanos;
        Lease l = f.lease();
        long want = t0 + TTL_MS * MS - TTL_MS * MS / 10;
        check(l.deadlineNanos() == want, "deadline " + (l.deadlineNanos() - t0) + " ns after t0, want " + (want - t0));
        check(f.store.lastHorizonAsked == f.clock.wall - 400 + TTL_MS, "the horizon asked is not the wall clock at t0 + TTL");
    }

    // No ID at or after the deadline, and the lease then ends as EXPIRED.
    static void refusesAtDeadline() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        FencedGenerator g = new FencedGenerator(l, Layout.BWMARRIN);
        f.clock.advance(l.deadlineNanos() - f.clock.nanos - 1);
        // The wall clock is at most the horizon here: the claim recorded now + TTL.
        g.next();
        f.clock.advance(1);
        NodeIdException e = refusal(g);
        check(e.reason() == NodeIdException.Reason.LEASE_ENDED && e.endCause() == EndCause.EXPIRED, "at the deadline: " + e.getMessage());
        check(l.endCause() == EndCause.EXPIRED, "endCause at the deadline: " + l.endCause());
        check(l.awaitEnd(Duration.ZERO) == EndCause.EXPIRED, "awaitEnd at the deadline");
    }

    // A stamp past the recorded horizon is refused (CLOCK_AHEAD) until a renewal raises it.
    static void horizonCeiling() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        FencedGenerator g = new FencedGenerator(l, Layout.BWMARRIN);
        f.clock.wall = l.horizon(); // the wall clock jumps ahead; the monotonic one does not
        g.next();
        f.clock.wall = l.horizon() + 1;
        NodeIdException e = refusal(g);
        check(e.reason() == NodeIdException.Reason.CLOCK_AHEAD, "past the horizon: " + e.reason());
        long before = l.horizon();
        check(l.renewOnce(f.clock.nanoTime()) == Boolean.TRUE, "renewal");
        check(l.horizon() > before, "the renewal did not raise the horizon");
        long id = g.next();
        check(Layout.BWMARRIN.millisOf(id) == before + 1, "stamp after renewal " + Layout.BWMARRIN.millisOf(id));
    }

    // A suspend stops nanoTime but not the wall clock: the horizon still stops minting.
    static void suspendStoppedByHorizon() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        FencedGenerator g = new FencedGenerator(l, Layout.BWMARRIN);
        g.next();
        f.clock.frozenMono = true;
        f.clock.advance(10 * TTL_MS * MS); // ten TTLs of suspend
        check(f.clock.nanoTime() - l.deadlineNanos() < 0, "the monotonic deadline has not passed: the point of the test");
        NodeIdException e = refusal(g);
        check(e.reason() == NodeIdException.Reason.CLOCK_AHEAD, "after a suspend: " + e.reason() + " " + e.getMessage());
    }

    // The first stamp is after the previous holder's horizon: the generator waits for it, bounded.
    static void waitsForPreviousHorizon() throws Exception {
        Fixture f = new Fixture();
        f.store.afterMs = f.clock.wall + 20;
        Lease l = f.lease();
        FencedGenerator g = new FencedGenerator(l, Layout.BWMARRIN);
        long id = g.next();
        check(Layout.BWMARRIN.millisOf(id) == f.store.afterMs + 1, "first stamp " + Layout.BWMARRIN.millisOf(id) + ", want " + (f.store.afterMs + 1));

        Fixture f2 = new Fixture();
        f2.store.afterMs = f2.clock.wall + 2000;
        Lease l2 = f2.lease();
        FencedGenerator g2 = new FencedGenerator(l2, Layout.BWMARRIN, Duration.ofMillis(100));
        NodeIdException e = refusal(g2);
        check(e.reason() == NodeIdException.Reason.CLOCK_BEHIND, "2 s behind with a max wait of 100 ms: " + e.reason());
    }

    // js53 mints 4 IDs a millisecond: the fifth waits for the next; all differ and rise.
    static void sequenceAndLayouts() throws Exception {
        for (Layout lay : new Layout[] {Layout.JS53, Layout.BWMARRIN, Layout.BWMARRIN.withEpochBits(2)}) {
            Fixture f = new Fixture();
            Lease l = f.lease();
            FencedGenerator g = new FencedGenerator(l, lay);
            Set<Long> seen = new HashSet<>();
            long prev = -1, ms0 = f.clock.wall;
            int n = (int) (lay.seqMask() + 1) * 3;
            for (int i = 0; i < n; i++) {
                long id = g.next();
                check(id > prev && seen.add(id), "IDs do not rise: " + id + " after " + prev);
                check(lay.nodeOf(id) == 7 && lay.epochOf(id) == (3 & ((1L << lay.epochBits()) - 1)), "node/epoch fields of " + id);
                check(id >= 0 && (lay.totalBits() == 63 || id < (1L << lay.totalBits())), "ID " + id + " is wider than " + lay.totalBits() + " bits");
                prev = id;
            }
            check(f.clock.wall >= ms0 + 2, "used-up milliseconds were not waited for");
        }
        // Known values, as Go's snowflake package encodes them.
        check(Layout.BWMARRIN.id(1, 1, 0, 1) == (1L << 22 | 1L << 12 | 1), "bwmarrin encoding");
        check(Layout.JS53.id(1, 1, 0, 1) == (1L << 12 | 1L << 2 | 1), "js53 encoding");
    }

    // Each status of a renewal ends the lease with the Go library's cause.
    static void statusesEndWithCauses() throws Exception {
        Object[][] cases = {
            {"epoch_mismatch", 9L, EndCause.TAKEN_OVER}, {"epoch_mismatch", 1L, EndCause.FAILOVER},
            {"not_owner", null, EndCause.TAKEN_OVER}, {"no_row", null, EndCause.TAKEN_OVER},
            {"lapsed", null, EndCause.EXPIRED}, {"evicted", null, EndCause.EVICTED}, {"released", null, EndCause.RELEASED},
        };
        for (Object[] c : cases) {
            Fixture f = new Fixture();
            Lease l = f.lease();
            FencedGenerator g = new FencedGenerator(l, Layout.BWMARRIN);
            f.store.renewStatus = (String) c[0];
            f.store.rowEpoch = (Long) c[1];
            check(l.renewOnce(f.clock.nanoTime()) == null, c[0] + ": the lease did not end");
            check(l.endCause() == c[2], c[0] + ": cause " + l.endCause() + ", want " + c[2]);
            check(l.ended().get(10, java.util.concurrent.TimeUnit.SECONDS) == c[2], c[0] + ": the future has " + l.ended().getNow(null));
            NodeIdException e = refusal(g);
            check(e.endCause() == c[2], c[0] + ": generator refusal " + e.endCause());
            // A lost lease is not released: the row is not its to free. An
            // expired one is, if the table still holds it for this lease.
            try {
                l.release();
                check(c[2] == EndCause.RELEASED || c[2] == EndCause.EXPIRED, c[0] + ": release of a lost lease succeeded");
            } catch (NodeIdException re) {
                check(re.endCause() == c[2], c[0] + ": release says " + re.endCause());
            }
            check(f.store.releaseCalled == (c[2] == EndCause.EXPIRED), c[0] + ": release called the table: " + f.store.releaseCalled);
        }
    }

    // A failed renewal does not end the lease, but the deadline still applies; each attempt is bounded.
    static void failedRenewalKeepsDeadline() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        long deadline = l.deadlineNanos();
        f.clock.advance(TTL_MS * MS / 3);
        f.store.failRenew = new SQLTransientConnectionException("connection refused", "08001");
        check(l.renewOnce(f.clock.nanoTime()) == Boolean.FALSE, "a failed call is not an end");
        check(f.store.lastTimeout == TTL_MS * MS / 5, "attempt timeout " + f.store.lastTimeout + ", want TTL/5");
        check(l.endCause() == null && l.deadlineNanos() == deadline, "the failure moved the deadline");
        f.clock.advance(deadline - f.clock.nanoTime() - 100 * MS);
        f.store.failRenew = null;
        f.store.latencyNs = 0;
        long t0 = f.clock.nanoTime();
        check(l.renewOnce(t0) == Boolean.TRUE, "the late renewal");
        check(f.store.lastTimeout == 100 * MS, "an attempt near the deadline is bounded by it: " + f.store.lastTimeout);
    }

    // A renewal that answers after the deadline passed does not revive the lease.
    static void lateRenewalNeverRevives() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        f.clock.advance(l.deadlineNanos() - f.clock.nanoTime() - 10 * MS);
        f.store.latencyNs = 50 * MS;
        check(l.renewOnce(f.clock.nanoTime()) == null, "a renewal answered after the deadline renewed");
        check(l.endCause() == EndCause.EXPIRED, "cause " + l.endCause());
    }

    // The deadline of a renewal counts from its own t0.
    static void renewalDeadlineFromT0() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        f.clock.advance(TTL_MS * MS / 3);
        f.store.latencyNs = 300 * MS;
        long t0 = f.clock.nanoTime();
        check(l.renewOnce(t0) == Boolean.TRUE, "renewal");
        check(l.deadlineNanos() == t0 + TTL_MS * MS * 9 / 10, "deadline " + (l.deadlineNanos() - t0));
        check(l.renewals() == 1, "renewals");
    }

    // Release records the last millisecond stamped, never below the previous horizon; then the generator refuses.
    static void releaseRecordsLastStamp() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        FencedGenerator g = new FencedGenerator(l, Layout.JS53);
        long id = 0;
        for (int i = 0; i < 10; i++) {
            id = g.next();
        }
        l.release();
        check(f.store.releasedLastMs == Layout.JS53.millisOf(id), "release recorded " + f.store.releasedLastMs + ", last stamp "
                + Layout.JS53.millisOf(id));
        NodeIdException e = refusal(g);
        check(e.endCause() == EndCause.RELEASED && !e.leaseLost(), "after release: " + e.endCause());
        l.release(); // idempotent
        check(f.store.calls.stream().filter("release"::equals).count() == 1, "release called twice");

        Fixture f2 = new Fixture();
        Lease l2 = f2.lease();
        new FencedGenerator(l2, Layout.JS53);
        l2.release();
        check(f2.store.releasedLastMs == f2.store.afterMs, "nothing stamped: release records the previous horizon, got " + f2.store.releasedLastMs);

        Fixture f3 = new Fixture();
        Lease l3 = f3.lease();
        l3.release();
        check(f3.store.releasedLastMs == null, "without a generator the row keeps its recorded horizon");
        Fixture f4 = new Fixture();
        Lease l4 = f4.lease();
        l4.releaseStamped(f4.store.afterMs - 50);
        check(f4.store.releasedLastMs == f4.store.afterMs, "releaseStamped below the previous horizon records it");
    }

    // One generator per lease.
    static void oneGeneratorPerLease() throws Exception {
        Fixture f = new Fixture();
        Lease l = f.lease();
        new FencedGenerator(l, Layout.BWMARRIN);
        try {
            new FencedGenerator(l, Layout.BWMARRIN);
            throw new AssertionError("a second generator was bound");
        } catch (IllegalStateException expected) {
            // ok
        }
    }

    // Invalid values name the value and the rule.
    static void validation() throws Exception {
        String[] bad = {"Bad-Table", "1table"};
        for (String t : bad) {
            try {
                Leaser.builder(() -> null).table(t).build();
                throw new AssertionError("table " + t + " accepted");
            } catch (IllegalArgumentException e) {
                check(e.getMessage().contains(t), "the error does not name " + t + ": " + e.getMessage());
            }
        }
        try {
            Leaser.builder(() -> null).ttl(Duration.ofSeconds(1)).build();
            throw new AssertionError("TTL 1s accepted");
        } catch (IllegalArgumentException e) {
            check(e.getMessage().contains("PT1S"), e.getMessage());
        }
        try {
            new Layout(0, 1, 63, 30, 12, 0);
            throw new AssertionError("21 time bits accepted");
        } catch (IllegalArgumentException e) {
            check(e.getMessage().contains("time bits"), e.getMessage());
        }
        check(Mint.parseDuration("--ttl", "3s").toMillis() == 3000, "3s");
        check(EndCause.ofStatus("ok", 1, 1L) == null, "ok is no end");
    }

    interface Test {
        void run() throws Exception;
    }

    static final Object[][] TESTS = {
        {"deadlineFromBeforeTheCall", (Test) UnitTests::deadlineFromBeforeTheCall},
        {"refusesAtDeadline", (Test) UnitTests::refusesAtDeadline},
        {"horizonCeiling", (Test) UnitTests::horizonCeiling},
        {"suspendStoppedByHorizon", (Test) UnitTests::suspendStoppedByHorizon},
        {"waitsForPreviousHorizon", (Test) UnitTests::waitsForPreviousHorizon},
        {"sequenceAndLayouts", (Test) UnitTests::sequenceAndLayouts},
        {"statusesEndWithCauses", (Test) UnitTests::statusesEndWithCauses},
        {"failedRenewalKeepsDeadline", (Test) UnitTests::failedRenewalKeepsDeadline},
        {"lateRenewalNeverRevives", (Test) UnitTests::lateRenewalNeverRevives},
        {"renewalDeadlineFromT0", (Test) UnitTests::renewalDeadlineFromT0},
        {"releaseRecordsLastStamp", (Test) UnitTests::releaseRecordsLastStamp},
        {"oneGeneratorPerLease", (Test) UnitTests::oneGeneratorPerLease},
        {"validation", (Test) UnitTests::validation},
    };

    public static void main(String[] args) {
        java.util.logging.Logger.getLogger("dev.nodeid").setLevel(java.util.logging.Level.OFF);
        int failed = 0;
        Consumer<String> out = System.out::println;
        for (Object[] t : TESTS) {
            String name = (String) t[0];
            if (args.length > 0 && !java.util.Arrays.asList(args).contains(name)) {
                continue;
            }
            try {
                ((Test) t[1]).run();
                out.accept("PASS " + name);
            } catch (Throwable e) {
                failed++;
                out.accept("FAIL " + name + ": " + e);
                for (StackTraceElement s : e.getStackTrace()) {
                    if (s.getClassName().startsWith("dev.nodeid")) {
                        out.accept("    at " + s);
                    }
                }
            }
        }
        out.accept(failed == 0 ? "ok" : failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
