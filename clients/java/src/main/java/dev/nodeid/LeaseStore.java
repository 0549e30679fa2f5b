package dev.nodeid;

import java.sql.SQLException;

/**
 * The table's client functions (docs/sql.md), one call each: JdbcStore
 * calls them, the unit tests give a fake. A call that did not answer within
 * timeoutNanos is cancelled and throws; it may have committed all the same.
 */
interface LeaseStore {
    /** A row of T_claim. leftNanos is expires_at - now; unset fields are null. */
    record Claim(String status, Long nodeId, Long epoch, Long afterMs, Long untilMs, Long leftNanos,
            Long held, Long cooling, Long soonest, Long soonestMs, long nowMs) {
    }

    /** A row of T_renew or T_release. leftNanos (renew's expires_at - now) is null for a release or a refusal. */
    record Outcome(String status, Long untilMs, Long leftNanos, String holder, Long rowEpoch, String endReason) {
    }

    Claim claim(String owner, long ttlMs, long horizonMs, Long lo, Long hi, Long nodeLimit, long timeoutNanos) throws SQLException;

    Outcome renew(long nodeId, String owner, long epoch, long ttlMs, long horizonMs, long timeoutNanos) throws SQLException;

    Outcome release(long nodeId, String owner, long epoch, Long lastMs, long timeoutNanos) throws SQLException;

    /**
     * Opens the store's connection if it has none, so that the time a call
     * is measured from (t0, read just before it) is not spent connecting.
     * A failure is left for the call to meet.
     */
    default void prepare() {
    }

    /** Closes what the store holds (its connection). */
    default void close() {
    }
}
