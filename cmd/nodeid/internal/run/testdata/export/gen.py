#!/usr/bin/env python3
"""A minimal Snowflake generator that knows nothing of nodeid, as run by
"nodeid run --export": it takes its worker fields from the environment and
mints IDs into DIR/PID, one a line, until DIR/stop exists or SIGTERM.

Layouts (from the Twitter epoch, as hutool and MyBatis-Plus):
  5+5: 41 time bits, SEQUENCE_DATACENTERID (5 bits), SEQUENCE_WORKERID (5 bits), 12 sequence bits
  10:  41 time bits, WORKER_ID (10 bits), 12 sequence bits
Its clock is the wall clock plus the offset in milliseconds held by the file
NODEID_RUN_TEST_CLOCK_FILE names (read once, at the start), if set."""
import os
import signal
import sys
import time

TWEPOCH = 1288834974657
layout, out = sys.argv[1], sys.argv[2]
if layout == "5+5":
    worker, dc = int(os.environ["SEQUENCE_WORKERID"]), int(os.environ["SEQUENCE_DATACENTERID"])
    if not (0 <= worker < 32 and 0 <= dc < 32):
        sys.exit("worker %d or datacenter %d out of 0-31" % (worker, dc))
    fields = dc << 17 | worker << 12
else:
    worker = int(os.environ["WORKER_ID"])
    if not 0 <= worker < 1024:
        sys.exit("worker %d out of 0-1023" % worker)
    fields = worker << 12
offset = 0
if os.environ.get("NODEID_RUN_TEST_CLOCK_FILE"):
    with open(os.environ["NODEID_RUN_TEST_CLOCK_FILE"]) as f:
        offset = int(f.read().strip())

stopping = False


def term(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, term)
last, seq = -1, 0
f = open(os.path.join(out, str(os.getpid())), "a")
stop = os.path.join(out, "stop")
while not stopping and not os.path.exists(stop):
    batch = []
    for _ in range(3):
        ms = int(time.time() * 1000) + offset
        if ms < last:
            sys.exit("clock moved backwards")
        if ms == last:
            seq = (seq + 1) & 4095
            while seq == 0 and ms <= last:
                ms = int(time.time() * 1000) + offset
        else:
            seq = 0
        last = ms
        batch.append("%d\n" % ((ms - TWEPOCH) << 22 | fields | seq))
    f.write("".join(batch))
    f.flush()
    time.sleep(0.001)
