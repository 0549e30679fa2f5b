// The minting loop of sapphire.mjs and flake.mjs: next() mints one ID;
// argv holds DIR and BURST. IDs go to DIR/PID, one a line, BURST at a time
// every 2 ms, until DIR/stop exists or SIGTERM, which stops minting at
// once.
import fs from "node:fs";
import path from "node:path";

export function mintLoop(next, [dir, burst]) {
  let stopping = false;
  process.on("SIGTERM", () => { stopping = true; });
  const fd = fs.openSync(path.join(dir, String(process.pid)), "a");
  const stop = path.join(dir, "stop");
  function tick() {
    if (stopping || fs.existsSync(stop)) {
      fs.closeSync(fd);
      return;
    }
    let batch = "";
    for (let i = 0; i < Number(burst); i++) batch += next() + "\n";
    fs.writeSync(fd, batch);
    setTimeout(tick, 2);
  }
  tick();
}
