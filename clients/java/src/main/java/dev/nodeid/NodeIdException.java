package dev.nodeid;

/**
 * Why a lease or a generator refused: {@link #reason()} is one of the Go
 * library's error causes, and {@link #endCause()} says why the lease ended
 * when it did.
 */
public class NodeIdException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The causes, as the Go library's errors name them. */
    public enum Reason {
        /** The lease ended: see endCause(). Go: an *EndError. */
        LEASE_ENDED,
        /** The stamp would be after the horizon the lease recorded. Go: ErrClockAhead. */
        CLOCK_AHEAD,
        /** The clock did not pass the unit to stamp within the max wait. Go: ErrClockBehind. */
        CLOCK_BEHIND,
        /** The layout's time field is used up. Go: ErrTimeOverflow. */
        TIME_OVERFLOW,
        /** No node ID was claimable. Go: ErrNoNodeIDAvailable. */
        NO_NODE_ID_AVAILABLE,
        /** The table refused the claim for its configuration (ttl_above_max, restore_pending, creation_pending, unconfigured). */
        TABLE
    }

    private final Reason reason;
    private final EndCause endCause;

    public NodeIdException(Reason reason, String message) {
        this(reason, null, message, null);
    }

    public NodeIdException(Reason reason, EndCause endCause, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
        this.endCause = endCause;
    }

    static NodeIdException ended(long nodeId, long epoch, EndCause cause) {
        return new NodeIdException(Reason.LEASE_ENDED, cause,
                "nodeid: node ID " + nodeId + ", epoch " + epoch + ": " + cause, null);
    }

    public Reason reason() {
        return reason;
    }

    /** The cause of the lease's end for LEASE_ENDED, else null. */
    public EndCause endCause() {
        return endCause;
    }

    /** True if the lease was lost (ended for another cause than its release). */
    public boolean leaseLost() {
        return endCause != null && endCause.lost();
    }
}
