package dev.nodeid;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs lease steps through the Java client, one a line of stdin, and
 * prints one line per step, for the conformance test that runs the same
 * steps through the Go library on another table, in step, and compares the
 * lines:
 *
 * <pre>
 * java dev.nodeid.Conform JDBC_URL PROXY_JDBC_URL TABLE TTL_MS &lt; steps
 * </pre>
 *
 * A step is "VERB HOLDER" joined by a colon: claim (wait for a node ID),
 * try (no wait), renewed (wait for a renewal), release, release0 (saying
 * nothing was stamped), evict (the
 * operator's T_evict of the holder's lease), ended (wait for the end).
 * Holders whose names start with p connect through PROXY_JDBC_URL, which
 * the test partitions; they and those starting with q lease node IDs 3-3
 * only, the others 0-2.
 */
public final class Conform {
    private Conform() {
    }

    static String cause(EndCause c) {
        return c == null ? "held" : c.name().toLowerCase();
    }

    public static void main(String[] args) throws Exception {
        java.util.logging.Logger.getLogger("dev.nodeid").setLevel(java.util.logging.Level.OFF);
        String url = args[0], proxyUrl = args[1], table = args[2];
        Duration ttl = Duration.ofMillis(Long.parseLong(args[3]));
        ConnectionSource src = ConnectionSource.of(url, null);
        ConnectionSource proxied = ConnectionSource.of(proxyUrl, null);
        Map<String, Lease> leases = new HashMap<>();
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        try (Connection op = src.open()) {
            for (String step; (step = in.readLine()) != null;) {
                String[] s = step.split(":");
                String verb = s[0], h = s[1];
                String line = verb + " " + h + " ";
                if (leases.get(h) == null && !verb.equals("claim") && !verb.equals("try")) {
                    System.out.println(line + "no_lease");
                    continue;
                }
                switch (verb) {
                    case "claim":
                    case "try": {
                        Leaser.Builder b = Leaser.builder(h.startsWith("p") ? proxied : src).table(table).ttl(ttl).owner("java-" + h);
                        if (h.startsWith("p") || h.startsWith("q")) {
                            b.nodeRange(3, 3);
                        } else {
                            b.nodeRange(0, 2);
                        }
                        Leaser leaser = b.build();
                        try {
                            Lease l = verb.equals("claim") ? leaser.acquire(Duration.ofSeconds(30)) : leaser.tryAcquire();
                            leases.put(h, l);
                            line += "ok node=" + l.nodeId() + " epoch=" + l.epoch();
                        } catch (NodeIdException e) {
                            String m = e.getMessage();
                            line += m.contains(": cooling (") ? "cooling" : m.contains(": all_held (") ? "all_held" : "error " + m;
                        } finally {
                            leaser.close();
                        }
                        break;
                    }
                    case "renewed": {
                        Lease l = leases.get(h);
                        int n = l.renewals();
                        long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
                        while (l.renewals() == n && l.endCause() == null && System.nanoTime() < until) {
                            Thread.sleep(10);
                        }
                        line += l.renewals() > n ? "ok" : cause(l.endCause());
                        break;
                    }
                    case "release":
                    case "release0": {
                        try {
                            if (verb.equals("release0")) {
                                leases.get(h).releaseStamped(leases.get(h).previousHorizon());
                            } else {
                                leases.get(h).release();
                            }
                            line += "ok";
                        } catch (NodeIdException e) {
                            line += cause(e.endCause());
                        }
                        break;
                    }
                    case "evict": {
                        Lease l = leases.get(h);
                        try (PreparedStatement ps = op.prepareStatement("SELECT status FROM " + table + "_evict(node_id => ?, epoch => ?)")) {
                            ps.setInt(1, (int) l.nodeId());
                            ps.setLong(2, l.epoch());
                            try (ResultSet rs = ps.executeQuery()) {
                                rs.next();
                                line += rs.getString(1);
                            }
                        }
                        break;
                    }
                    case "ended":
                        line += cause(leases.get(h).awaitEnd(Duration.ofSeconds(15)));
                        break;
                    default:
                        throw new IllegalArgumentException("step " + step + ": unknown verb " + verb);
                }
                System.out.println(line);
                System.out.flush();
            }
        }
        for (Lease l : leases.values()) {
            l.close();
        }
    }
}
