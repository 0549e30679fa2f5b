import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A minimal Snowflake generator that knows nothing of nodeid, as run by
 * "nodeid run --export": see gen.py for the layouts and the clock. It mints
 * IDs into DIR/PID, one a line, until DIR/stop exists or SIGTERM.
 */
public class Gen {
    static final long TWEPOCH = 1288834974657L;
    static volatile boolean stopping = false;

    public static void main(String[] args) throws Exception {
        String layout = args[0];
        Path out = Path.of(args[1]);
        long fields;
        if (layout.equals("5+5")) {
            long worker = Long.parseLong(System.getenv("SEQUENCE_WORKERID"));
            long dc = Long.parseLong(System.getenv("SEQUENCE_DATACENTERID"));
            if (worker < 0 || worker > 31 || dc < 0 || dc > 31) {
                throw new IllegalArgumentException("worker " + worker + " or datacenter " + dc + " out of 0-31");
            }
            fields = dc << 17 | worker << 12;
        } else {
            long worker = Long.parseLong(System.getenv("WORKER_ID"));
            if (worker < 0 || worker > 1023) {
                throw new IllegalArgumentException("worker " + worker + " out of 0-1023");
            }
            fields = worker << 12;
        }
        long offset = 0;
        String clockFile = System.getenv("NODEID_RUN_TEST_CLOCK_FILE");
        if (clockFile != null && !clockFile.isEmpty()) {
            offset = Long.parseLong(Files.readString(Path.of(clockFile)).trim());
        }
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                main.join(1000);
            } catch (InterruptedException e) {
                // exiting anyway
            }
        }));
        Path stop = out.resolve("stop");
        long last = -1, seq = 0;
        try (FileOutputStream f = new FileOutputStream(out.resolve(Long.toString(ProcessHandle.current().pid())).toFile(), true)) {
            while (!stopping && !Files.exists(stop)) {
                StringBuilder batch = new StringBuilder();
                for (int i = 0; i < 3; i++) {
                    long ms = System.currentTimeMillis() + offset;
                    if (ms < last) {
                        throw new IllegalStateException("clock moved backwards");
                    }
                    if (ms == last) {
                        seq = (seq + 1) & 4095;
                        while (seq == 0 && ms <= last) {
                            ms = System.currentTimeMillis() + offset;
                        }
                    } else {
                        seq = 0;
                    }
                    last = ms;
                    batch.append((ms - TWEPOCH) << 22 | fields | seq).append('\n');
                }
                f.write(batch.toString().getBytes(StandardCharsets.US_ASCII));
                Thread.sleep(1);
            }
        }
    }
}
