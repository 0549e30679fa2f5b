// A minimal Snowflake generator that knows nothing of nodeid, as run by
// "nodeid run --export": see gen.py for the layouts and the clock. It mints
// IDs into DIR/PID, one a line, until DIR/stop exists or SIGTERM.
import fs from "node:fs";
import path from "node:path";

const TWEPOCH = 1288834974657n;
const [layout, out] = process.argv.slice(2);
let fields;
if (layout === "5+5") {
  const worker = BigInt(process.env.SEQUENCE_WORKERID);
  const dc = BigInt(process.env.SEQUENCE_DATACENTERID);
  if (worker < 0n || worker > 31n || dc < 0n || dc > 31n) throw new Error(`worker ${worker} or datacenter ${dc} out of 0-31`);
  fields = (dc << 17n) | (worker << 12n);
} else {
  const worker = BigInt(process.env.WORKER_ID);
  if (worker < 0n || worker > 1023n) throw new Error(`worker ${worker} out of 0-1023`);
  fields = worker << 12n;
}
let offset = 0;
if (process.env.NODEID_RUN_TEST_CLOCK_FILE) {
  offset = parseInt(fs.readFileSync(process.env.NODEID_RUN_TEST_CLOCK_FILE, "utf8").trim(), 10);
}
const now = () => Date.now() + offset;

let stopping = false;
process.on("SIGTERM", () => { stopping = true; });
const fd = fs.openSync(path.join(out, String(process.pid)), "a");
const stop = path.join(out, "stop");
let last = -1, seq = 0;

function tick() {
  if (stopping || fs.existsSync(stop)) {
    fs.closeSync(fd);
    return;
  }
  let batch = "";
  for (let i = 0; i < 3; i++) {
    let ms = now();
    if (ms < last) throw new Error("clock moved backwards");
    if (ms === last) {
      seq = (seq + 1) & 4095;
      while (seq === 0 && ms <= last) ms = now();
    } else {
      seq = 0;
    }
    last = ms;
    batch += `${((BigInt(ms) - TWEPOCH) << 22n) | fields | BigInt(seq)}\n`;
  }
  fs.writeSync(fd, batch);
  setTimeout(tick, 1);
}
tick();
