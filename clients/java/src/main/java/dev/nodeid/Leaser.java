package dev.nodeid;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Leases node IDs from one lease table through its SQL functions
 * (docs/sql.md): the Java counterpart of the Go library's Registry.
 *
 * <pre>{@code
 * Leaser leaser = Leaser.builder(ConnectionSource.of(url, props)).table("snowflake_nodes").ttl(Duration.ofSeconds(30)).build();
 * Lease lease = leaser.acquire(Duration.ofMinutes(1));
 * }</pre>
 */
public final class Leaser {
    /** The bounds of a TTL, as the Go library's MinTTL and MaxTTL. */
    public static final Duration MIN_TTL = Duration.ofSeconds(3), MAX_TTL = Duration.ofHours(24);

    private static final Pattern TABLE = Pattern.compile("([a-z_][a-z0-9_]{0,62}\\.)?[a-z_][a-z0-9_]{0,54}");
    private static final long WAIT_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(50), WAIT_MAX_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final String table, owner;
    private final long ttlMs;
    private final Long lo, hi;
    private final int nodeBits;
    private final Clock clock;
    private final Supplier<LeaseStore> stores;
    private final boolean renewThread;
    private LeaseStore claims; // guarded by this

    private Leaser(Builder b, Supplier<LeaseStore> stores) {
        this.table = b.table;
        this.owner = b.owner != null ? b.owner : defaultOwner();
        this.ttlMs = b.ttl.toMillis();
        this.lo = b.lo;
        this.hi = b.hi;
        this.nodeBits = b.nodeBits;
        this.clock = b.clock;
        this.stores = stores;
        this.renewThread = b.renewThread;
    }

    public static Builder builder(ConnectionSource source) {
        return new Builder(Objects.requireNonNull(source, "nodeid: the connection source is null"));
    }

    /** The options of a Leaser; build() validates them and names the first bad one. */
    public static final class Builder {
        private final ConnectionSource source;
        private String table = "snowflake_nodes", owner;
        private Duration ttl = Duration.ofMinutes(1);
        private Long lo, hi;
        private int nodeBits = 10;
        private Clock clock = Clock.SYSTEM;
        private Supplier<LeaseStore> stores;
        private boolean renewThread = true;

        private Builder(ConnectionSource source) {
            this.source = source;
        }

        /** The lease table, [schema.]name in lower case; default snowflake_nodes. */
        public Builder table(String t) {
            this.table = t;
            return this;
        }

        /** The holder name recorded on leases: 1 to 255 bytes; default host, process ID and a random suffix. */
        public Builder owner(String o) {
            this.owner = o;
            return this;
        }

        /** The lease's length: 3 s to 24 h; default 1 minute. Renewals run every TTL/3. */
        public Builder ttl(Duration d) {
            this.ttl = d;
            return this;
        }

        /** Claim only node IDs lo to hi (inside the table's range). */
        public Builder nodeRange(long lo, long hi) {
            this.lo = lo;
            this.hi = hi;
            return this;
        }

        /** The node bits of the IDs: a claim refuses a table whose range goes past 2^bits - 1. Default 10. */
        public Builder nodeBits(int bits) {
            this.nodeBits = bits;
            return this;
        }

        /** The clocks; tests give a fake. */
        public Builder clock(Clock c) {
            this.clock = c;
            return this;
        }

        Builder stores(Supplier<LeaseStore> s) {
            this.stores = s;
            return this;
        }

        /** Without the renewal thread: the unit tests drive renewOnce themselves. */
        Builder noRenewThread() {
            this.renewThread = false;
            return this;
        }

        public Leaser build() {
            if (table == null || !TABLE.matcher(table).matches()) {
                throw new IllegalArgumentException("nodeid: table " + table
                        + ": it must be [schema.]name, lower-case letters, digits and _, not starting with a digit, the name at most 55 bytes");
            }
            if (owner != null && (owner.isEmpty() || owner.getBytes(StandardCharsets.UTF_8).length > 255
                    || owner.chars().anyMatch(Character::isISOControl))) {
                throw new IllegalArgumentException("nodeid: owner \"" + owner + "\": it must be 1 to 255 bytes with no control characters");
            }
            if (ttl == null || ttl.compareTo(MIN_TTL) < 0 || ttl.compareTo(MAX_TTL) > 0) {
                throw new IllegalArgumentException("nodeid: TTL " + ttl + " is outside " + MIN_TTL + " to " + MAX_TTL);
            }
            if (nodeBits < 1 || nodeBits > 31) {
                throw new IllegalArgumentException("nodeid: node bits " + nodeBits + ": 1 to 31");
            }
            if (lo != null && (lo < 0 || lo > hi || hi > (1L << nodeBits) - 1)) {
                throw new IllegalArgumentException("nodeid: node range " + lo + " to " + hi + ": it must be 0 <= lo <= hi <= " + ((1L << nodeBits) - 1));
            }
            Objects.requireNonNull(clock, "nodeid: the clock is null");
            String t = table;
            Supplier<LeaseStore> s = stores != null ? stores : () -> new JdbcStore(source, t);
            return new Leaser(this, s);
        }
    }

    static String defaultOwner() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "unknown";
        }
        String pid = ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        return host + "-" + pid + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    public String owner() {
        return owner;
    }

    public String table() {
        return table;
    }

    public Duration ttl() {
        return Duration.ofMillis(ttlMs);
    }

    /**
     * Claims the lowest claimable node ID and starts renewing it, waiting
     * (with backoff) while none is claimable or the database cannot be
     * reached, up to wait. A claim whose
     * answer did not arrive may have committed: its node ID stays held until
     * it lapses, and is never used (docs/sql.md, rule 7).
     */
    public Lease acquire(Duration wait) throws NodeIdException, SQLException, InterruptedException {
        long until = clock.nanoTime() + wait.toNanos();
        long backoff = WAIT_MIN_NANOS;
        for (;;) {
            try {
                return tryAcquire();
            } catch (NodeIdException | SQLException e) {
                if (e instanceof NodeIdException n && n.reason() != NodeIdException.Reason.NO_NODE_ID_AVAILABLE
                        || e instanceof SQLException q && !Retry.retryable(q)) {
                    throw e;
                }
                long left = until - clock.nanoTime();
                if (left <= 0) {
                    throw e;
                }
                long d = Math.min(backoff, left);
                TimeUnit.NANOSECONDS.sleep(d / 2 + java.util.concurrent.ThreadLocalRandom.current().nextLong(Math.max(d / 2, 1)));
                backoff = Math.min(backoff * 2, WAIT_MAX_NANOS);
            }
        }
    }

    /** Claims once: NO_NODE_ID_AVAILABLE when none is claimable. */
    public Lease tryAcquire() throws NodeIdException, SQLException {
        LeaseStore s;
        synchronized (this) {
            if (claims == null) {
                claims = stores.get();
            }
            s = claims;
        }
        s.prepare(); // connecting is no part of the lease's time
        long t0 = clock.nanoTime();
        long wall = clock.currentTimeMillis();
        LeaseStore.Claim c = s.claim(owner, ttlMs, Lease.horizonFor(wall, ttlMs), lo, hi,
                lo == null ? Long.valueOf((1L << nodeBits) - 1) : null, TimeUnit.MILLISECONDS.toNanos(ttlMs));
        switch (c.status()) {
            case "ok":
                break;
            case "all_held":
            case "cooling":
                throw new NodeIdException(NodeIdException.Reason.NO_NODE_ID_AVAILABLE, "nodeid: no node ID available in table " + table
                        + ": " + c.status() + " (" + c.held() + " held, " + c.cooling() + " not claimable yet"
                        + (c.soonest() != null ? ", node ID " + c.soonest() + " after " + c.soonestMs() : "") + ")");
            default:
                throw new NodeIdException(NodeIdException.Reason.TABLE, "nodeid: claim on table " + table + ": status " + c.status()
                        + " (docs/sql.md: ttl_above_max, restore_pending, creation_pending or unconfigured; nodeid init settles the last three)");
        }
        LeaseStore renewals = stores.get();
        Lease l = new Lease(renewals, clock, table, owner, ttlMs, t0, c);
        if (l.endCause() != null) {
            try {
                l.releaseStamped(c.afterMs());
            } catch (NodeIdException | SQLException ignored) {
                // it lapses
            }
            throw new NodeIdException(NodeIdException.Reason.LEASE_ENDED, EndCause.EXPIRED,
                    "nodeid: the claim of node ID " + c.nodeId() + " took longer than the lease allows", null);
        }
        if (renewThread) {
            l.start();
        }
        return l;
    }

    /** Closes the claims' connection; leases keep their own until released. */
    public synchronized void close() {
        if (claims != null) {
            claims.close();
            claims = null;
        }
    }
}
