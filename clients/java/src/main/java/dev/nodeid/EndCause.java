package dev.nodeid;

/** Why a lease ended: the causes of the Go library's lease end errors. */
public enum EndCause {
    /** Another holder claimed the node ID (the row has a later epoch or another owner). Go: ErrTakenOver. */
    TAKEN_OVER("taken over by another holder"),
    /** The local deadline passed without a renewal, or the database found the lease lapsed. Go: ErrExpired. */
    EXPIRED("lease expired"),
    /** An operator evicted the lease. Go: ErrEvicted. */
    EVICTED("lease evicted by an operator"),
    /** The row has an earlier epoch than the claim's: a database failover lost the claim. Go: ErrFailover. */
    FAILOVER("claim lost in a database failover"),
    /** The holder released the lease. Go: ErrReleased. */
    RELEASED("lease released");

    private final String text;

    EndCause(String text) {
        this.text = text;
    }

    /** True for a loss: every cause but RELEASED (Go: errors.Is(err, ErrLeaseLost)). */
    public boolean lost() {
        return this != RELEASED;
    }

    @Override
    public String toString() {
        return text;
    }

    /**
     * The cause of a renewal or release that answered status (docs/sql.md,
     * "Statuses of renew, release and verify"), for a claim of epoch whose
     * row now has rowEpoch (null if there is no row). Null for "ok".
     */
    public static EndCause ofStatus(String status, long epoch, Long rowEpoch) {
        switch (status) {
            case "ok":
                return null;
            case "epoch_mismatch":
                return rowEpoch != null && rowEpoch < epoch ? FAILOVER : TAKEN_OVER;
            case "not_owner":
            case "no_row":
                return TAKEN_OVER;
            case "lapsed":
                return EXPIRED;
            case "released":
                return RELEASED;
            case "evicted":
                return EVICTED;
            default:
                throw new IllegalArgumentException("status " + status + " is not one of docs/sql.md's statuses of renew and release");
        }
    }
}
