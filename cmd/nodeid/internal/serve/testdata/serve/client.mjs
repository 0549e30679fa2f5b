// A client of "nodeid serve" with fetch: checks the answers, prints
// "node=N epoch=E" and then every ID it got, one a line.
const base = process.argv[2];

function fail(msg) {
  console.error("client.mjs: " + msg);
  process.exit(1);
}

const ids = [];
let r = await fetch(base + "/id");
let body = await r.text();
const node = r.headers.get("x-nodeid-node");
const epoch = r.headers.get("x-nodeid-epoch");
if (r.status !== 200 || !r.headers.get("content-type").startsWith("text/plain") || !/^\d+\n$/.test(body)) {
  fail(`/id: ${r.status} ${body}`);
}
if (!node || !epoch || !r.headers.get("x-nodeid-owner")) fail("/id lacks the lease headers");
ids.push(body.trim());

r = await fetch(base + "/ids?count=100");
body = await r.text();
const lines = body.trimEnd().split("\n");
if (r.status !== 200 || lines.length !== 100 || !lines.every((l) => /^\d+$/.test(l))) {
  fail(`/ids?count=100: ${r.status}, ${lines.length} lines`);
}
ids.push(...lines);

r = await fetch(base + "/ids?count=50", { headers: { Accept: "application/json" } });
body = await r.text();
const doc = JSON.parse(body);
if (r.status !== 200 || r.headers.get("content-type") !== "application/json" || doc.ids.length !== 50) {
  fail(`/ids JSON: ${r.status} ${body.slice(0, 200)}`);
}
if (!doc.ids.every((i) => typeof i === "string") || String(doc.node) !== node || String(doc.epoch) !== epoch) {
  fail(`/ids JSON fields: ${body.slice(0, 200)}`);
}
ids.push(...doc.ids);

for (const [path, method, want] of [["/ids?count=0", "GET", 400], ["/ids?count=x", "GET", 400],
  ["/ids?count=10001", "GET", 400], ["/nope", "GET", 404], ["/id", "POST", 405]]) {
  r = await fetch(base + path, { method });
  body = await r.text();
  if (r.status !== want || body.split("\n").length !== 2) fail(`${method} ${path}: ${r.status} ${body}, want ${want}`);
}

r = await fetch(base + "/healthz");
body = await r.text();
if (r.status !== 200 || body !== "ok\n" || r.headers.get("x-nodeid-node") !== node) fail(`/healthz: ${r.status} ${body}`);

console.log(`node=${node} epoch=${epoch}`);
console.log(ids.join("\n"));
