#!/usr/bin/python3
"""Cost settled from the response (a rule's cost_from_response):
the request is admitted at the rule's cost (1), and the backend's
X-RateLimit-Cost says what it cost; the difference is charged or given
back. With this worker's own buckets (no store) and with leases from a
real redis-server, 20 units a minute, burst 20:

- a key whose requests cost 5 each is refused at its fifth (4 x 5 = 20;
  admitted at 1 each, twenty would pass);
- a key whose requests cost 0 each is never refused in 30 (the 1 given
  back each time; at 1 each, the 21st would be refused);
- a key whose responses say nothing is held to the declared 1: 20, then
  refused;
- a value that is no number leaves the declared cost (counted);
- HTTP/1.0 requests, and POSTs whose response a 100 Continue precedes:
  settled as the others, the fifth costing 5 refused;
- a head the backend sends in two segments, cut anywhere in the field's
  line, is read on from where the first ended: 24 costing 0 all pass, and
  of those costing 5 the fifth is refused;
- ten requests costing 5, pipelined in one segment: all ten admitted (each
  at the declared 1, before any response), and every one of their
  responses settled: 50 units spent, the bucket 30 into debt, so the
  key's next request is refused (settling only the last, it had 6 left);
- two keys pipelined on one connection: the second cannot wait in the
  record the first holds, and is charged at once the most it could cost
  (a burst): overcharged, never under;
- a client that resets its connection before the response comes back is
  charged the same way;
- counters: settled, units charged and given back;
- all of it again with keep_alive and headers_on_allow (the connection
  translated, budgets inserted into the very responses whose field is
  read), where each allowed response's RateLimit counts the costs settled
  before it: 19, 14, 9, 4 left for requests costing 5.

usage: test_cost.py PATH/TO/sluice
"""

import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: bulk, scope: key, match: {path_prefix: /bulk/}, limit: 20/min, burst: 20,
     cost_from_response: X-RateLimit-Cost}
response: {retry_jitter: 0}
%s
"""
# 50 ms, not the default 5: this test is of the cost, and under ASan a
# reply later than 5 ms is decided without the store (what e2e/accuracy
# measures); one such fresh key was refused once in nine ASan runs
STORE = """store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 50}
"""


PIPELINE = r"""
import json, re, socket, sys
n, keys = int(sys.argv[3]), sys.argv[2].encode().split(b",")
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.sendall(b"".join(b"GET /bulk/p%d?cost=5 HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n\r\n"
                   % (i, keys[i % len(keys)]) for i in range(n)))
data = b""
while len(re.findall(rb"HTTP/1.1 (\d{3}) ", data)) < n or not data.endswith(b"}\n"):
    c = s.recv(65536)
    if not c:
        break
    data += c
print(json.dumps([int(x) for x in re.findall(rb"HTTP/1.1 (\d{3}) ", data)]))
"""

RESET = r"""
import socket, struct, sys, time
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.sendall(b"GET /bulk/r?cost=5&delay=0.3 HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n\r\n"
          % sys.argv[2].encode())
time.sleep(0.05)
s.close()  # an RST, before the backend answers
"""


def codes(t, key, query, n, extra=()):
    """n requests on one connection (curl), their statuses; %d in the
    query is the request's number."""
    args = ["curl", "-sS", "--max-time", "30", "-H", "X-API-Key: " + key,
            "-w", "%{http_code}\\n"] + list(extra)
    for i in range(n):
        q = query % i if "%d" in query else query
        args += ["-o", "/dev/null", "http://%s/bulk/%d?%s" % (S4, i, q)]
    r = t.client(*args, timeout=60)
    return [int(x) for x in r.stdout.split()]


AFTER_FIN = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], 80), timeout=10)
req = (b"GET /bulk/%s?cost=5 HTTP/1.0\r\nHost: x\r\nX-API-Key: " + sys.argv[3].encode() +
       b"\r\n\r\n")
s.sendall(req % b"f")
while s.recv(65536):
    pass  # to the server's FIN
s.sendall(req % sys.argv[2].encode())
try:
    if s.recv(65536):
        print("answered")
    time.sleep(0.3)
    s.sendall(b"x")  # fails once an RST came
    print("open")
except (ConnectionResetError, BrokenPipeError):
    print("reset")
"""


def after_fin(res, t, label):
    """A request sent on a connection after the server's FIN came: it
    cannot be answered (nor, RFC 9112 9.6, acted on). Not decided, not
    forwarded: both sides reset, and the client retries elsewhere."""
    before = t.sluice.stats()
    path = "late-" + label
    r = t.client("/usr/bin/python3", "-c", AFTER_FIN, S4, path, "k-fin-" + label, timeout=30)
    st = t.sluice.stats()
    seen = [e["path"] for e in t.backend_log() if path in e["path"]]
    res.check(r.stdout.strip() == "reset" and seen == [] and
              st["after_close"] - before["after_close"] == 1 and
              st["requests"] - before["requests"] == 1,
              label + ": a request after the server's FIN: reset, never decided nor "
              "forwarded (client %r, backend saw %s, after_close +%d, requests +%d)" % (
                  r.stdout.strip() or r.stderr[-200:], seen,
                  st["after_close"] - before["after_close"],
                  st["requests"] - before["requests"]))


def scenario(res, t, label):
    got = codes(t, "k-five-" + label, "cost=5", 6)
    res.eq(got, [200] * 4 + [429] * 2, label + ": cost 5 each: the fifth refused")
    got = codes(t, "k-zero-" + label, "cost=0", 30)
    res.eq(got, [200] * 30, label + ": cost 0 each: 30 of 30 allowed")
    got = codes(t, "k-none-" + label, "x=1", 22)
    # (20 a minute: a unit may come back while the 22 are sent)
    res.check(got[:20] == [200] * 20 and got[21] == 429,
              label + ": no field: the declared cost, 20 then refused (%s)" % got)
    none_ok = got.count(200)
    got = codes(t, "k-bad-" + label, "cost=lots", 3)
    res.eq(got, [200] * 3, label + ": a value that is no number: declared 1 each")
    # HTTP/1.0 (a connection each), and a POST that waits for 100 Continue
    # (the interim response passed over, the final one settles)
    # (the backend answers HTTP/1.0 as 1.1 without "Connection: close",
    # so curl may send its next request on the connection as the backend
    # closes it, and retry it on a new one: the keep-alive race. The one
    # the backend never read is not presumed: cost_unanswered)
    before = t.sluice.stats()
    got = codes(t, "k-ten-" + label, "cost=5", 6, ["-0"])
    after = t.sluice.stats()
    res.eq(got, [200] * 4 + [429] * 2, label + ": HTTP/1.0, cost 5: the fifth refused")
    res.eq(after["cost_presumed"] - before["cost_presumed"], 0,
           label + ": HTTP/1.0: none presumed (%d sent as the backend closed)" % (
               after["cost_unanswered"] - before["cost_unanswered"]))
    after_fin(res, t, label)
    got = codes(t, "k-100-" + label, "cost=5", 6,
                ["-H", "Expect: 100-continue", "--data-binary", "x" * 64])
    res.eq(got, [200] * 4 + [429] * 2,
           label + ": POSTs answered 100 Continue first, cost 5: the fifth refused")
    # heads cut 0..23 bytes into "X-RateLimit-Cost: 0\r\n..." (before the
    # name, inside it, at the colon, the value, the CR LF, the next line):
    # each read on in the next segment (one unread: the declared 1 stands,
    # the 21st refused)
    got = codes(t, "k-cut0-" + label, "cost=0&cut=%d", 24)
    res.eq(got, [200] * 24, label + ": heads cut anywhere in the field: 24 of 24 cost 0")
    got = codes(t, "k-cut5-" + label, "cost=5&cut=%d", 6)
    res.eq(got, [200] * 4 + [429] * 2,
           label + ": heads cut across segments, cost 5: the fifth refused")
    r = t.client("/usr/bin/python3", "-c", PIPELINE, S4, "k-pipe-" + label, "10", timeout=30)
    got = json.loads(r.stdout or "[]")
    res.eq(got, [200] * 10, label + ": ten pipelined: admitted at 1 each " + r.stderr[-200:])
    got = codes(t, "k-pipe-" + label, "cost=5", 1)
    res.eq(got, [429], label + ": and all ten settled: the key's next request refused")
    # two keys pipelined on one connection: the second cannot wait in the
    # record the first holds; it is charged the most it could cost (20)
    mix = ["k-mixa-" + label, "k-mixb-" + label]
    r = t.client("/usr/bin/python3", "-c", PIPELINE, S4, ",".join(mix), "2", timeout=30)
    res.eq(json.loads(r.stdout or "[]"), [200, 200], label + ": two keys pipelined")
    got = codes(t, mix[0], "cost=5", 1) + codes(t, mix[1], "cost=5", 1)
    res.eq(got, [200, 429], label + ": the first settled (5), the second presumed (20)")
    # a client that resets its connection before the response comes back
    r = t.client("/usr/bin/python3", "-c", RESET, S4, "k-rst-" + label, timeout=30)
    res.eq(r.returncode, 0, label + ": request sent, connection reset " + r.stderr[-200:])
    try:
        t.sluice.wait_for(lambda st: st["cost_presumed"] >= 2, timeout=10)
    except AssertionError:
        pass  # (what it reached is checked below)
    got = codes(t, "k-rst-" + label, "cost=5", 1)
    res.eq(got, [429], label + ": reset before its response: charged the most it could cost")
    s = t.sluice.stats()
    print("%s: %s" % (label, {k: v for k, v in s.items() if k.startswith("cost_") or
                              k in ("degraded", "parked", "rejected")}))
    res.eq(s["cost_charged"], (4 + 1 + 4 + 4 + 4 + 10 + 2) * 4 + 19 * 2,
           label + ": 4 units more for each request costing 5, 19 presumed twice")
    res.eq(s["cost_refunded"], 30 + 24, label + ": 1 back for each costing 0")
    res.eq(s["cost_unsettled"], 3, label + ": the three without a number")
    res.eq(s["cost_presumed"], 2, label + ": two presumed")
    res.eq(s["cost_settled"], 4 + 30 + none_ok + 4 + 1 + 4 + 24 + 4 + 10 + 2,
           label + ": settled: every other request allowed")
    # three keys pipelined: the middle one is decided alone, on the
    # worker's slice, and its cost presumed with the last's: units the
    # node's authority must keep (its bucket made by the charge was
    # swept as full, and the key served again)
    mix = ["k-tria-" + label, "k-trib-" + label, "k-tric-" + label]
    r = t.client("/usr/bin/python3", "-c", PIPELINE, S4, ",".join(mix), "3", timeout=30)
    res.eq(json.loads(r.stdout or "[]"), [200] * 3, label + ": three keys pipelined")
    got = [codes(t, k, "cost=5", 1)[0] for k in mix]
    res.eq(got, [200, 429, 429], label + ": the first settled (5), the others presumed (20)")


# One connection (http.client), each response's status and RateLimit.
BUDGETS = r"""
import http.client, json, sys
c = http.client.HTTPConnection(sys.argv[1], 80, timeout=5)
for i in range(int(sys.argv[3])):
    c.request("GET", "/bulk/b%d?cost=5" % i, headers={"X-API-Key": sys.argv[2]})
    r = c.getresponse()
    r.read()
    print(json.dumps([r.status, r.getheader("RateLimit")]))
"""


def budgets(res, t):
    """Each allowed response's budget counts the costs settled before it:
    20, less 5 for each request before (19, 14, 9, 4 left after each)."""
    r = t.client("/usr/bin/python3", "-c", BUDGETS, S4, "k-budget", "6", timeout=30)
    rows = [json.loads(x) for x in r.stdout.split("\n") if x]
    res.eq([x[0] for x in rows], [200] * 4 + [429] * 2,
           "budget: cost 5 each on one connection: the fifth refused " + r.stderr[-200:])
    left = [int(re.search(r";r=(\d+)", x[1]).group(1)) if x[1] else None for x in rows[:4]]
    # (20 a minute: a unit may come back while they are sent)
    res.check(len(left) == 4 and all(v is not None and 0 <= v - (19 - 5 * i) <= 1
                                     for i, v in enumerate(left)),
              "budget: each response's RateLimit counts the costs settled before it "
              "(%s, want 19, 14, 9, 4)" % left)


def main():
    binary = sys.argv[1]
    res = sltest.Results("cost")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "local.yaml")
        with open(conf, "w") as f:
            f.write(CONF % "")
        with sltest.Topology(binary, conf, tmp, prefix="co%d" % (os.getpid() % 1000)) as t:
            scenario(res, t, "local")
            res.eq(t.sluice.stop(), 0, "local: clean shutdown")
        # the same with the connection translated (keep_alive 429s, budgets
        # inserted into the responses whose fields are read)
        conf = os.path.join(tmp, "budget.yaml")
        with open(conf, "w") as f:
            f.write((CONF % "").replace(
                "response: {retry_jitter: 0}",
                "response: {retry_jitter: 0, keep_alive: true, headers_on_allow: true}"))
        with sltest.Topology(binary, conf, tmp, prefix="cb%d" % (os.getpid() % 1000)) as t:
            scenario(res, t, "budget")
            budgets(res, t)
            res.eq(t.sluice.stop(), 0, "budget: clean shutdown")
        port = sltest.free_port()
        redis = sltest.start_redis(port, tmp)
        try:
            conf = os.path.join(tmp, "leased.yaml")
            with open(conf, "w") as f:
                f.write(CONF % (STORE % port))
            with sltest.Topology(binary, conf, tmp, prefix="cl%d" % (os.getpid() % 1000)) as t:
                scenario(res, t, "leased")
                res.eq(t.sluice.stop(), 0, "leased: clean shutdown")
        finally:
            sltest.stop_all({port: redis})
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
