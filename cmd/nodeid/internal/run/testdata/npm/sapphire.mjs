// @sapphire/snowflake under "nodeid run --export": it mints IDs into
// DIR/PID, one a line, until DIR/stop exists or SIGTERM.
//
//   node sapphire.mjs DIR BURST     mint, BURST IDs at a time, with the guard
//   node sapphire.mjs --unguarded   mint 5000 IDs in one millisecond without
//                                   it, and print how many are distinct
//
// The library takes a workerId (bits 17-21) and a processId (bits 12-16):
// the node ID's low half goes to the lower field, processId, so that the
// ID's 10 node bits are the node ID. Its increment is one counter that
// wraps at 4096 whatever the millisecond, and it takes any timestamp
// given, earlier ones included: the guard below is what the application
// must add, at most 4096 IDs a millisecond and no millisecond before the
// last one.
import { Snowflake } from "@sapphire/snowflake";
import { mintLoop } from "./mint.mjs";

const ORIGIN = 1288834974657n; // Twitter's, bwmarrin's: nodeid decode's default
const sf = new Snowflake(ORIGIN);

if (process.argv[2] === "--unguarded") {
  const ms = Date.now();
  const seen = new Set();
  for (let i = 0; i < 5000; i++) seen.add(sf.generate({ timestamp: ms, workerId: 1n, processId: 8n }));
  console.log(seen.size);
  process.exit(0);
}

const field = (name) => {
  const v = Number(process.env[name]);
  if (!Number.isInteger(v) || v < 0 || v > 31) throw new Error(`${name}=${process.env[name]}: not a field of 0-31`);
  return BigInt(v); // the library masks with 0b11111 silently
};
const workerId = field("SNOWFLAKE_WORKER_ID");
const processId = field("SNOWFLAKE_PROCESS_ID");

let lastMs = -1;
let used = 0;
function next() {
  let ms = Date.now();
  while (ms < lastMs) ms = Date.now(); // never a millisecond before the last
  if (ms === lastMs && used === 4096) {
    while (ms <= lastMs) ms = Date.now(); // the counter would wrap: next millisecond
  }
  if (ms !== lastMs) {
    lastMs = ms;
    used = 0;
  }
  used++;
  return sf.generate({ timestamp: ms, workerId, processId });
}

mintLoop(next, process.argv.slice(2));
