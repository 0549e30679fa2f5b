#!/usr/bin/env python3
"""A client of "nodeid serve" with urllib: checks the answers, prints
"node=N epoch=E" and then every ID it got, one a line."""
import json
import sys
import urllib.error
import urllib.request

base = sys.argv[1]


def get(path, accept=None, method="GET"):
    req = urllib.request.Request(base + path, method=method)
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def fail(msg):
    print("client.py: " + msg, file=sys.stderr)
    sys.exit(1)


ids = []
status, h, body = get("/id")
if status != 200 or not h["Content-Type"].startswith("text/plain"):
    fail("/id: %d %s %r" % (status, h["Content-Type"], body))
node, epoch = h["X-Nodeid-Node"], h["X-Nodeid-Epoch"]
if not node or not epoch or not h["X-Nodeid-Owner"]:
    fail("/id lacks the lease headers: %s" % dict(h))
if not body.endswith("\n") or not body.strip().isdigit():
    fail("/id body %r" % body)
ids.append(body.strip())

status, h, body = get("/ids?count=100")
lines = body.splitlines()
if status != 200 or len(lines) != 100 or not all(l.isdigit() for l in lines):
    fail("/ids?count=100: %d, %d lines" % (status, len(lines)))
ids += lines

status, h, body = get("/ids?count=50", accept="application/json")
doc = json.loads(body)
if status != 200 or h["Content-Type"] != "application/json" or len(doc["ids"]) != 50:
    fail("/ids JSON: %d %r" % (status, body[:200]))
if not all(isinstance(i, str) for i in doc["ids"]) or str(doc["node"]) != node or str(doc["epoch"]) != epoch:
    fail("/ids JSON fields: %r" % body[:200])
ids += doc["ids"]

for path, method, want in [("/ids?count=0", "GET", 400), ("/ids?count=x", "GET", 400),
                           ("/ids?count=10001", "GET", 400), ("/nope", "GET", 404), ("/id", "POST", 405)]:
    status, h, body = get(path, method=method)
    if status != want or body.count("\n") != 1:
        fail("%s %s: %d %r, want %d and one line" % (method, path, status, body, want))

status, h, body = get("/healthz")
if status != 200 or body != "ok\n" or h["X-Nodeid-Node"] != node:
    fail("/healthz: %d %r" % (status, body))

print("node=%s epoch=%s" % (node, epoch))
for i in ids:
    print(i)
