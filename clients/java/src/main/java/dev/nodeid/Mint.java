package dev.nodeid;

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Leases a node ID of --table on --dsn (a JDBC URL) for --ttl, mints IDs of
 * --layout (bwmarrin unless told) as fast as the lease allows, and writes
 * them one a line, in decimal, to --out. It exits 5 when the lease ends, as
 * "nodeid run" does; on SIGTERM it stops minting, releases the lease with
 * the last millisecond stamped, and exits.
 *
 * <p>stderr gets one line when the lease is held ("nodeid-mint: leased node
 * N epoch E after_ms A") and one at the end ("nodeid-mint: ended: CAUSE;
 * minted N, refused M").
 *
 * <p>--unfenced-node N mints with a fixed worker ID and no lease at all: the
 * control that shows what nodeid prevents (two such processes with one N
 * mint the same IDs).
 */
public final class Mint {
    /** The exit status when the lease ends, as nodeid run's. */
    public static final int EXIT_LEASE_ENDED = 5;

    private static final String USAGE = "usage: Mint --table T --dsn jdbc:postgresql://... [--ttl 30s] [--layout bwmarrin|js53] "
            + "--out FILE [--owner NAME] [--wait 1m]\n       Mint --unfenced-node N [--layout L] --out FILE";

    private Mint() {
    }

    static Duration parseDuration(String flag, String s) {
        Matcher m = Pattern.compile("(\\d+)(ms|s|m|h)").matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException(flag + " " + s + ": a duration is a whole number with ms, s, m or h (30s)");
        }
        long n = Long.parseLong(m.group(1));
        switch (m.group(2)) {
            case "ms":
                return Duration.ofMillis(n);
            case "s":
                return Duration.ofSeconds(n);
            case "m":
                return Duration.ofMinutes(n);
            default:
                return Duration.ofHours(n);
        }
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("argument " + a + ": flags only\n" + USAGE);
            }
            String k = a.substring(2), v;
            int eq = k.indexOf('=');
            if (eq >= 0) {
                v = k.substring(eq + 1);
                k = k.substring(0, eq);
            } else if (i + 1 < args.length) {
                v = args[++i];
            } else {
                throw new IllegalArgumentException("flag --" + k + " needs a value\n" + USAGE);
            }
            if (!k.matches("table|dsn|ttl|layout|out|owner|wait|unfenced-node")) {
                throw new IllegalArgumentException("flag --" + k + " is unknown\n" + USAGE);
            }
            m.put(k, v);
        }
        return m;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> f;
        try {
            f = parse(args);
            if (!f.containsKey("out")) {
                throw new IllegalArgumentException("--out is required\n" + USAGE);
            }
        } catch (IllegalArgumentException e) {
            System.err.println("nodeid-mint: " + e.getMessage());
            System.exit(2);
            return;
        }
        Layout layout = Layout.preset(f.getOrDefault("layout", "bwmarrin"));
        try (Writer out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(f.get("out")), StandardCharsets.US_ASCII), 1 << 16)) {
            if (f.containsKey("unfenced-node")) {
                unfenced(out, layout, Long.parseLong(f.get("unfenced-node")));
                return;
            }
            for (String k : new String[] {"table", "dsn"}) {
                if (!f.containsKey(k)) {
                    System.err.println("nodeid-mint: --" + k + " is required\n" + USAGE);
                    System.exit(2);
                }
            }
            System.exit(fenced(out, layout, f));
        }
    }

    private static int fenced(Writer out, Layout layout, Map<String, String> f) throws Exception {
        Leaser.Builder b = Leaser.builder(ConnectionSource.of(f.get("dsn"), null)).table(f.get("table"))
                .ttl(parseDuration("--ttl", f.getOrDefault("ttl", "30s"))).nodeBits(layout.nodeBits());
        if (f.containsKey("owner")) {
            b.owner(f.get("owner"));
        }
        Leaser leaser = b.build();
        Lease lease = leaser.acquire(parseDuration("--wait", f.getOrDefault("wait", "1m")));
        leaser.close();
        FencedGenerator gen = new FencedGenerator(lease, layout);
        System.err.printf("nodeid-mint: leased node %d epoch %d after_ms %d owner %s%n", lease.nodeId(), lease.epoch(),
                lease.previousHorizon(), lease.owner());
        System.err.flush();

        CountDownLatch finished = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        final boolean[] stopping = {false};
        Thread hook = new Thread(() -> {
            synchronized (stopping) {
                stopping[0] = true;
            }
            main.interrupt();
            try {
                finished.await();
            } catch (InterruptedException ignored) {
                // exit
            }
        });
        Runtime.getRuntime().addShutdownHook(hook);

        long minted = 0, refused = 0, lastFlush = System.nanoTime();
        EndCause cause = null;
        for (;;) {
            synchronized (stopping) {
                if (stopping[0]) {
                    break;
                }
            }
            long id;
            try {
                id = gen.next();
            } catch (NodeIdException e) {
                refused++;
                if (e.reason() == NodeIdException.Reason.LEASE_ENDED) {
                    cause = e.endCause();
                    break;
                }
                if (e.reason() == NodeIdException.Reason.TIME_OVERFLOW) {
                    System.err.println("nodeid-mint: " + e.getMessage());
                    break;
                }
                try {
                    Thread.sleep(1); // CLOCK_AHEAD clears at the next renewal; CLOCK_BEHIND with time
                } catch (InterruptedException stop) {
                    // the loop's check of stopping ends it
                }
                continue;
            }
            out.write(Long.toString(id));
            out.write('\n');
            minted++;
            long now = System.nanoTime();
            if (now - lastFlush > 20_000_000L) {
                out.flush();
                lastFlush = now;
            }
        }
        Thread.interrupted();
        out.flush();
        String how = cause == null ? "stopped" : cause.name().toLowerCase();
        try {
            lease.close();
        } catch (SQLException e) {
            System.err.println("nodeid-mint: release: " + e.getMessage());
        }
        System.err.printf("nodeid-mint: ended: %s; minted %d, refused %d%n", how, minted, refused);
        System.err.flush();
        finished.countDown();
        synchronized (stopping) {
            if (stopping[0]) {
                return 0; // the JVM is exiting for the signal: System.exit would wait for the hook forever
            }
        }
        Runtime.getRuntime().removeShutdownHook(hook);
        return EXIT_LEASE_ENDED;
    }

    private static void unfenced(Writer out, Layout layout, long node) throws IOException {
        if (node < 0 || node > layout.maxNode()) {
            throw new IllegalArgumentException("--unfenced-node " + node + " is outside 0-" + layout.maxNode());
        }
        long lastT = -1, seq = 0, lastFlush = System.nanoTime();
        for (;;) {
            long t = (System.currentTimeMillis() - layout.originMs()) / layout.unitMs();
            if (t > lastT) {
                lastT = t;
                seq = 0;
            } else if (++seq > layout.seqMask()) {
                Thread.onSpinWait();
                seq--;
                continue;
            }
            out.write(Long.toString(layout.id(lastT, node, 0, seq)));
            out.write('\n');
            long now = System.nanoTime();
            if (now - lastFlush > 20_000_000L) {
                out.flush();
                lastFlush = now;
            }
        }
    }
}
