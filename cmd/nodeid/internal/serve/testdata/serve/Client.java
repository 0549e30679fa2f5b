import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A client of "nodeid serve" with java.net.http.HttpClient: checks the
 * answers, prints "node=N epoch=E" and then every ID it got, one a line.
 */
public class Client {
    static final HttpClient http = HttpClient.newHttpClient();
    static String base;

    static HttpResponse<String> get(String path, String accept, String method) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .method(method, HttpRequest.BodyPublishers.noBody());
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static void fail(String msg) {
        System.err.println("Client.java: " + msg);
        System.exit(1);
    }

    static String header(HttpResponse<String> r, String name) {
        return r.headers().firstValue(name).orElse("");
    }

    public static void main(String[] args) throws Exception {
        base = args[0];
        List<String> ids = new ArrayList<>();
        HttpResponse<String> r = get("/id", null, "GET");
        String node = header(r, "X-Nodeid-Node"), epoch = header(r, "X-Nodeid-Epoch");
        if (r.statusCode() != 200 || !header(r, "Content-Type").startsWith("text/plain") || !r.body().matches("\\d+\n")) {
            fail("/id: " + r.statusCode() + " " + r.body());
        }
        if (node.isEmpty() || epoch.isEmpty() || header(r, "X-Nodeid-Owner").isEmpty()) {
            fail("/id lacks the lease headers");
        }
        ids.add(r.body().trim());

        r = get("/ids?count=100", null, "GET");
        String[] lines = r.body().split("\n");
        if (r.statusCode() != 200 || lines.length != 100) {
            fail("/ids?count=100: " + r.statusCode() + ", " + lines.length + " lines");
        }
        for (String l : lines) {
            if (!l.matches("\\d+")) {
                fail("/ids line " + l);
            }
            ids.add(l);
        }

        r = get("/ids?count=50", "application/json", "GET");
        if (r.statusCode() != 200 || !header(r, "Content-Type").equals("application/json")) {
            fail("/ids JSON: " + r.statusCode() + " " + r.body());
        }
        // The IDs are JSON strings: "ids":["1","2",...].
        Matcher m = Pattern.compile("\"ids\":\\[((?:\"\\d+\",?)*)\\],\"node\":(\\d+),\"epoch\":(\\d+)").matcher(r.body());
        if (!m.find() || !m.group(2).equals(node) || !m.group(3).equals(epoch)) {
            fail("/ids JSON fields: " + r.body());
        }
        Matcher q = Pattern.compile("\"(\\d+)\"").matcher(m.group(1));
        int n = 0;
        while (q.find()) {
            ids.add(q.group(1));
            n++;
        }
        if (n != 50) {
            fail("/ids JSON: " + n + " IDs, want 50");
        }

        Object[][] bad = {{"/ids?count=0", "GET", 400}, {"/ids?count=x", "GET", 400},
            {"/ids?count=10001", "GET", 400}, {"/nope", "GET", 404}, {"/id", "POST", 405}};
        for (Object[] c : bad) {
            r = get((String) c[0], null, (String) c[1]);
            if (r.statusCode() != (int) c[2] || r.body().split("\n", -1).length != 2) {
                fail(c[1] + " " + c[0] + ": " + r.statusCode() + " " + r.body() + ", want " + c[2]);
            }
        }

        r = get("/healthz", null, "GET");
        if (r.statusCode() != 200 || !r.body().equals("ok\n") || !header(r, "X-Nodeid-Node").equals(node)) {
            fail("/healthz: " + r.statusCode() + " " + r.body());
        }

        StringBuilder out = new StringBuilder("node=" + node + " epoch=" + epoch + "\n");
        for (String id : ids) {
            out.append(id).append('\n');
        }
        System.out.print(out);
    }
}
