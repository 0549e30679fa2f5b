// flake-idgen under "nodeid run --export": it mints IDs into DIR/PID, one
// a line, until DIR/stop exists or SIGTERM (mint.mjs).
//
//   node flake.mjs DIR BURST     mint, BURST IDs at a time, with the guard
//   node flake.mjs --unguarded   call next() 5000 times in one millisecond
//                                without it, and print what it threw
//
// The library takes a datacenter (bits 17-21) and a worker (bits 12-16):
// the node ID's low half goes to the lower field, worker, so that the ID's
// 10 node bits are the node ID. Its next() throws once 4096 IDs are used
// in a millisecond, and when the clock is behind its last millisecond (its
// callback form, which would wait, fails on the latter): the guard below
// is what the application must add, waiting for the next millisecond and
// trying again.
import FlakeId from "flake-idgen";
import { mintLoop } from "./mint.mjs";

const ORIGIN = 1288834974657; // Twitter's, bwmarrin's: nodeid decode's default

if (process.argv[2] === "--unguarded") {
  const gen = new FlakeId({ datacenter: 1, worker: 8, epoch: ORIGIN });
  const ms = Date.now();
  Date.now = () => ms; // one millisecond, however long the loop takes
  try {
    for (let i = 0; i < 5000; i++) gen.next();
    console.log("no error");
  } catch (e) {
    console.log(e.message);
  }
  process.exit(0);
}

const field = (name) => {
  const v = Number(process.env[name]);
  if (!Number.isInteger(v) || v < 0 || v > 31) throw new Error(`${name}=${process.env[name]}: not a field of 0-31`);
  return v; // the library masks with 0x1F silently
};
const gen = new FlakeId({ datacenter: field("FLAKE_DATACENTER"), worker: field("FLAKE_WORKER"), epoch: ORIGIN });

function next() {
  for (;;) {
    try {
      return gen.next().readBigUInt64BE(0);
    } catch (e) {
      if (!/Sequence exceeded|Clock moved backwards/.test(e.message)) throw e;
      const ms = Date.now();
      while (Date.now() <= ms); // the next millisecond, then again
    }
  }
}

mintLoop(next, process.argv.slice(2));
