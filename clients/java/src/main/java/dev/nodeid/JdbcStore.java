package dev.nodeid;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.Types;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The client functions of table T over one JDBC connection in autocommit:
 * each call is one statement and its own transaction, and keeps no session
 * state, so PgBouncer in transaction mode may put each on another server
 * connection. A call that outlives its timeout is cancelled (as JDBC's
 * setQueryTimeout does), and the connection aborted if the cancel does not
 * end it: the call may have committed all the same (docs/sql.md, rule 7),
 * so its caller never takes what it did not read. Any failure drops the
 * connection; the next call opens another.
 */
final class JdbcStore implements LeaseStore {
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "nodeid-timer");
        t.setDaemon(true);
        return t;
    });
    /**
     * Runs the cancels and aborts off the timer: a cancel opens a connection
     * of its own, which a partitioned network may hold for long, and must
     * not delay the abort that follows it.
     */
    private static final ExecutorService CANCELLER = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "nodeid-cancel");
        t.setDaemon(true);
        return t;
    });
    /** How long after its cancel a call's connection is aborted. */
    private static final long ABORT_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final ConnectionSource source;
    private final String claimSql, renewSql, releaseSql;
    private Connection conn; // guarded by this

    JdbcStore(ConnectionSource source, String table) {
        this.source = source;
        String f = table; // validated by Leaser: [schema.]name, lower case
        claimSql = "SELECT status, node_id, epoch, after_ms, until_ms, "
                + "(extract(epoch FROM expires_at - now) * 1000000)::bigint AS left_us, held, cooling, soonest, soonest_ms, "
                + "(extract(epoch FROM now) * 1000)::bigint AS now_ms "
                + "FROM " + f + "_claim(owner => ?, ttl_ms => ?, horizon_ms => ?, lo => ?, hi => ?, node_limit => ?)";
        renewSql = "SELECT status, until_ms, (extract(epoch FROM expires_at - now) * 1000000)::bigint AS left_us, "
                + "holder, row_epoch, end_reason "
                + "FROM " + f + "_renew(node_id => ?, owner => ?, epoch => ?, ttl_ms => ?, horizon_ms => ?)";
        releaseSql = "SELECT status, until_ms, NULL::bigint AS left_us, holder, row_epoch, end_reason "
                + "FROM " + f + "_release(node_id => ?, owner => ?, epoch => ?, last_ms => ?)";
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    private interface Reader<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private synchronized <T> T call(String sql, Binder b, Reader<T> r, long timeoutNanos) throws SQLException {
        if (timeoutNanos <= 0) {
            throw new SQLTimeoutException("nodeid: no time left for the call");
        }
        if (conn == null) {
            conn = source.open();
            conn.setAutoCommit(true);
        }
        Connection c = conn;
        boolean ok = false;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            b.bind(ps);
            ScheduledFuture<?> cancel = TIMER.schedule(() -> CANCELLER.execute(() -> {
                try {
                    ps.cancel();
                } catch (SQLException | RuntimeException ignored) {
                    // the abort below ends the call
                }
            }), timeoutNanos, TimeUnit.NANOSECONDS);
            ScheduledFuture<?> abort = TIMER.schedule(() -> CANCELLER.execute(() -> {
                try {
                    c.abort(Runnable::run);
                } catch (SQLException | RuntimeException ignored) {
                    // nothing more to do
                }
            }), timeoutNanos + ABORT_GRACE_NANOS, TimeUnit.NANOSECONDS);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("nodeid: the function answered no row", "XX000");
                }
                T v = r.read(rs);
                ok = true;
                return v;
            } finally {
                cancel.cancel(false);
                abort.cancel(false);
            }
        } finally {
            if (!ok) {
                dropConnection();
            }
        }
    }

    @Override
    public synchronized void prepare() {
        if (conn == null) {
            try {
                conn = source.open();
                conn.setAutoCommit(true);
            } catch (SQLException | RuntimeException e) {
                dropConnection(); // the call opens one again, and fails if it must
            }
        }
    }

    private void dropConnection() {
        try {
            if (conn != null) {
                conn.close();
            }
        } catch (SQLException | RuntimeException ignored) {
            // dropped either way
        }
        conn = null;
    }

    private static Long getLong(ResultSet rs, String col) throws SQLException {
        long v = rs.getLong(col);
        return rs.wasNull() ? null : v;
    }

    private static void setLong(PreparedStatement ps, int i, Long v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.BIGINT);
        } else {
            ps.setLong(i, v);
        }
    }

    private static void setInt(PreparedStatement ps, int i, Long v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.INTEGER);
        } else {
            ps.setInt(i, Math.toIntExact(v));
        }
    }

    private static Long micros(Long us) {
        return us == null ? null : us * 1000;
    }

    @Override
    public Claim claim(String owner, long ttlMs, long horizonMs, Long lo, Long hi, Long nodeLimit, long timeoutNanos)
            throws SQLException {
        return call(claimSql, ps -> {
            ps.setString(1, owner);
            ps.setLong(2, ttlMs);
            ps.setLong(3, horizonMs);
            setInt(ps, 4, lo);
            setInt(ps, 5, hi);
            setInt(ps, 6, nodeLimit);
        }, rs -> new Claim(rs.getString("status"), getLong(rs, "node_id"), getLong(rs, "epoch"), getLong(rs, "after_ms"),
                getLong(rs, "until_ms"), micros(getLong(rs, "left_us")), getLong(rs, "held"), getLong(rs, "cooling"),
                getLong(rs, "soonest"), getLong(rs, "soonest_ms"), rs.getLong("now_ms")), timeoutNanos);
    }

    private static Outcome outcome(ResultSet rs) throws SQLException {
        return new Outcome(rs.getString("status"), getLong(rs, "until_ms"), micros(getLong(rs, "left_us")),
                rs.getString("holder"), getLong(rs, "row_epoch"), rs.getString("end_reason"));
    }

    @Override
    public Outcome renew(long nodeId, String owner, long epoch, long ttlMs, long horizonMs, long timeoutNanos) throws SQLException {
        return call(renewSql, ps -> {
            ps.setInt(1, Math.toIntExact(nodeId));
            ps.setString(2, owner);
            ps.setLong(3, epoch);
            ps.setLong(4, ttlMs);
            ps.setLong(5, horizonMs);
        }, JdbcStore::outcome, timeoutNanos);
    }

    @Override
    public Outcome release(long nodeId, String owner, long epoch, Long lastMs, long timeoutNanos) throws SQLException {
        return call(releaseSql, ps -> {
            ps.setInt(1, Math.toIntExact(nodeId));
            ps.setString(2, owner);
            ps.setLong(3, epoch);
            setLong(ps, 4, lastMs);
        }, JdbcStore::outcome, timeoutNanos);
    }

    @Override
    public synchronized void close() {
        dropConnection();
    }
}
