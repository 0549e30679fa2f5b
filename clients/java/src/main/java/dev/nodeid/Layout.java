package dev.nodeid;

/**
 * The bit layout of an ID, as the Go snowflake package's Layout: from the
 * most significant bit, the time units since originMs, nodeBits of node ID,
 * and stepBits whose top epochBits hold the lease epoch modulo 2^epochBits
 * and whose other bits count IDs within a time unit. Every ID is below
 * 2^totalBits.
 */
public record Layout(long originMs, long unitMs, int totalBits, int nodeBits, int stepBits, int epochBits) {
    /** Twitter's and github.com/bwmarrin/snowflake's origin, 2010-11-04T01:42:54.657Z. */
    public static final long TWITTER_ORIGIN = 1288834974657L;

    /** The preset "bwmarrin" (Go: snowflake.DefaultLayout): 63 bits, 41 time bits of 1 ms, 10 node bits, 12 step bits. */
    public static final Layout BWMARRIN = new Layout(TWITTER_ORIGIN, 1, 63, 10, 12, 0);

    /** The preset "js53" (Go: snowflake.JS53): 53 bits from 2025-01-01, 41 time bits of 1 ms, 10 node bits, 2 step bits. */
    public static final Layout JS53 = new Layout(1735689600000L, 1, 53, 10, 2, 0);

    /** The fewest time bits a layout may leave, and the fewest bits to count IDs within a unit (as Go's). */
    public static final int MIN_TIME_BITS = 32, MIN_SEQ_BITS = 1, MAX_TOTAL_BITS = 63;

    public Layout {
        String why = null;
        if (originMs < 0) {
            why = "origin " + originMs + " is before 1970";
        } else if (unitMs < 1 || unitMs > 1000) {
            why = "time unit " + unitMs + " ms is not a whole number of milliseconds from 1 to 1000";
        } else if (totalBits < 1 || totalBits > MAX_TOTAL_BITS) {
            why = "total bits " + totalBits + ": at most " + MAX_TOTAL_BITS + " (the sign bit stays 0)";
        } else if (nodeBits < 1) {
            why = "node bits " + nodeBits + ": at least 1 is needed";
        } else if (stepBits < 1) {
            why = "step bits " + stepBits + ": at least 1 is needed";
        } else if (totalBits - nodeBits - stepBits < MIN_TIME_BITS) {
            why = "node bits " + nodeBits + " + step bits " + stepBits + " leave " + (totalBits - nodeBits - stepBits)
                    + " time bits of " + totalBits + "; at least " + MIN_TIME_BITS + " are needed";
        } else if (epochBits < 0 || stepBits - epochBits < MIN_SEQ_BITS) {
            why = "epoch bits " + epochBits + " leave " + (stepBits - epochBits) + " of the " + stepBits
                    + " step bits to count IDs; at least " + MIN_SEQ_BITS + " is needed";
        } else if ((1L << (totalBits - nodeBits - stepBits)) > (Long.MAX_VALUE - originMs) / unitMs) {
            why = "time bits end after the last unix millisecond a long holds";
        }
        if (why != null) {
            throw new IllegalArgumentException("nodeid: layout " + why);
        }
    }

    /** The preset called name ("bwmarrin" or "js53", any case). */
    public static Layout preset(String name) {
        if ("bwmarrin".equalsIgnoreCase(name)) {
            return BWMARRIN;
        }
        if ("js53".equalsIgnoreCase(name)) {
            return JS53;
        }
        throw new IllegalArgumentException("nodeid: layout \"" + name + "\" is not a preset; the presets are bwmarrin, js53");
    }

    /** This layout with n epoch bits. */
    public Layout withEpochBits(int n) {
        return new Layout(originMs, unitMs, totalBits, nodeBits, stepBits, n);
    }

    public int timeBits() {
        return totalBits - nodeBits - stepBits;
    }

    public int seqBits() {
        return stepBits - epochBits;
    }

    public long maxNode() {
        return (1L << nodeBits) - 1;
    }

    long maxT() {
        return 1L << timeBits();
    }

    long seqMask() {
        return (1L << seqBits()) - 1;
    }

    /** The last unix millisecond the layout can stamp. */
    public long endMs() {
        return originMs + maxT() * unitMs - 1;
    }

    /** The ID of time unit t (since the origin), node, epoch (reduced modulo 2^epochBits) and sequence seq. */
    long id(long t, long node, long epoch, long seq) {
        long epochMask = (1L << epochBits) - 1;
        return t << (nodeBits + stepBits) | node << stepBits | (epoch & epochMask) << seqBits() | seq;
    }

    /** The unix millisecond of the start of id's time unit. */
    public long millisOf(long id) {
        return (id >>> (nodeBits + stepBits)) * unitMs + originMs;
    }

    /** The node ID in id. */
    public long nodeOf(long id) {
        return id >>> stepBits & maxNode();
    }

    /** The epoch bits of id. */
    public long epochOf(long id) {
        return id >>> seqBits() & ((1L << epochBits) - 1);
    }

    /** The sequence number of id within its time unit. */
    public long seqOf(long id) {
        return id & seqMask();
    }
}
