#!/usr/bin/python3
"""Allowed responses carry their budget (response.headers_on_allow),
end to end with real clients and the real backend:

- curl, one connection, bodies of 0 B to 200 kB, chunked and HEAD
  responses: every response to a limited path carries RateLimit-Policy
  and RateLimit of its strictest limit (per-key, 40 a minute), the
  remaining count one less each time, the body byte for byte what the
  backend sent (its length and digest), one connection throughout;
- Python's http.client on one connection: the same, the socket kept;
- pipelined (three requests in one segment, read raw): every response
  whole, none carrying a budget that is not its request's;
- a key the backend refuses (401) is not told its budget; a rule with
  headers_on_allow: false gives none; an unlimited path gives none;
- past the limit: 429s on the same connection, then allowed again;
- counters: budget_headers equals the budgets the clients read.

usage: test_budget.py PATH/TO/sluice
"""

import hashlib
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "budget.yaml")
S4 = "198.18.0.2"


def expected(n):
    return (bytes(range(ord("a"), ord("z") + 1)) * (n // 26 + 1))[:n]


# One connection, every response's status, headers and body digest, one
# JSON line each: what curl and http.client are checked against.
HTTPCLIENT = r"""
import hashlib, http.client, json, sys
c = http.client.HTTPConnection(sys.argv[1], 80, timeout=5)
c.connect()
sock = c.sock
for spec in sys.argv[3:]:
    method, path = spec.split(" ", 1)
    c.request(method, path, headers={"X-API-Key": sys.argv[2]})
    r = c.getresponse()
    body = r.read()
    print(json.dumps({"status": r.status, "headers": r.getheaders(),
                      "len": len(body), "sha": hashlib.sha256(body).hexdigest(),
                      "same": c.sock is sock}))
"""

PIPELINE = r"""
import json, socket, sys
CRLF = b"\r\n"
s = socket.create_connection((sys.argv[1], 80), timeout=5)
s.sendall(b"".join(b"GET /v1/pipe%d?size=%d HTTP/1.1\r\nHost: x\r\nX-API-Key: k-pipe\r\n\r\n"
                   % (i, 100 * i) for i in range(3)))
data, out = b"", []
while len(out) < 3:
    head, sep, rest = data.partition(CRLF + CRLF)
    if sep:
        lines = head.decode().split("\r\n")
        fields = [x.split(": ", 1) for x in lines[1:]]
        n = int(dict((k.lower(), v) for k, v in fields)["content-length"])
        if len(rest) >= n:
            out.append({"status": lines[0], "headers": fields, "body": rest[:n].decode()})
            data = rest[n:]
            continue
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(json.dumps(out))
"""


def rl(headers):
    """(policy, remaining) of a response's RateLimit fields, or None."""
    h = {k.lower(): v for k, v in headers}
    if "ratelimit" not in h:
        return None
    m = re.match(r'"([^"]+)";r=(\d+);t=(\d+)$', h["ratelimit"])
    p = re.match(r'"([^"]+)";q=(\d+);w=(\d+)$', h.get("ratelimit-policy", ""))
    return (m and m.group(1), int(m.group(2)) if m else -1,
            p and p.group(1), int(p.group(2)) if p else -1)


def run_httpclient(t, key, specs):
    r = t.client("/usr/bin/python3", "-c", HTTPCLIENT, S4, key, *specs, timeout=40)
    return [json.loads(line) for line in r.stdout.split("\n") if line], r.stderr


OPAQUE = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64,
            mbufs: 4095}
identity: {api_key_header: X-API-Key}
rules:
  - {name: secret-login-rule, scope: key, limit: 3/min, burst: 3}
response: {retry_jitter: 0, keep_alive: true, headers_on_allow: true, expose_rule: false}
"""


def opaque_names(res, binary, tmp):
    """response.expose_rule: false -- the rule's name in no byte of an
    allowed response or a 429 (fields, body), an opaque id in its place,
    the same on both and across requests."""
    conf = os.path.join(tmp, "opaque.yaml")
    with open(conf, "w") as f:
        f.write(OPAQUE)
    with sltest.Topology(binary, conf, tmp, prefix="bo%d" % (os.getpid() % 1000)) as t:
        r = t.client("curl", "-sS", "-i", "--max-time", "10", "-H", "X-API-Key: k-opaque",
                     *["http://%s/v1/o%d" % (S4, i) for i in range(5)], timeout=30)
        raw = r.stdout
        ids = set(re.findall(r'RateLimit: "([^"]+)"', raw, re.I))
        res.check("429 Too Many Requests" in raw and raw.count("200 OK") == 3,
                  "expose_rule off: three allowed, then refused (%d bytes read)" % len(raw))
        res.check("secret" not in raw and "login-rule" not in raw,
                  "expose_rule off: the rule's name in no byte sent")
        res.check(len(ids) == 1 and re.fullmatch(r"p[0-9a-f]{12}", ids.pop() or ""),
                  "one opaque policy id on allowed and refused responses alike (%s)"
                  % set(re.findall(r'RateLimit: "([^"]+)"', raw, re.I)))
        res.eq(t.sluice.stop(), 0, "expose_rule off: clean shutdown")


def main():
    res = sltest.Results("budget")
    seen = 0
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp) as t:
        # curl: sizes, chunked, HEAD, on one connection
        sizes = [0, 10, 1000, 1400, 5000, 65536, 200000]
        urls = ["/v1/c?size=%d" % n for n in sizes] + ["/v1/c?size=3000&chunked=1"]
        args = ["curl", "-sS", "--max-time", "20", "-H", "X-API-Key: k-curl", "-w",
                "%{http_code} %{num_connects} %header{ratelimit}|%header{ratelimit-policy}\\n"]
        outs = []
        for i, u in enumerate(urls):
            out = os.path.join(tmp, "body%d" % i)
            outs.append(out)
            args += ["-o", out, "http://%s%s" % (S4, u)]
        r = t.client(*args, timeout=40)
        got = [line.split() for line in r.stdout.split("\n") if line]
        res.eq([int(g[0]) for g in got], [200] * len(urls), "curl: all allowed " + r.stderr[-300:])
        res.eq([int(g[1]) for g in got], [1] + [0] * (len(urls) - 1),
               "curl: one connection for every response")
        bodies_ok = all(open(o, "rb").read() == expected(n) for o, n in zip(outs, sizes + [3000]))
        res.check(bodies_ok, "curl: every body byte for byte what the backend sent")
        budgets = [rl([("ratelimit", g[2].split("|")[0]),
                       ("ratelimit-policy", g[2].split("|")[1])]) if len(g) > 2 else None
                   for g in got]
        res.check(all(b is not None for b in budgets),
                  "curl: every response carries RateLimit (%s)" % budgets)
        if all(b is not None for b in budgets):
            res.eq([b[0] for b in budgets], ["per-key"] * len(urls), "the strictest limit named")
            res.eq([b[1] for b in budgets], list(range(39, 39 - len(urls), -1)),
                   "remaining one less each time")
            res.eq({(b[2], b[3]) for b in budgets}, {("per-key", 40)}, "RateLimit-Policy")
        seen += sum(b is not None for b in budgets)

        # http.client: GET of several sizes, chunked, HEAD
        specs = ["GET /v1/py?size=%d" % n for n in (0, 3, 1500, 40000)] + \
                ["HEAD /v1/py?size=500", "GET /v1/py?size=2500&chunked=1", "GET /free/py?size=7"]
        rows, err = run_httpclient(t, "k-py", specs)
        res.eq([x["status"] for x in rows], [200] * len(specs), "http.client: all allowed " + err[-300:])
        res.check(rows and all(x["same"] for x in rows), "http.client kept its socket")
        res.eq([x["len"] for x in rows], [0, 3, 1500, 40000, 0, 2500, 7], "http.client: body lengths")
        res.check(all(x["sha"] == hashlib.sha256(expected(n)).hexdigest()
                      for x, n in zip(rows, [0, 3, 1500, 40000, 0, 2500, 7])),
                  "http.client: bodies byte for byte")
        b = [rl(x["headers"]) for x in rows]
        res.eq([x and x[1] for x in b], [39, 38, 37, 36, 35, 34, None],
               "http.client: budgets in order, none on a path no rule limits")
        seen += sum(x is not None for x in b)

        # pipelined: three heads in one segment
        r = t.client("/usr/bin/python3", "-c", PIPELINE, S4, timeout=20)
        parts = json.loads(r.stdout or "[]")
        res.eq(len(parts), 3, "pipelined: three responses " + r.stderr[-200:])
        ok, carried = True, 0
        for i, p in enumerate(parts):
            if p["body"].encode() != expected(100 * i):
                ok = False
            x = rl(p["headers"])
            if x is not None:
                carried += 1
                # decided in order: request i left 39 - i
                ok = ok and x[1] == 39 - i
        res.check(ok, "pipelined: bodies whole, any budget its own request's")
        res.check(carried >= 1, "pipelined: the last decided carries its budget")
        seen += carried
        print("pipelined: %d of 3 carried a budget" % carried)

        # a claimed key the backend refuses; a rule that opts out
        rows, err = run_httpclient(t, "k-bad", ["GET /v1/x?status=401", "GET /v1/x?status=200"])
        res.eq([x["status"] for x in rows], [401, 200], "401 then 200 " + err[-200:])
        res.eq([rl(x["headers"]) is not None for x in rows], [False, True],
               "no budget on the 401 (a key the backend refused)")
        seen += sum(rl(x["headers"]) is not None for x in rows)
        rows, err = run_httpclient(t, "k-quiet", ["GET /quiet/a", "GET /quiet/b"])
        res.eq([rl(x["headers"]) for x in rows], [None, None], "headers_on_allow: false gives none")

        # past the limit on one connection, the connection kept
        rows, err = run_httpclient(t, "k-lim", ["GET /v1/l%d" % i for i in range(46)] + ["GET /free/l"])
        st = [x["status"] for x in rows]
        # (40 a minute: a unit may come back while the 46 are sent)
        n_ok = st.index(429) if 429 in st else len(st)
        res.check(40 <= n_ok <= 44 and 429 in st and st[-1] == 200 and
                  set(st[n_ok:-1]) == {429},
                  "40 allowed, then 429s, then a free path: %s %s" % (st, err[-200:]))
        res.check(rows and all(x["same"] for x in rows), "the socket kept through the 429s")
        rem = [rl(x["headers"]) and rl(x["headers"])[1] for x in rows[:40]]
        # one less each time, or the same where a unit came back between
        res.check(None not in rem and rem[0] == 39 and rem[-1] <= 1 and
                  all(a - b in (0, 1) for a, b in zip(rem, rem[1:])),
                  "remaining down to 0: %s" % rem)
        # (a 429 carries its RateLimit fields too: sluice wrote those)
        seen += sum(rl(x["headers"]) is not None for x in rows if x["status"] == 200)

        time.sleep(0.3)
        s = t.sluice.stats()
        res.eq(s["budget_headers"], seen, "budget_headers counts the budgets read")
        res.eq(s["budget_unauthenticated"], 1, "budget_unauthenticated")
        res.eq(s["keepalive_fallback"], 0, "no refusal fell back to closing")
        print("budget counters: %s" % {k: v for k, v in s.items() if k.startswith("budget")})
        res.eq(t.sluice.stop(), 0, "clean shutdown")
    with tempfile.TemporaryDirectory() as tmp:
        opaque_names(res, sys.argv[1], tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
