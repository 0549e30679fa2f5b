package dev.nodeid;

import java.sql.SQLException;

final class Retry {
    private Retry() {
    }

    /**
     * Whether a failed call is worth another attempt: a connection or
     * cancel failure (SQLSTATE classes 08, 57, 40, 53, or none), not an
     * invalid parameter (22023), a missing grant (42501) or function (42883).
     */
    static boolean retryable(SQLException e) {
        String s = e.getSQLState();
        if (s == null || s.length() < 2) {
            return true;
        }
        switch (s.substring(0, 2)) {
            case "08": case "57": case "40": case "53": case "XX":
                return true;
            default:
                return false;
        }
    }
}
