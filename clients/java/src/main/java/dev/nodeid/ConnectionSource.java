package dev.nodeid;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/** Opens the connections a Leaser's calls run on: one for claims, one per lease. */
@FunctionalInterface
public interface ConnectionSource {
    Connection open() throws SQLException;

    /**
     * Connections of a JDBC URL (jdbc:postgresql://host:port/db?user=...),
     * with pgjdbc's server-side prepared statements off
     * (prepareThreshold=0) unless the URL or props set it, so that they
     * work through PgBouncer in transaction mode.
     */
    static ConnectionSource of(String jdbcUrl, Properties props) {
        if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException("nodeid: the JDBC URL must start with jdbc:postgresql: (the PostgreSQL JDBC driver's)");
        }
        Properties p = new Properties();
        if (props != null) {
            p.putAll(props);
        }
        if (!jdbcUrl.contains("prepareThreshold=") && !p.containsKey("prepareThreshold")) {
            p.setProperty("prepareThreshold", "0");
        }
        return () -> DriverManager.getConnection(jdbcUrl, p);
    }
}
