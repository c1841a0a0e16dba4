#!/usr/bin/python3
"""A 429 keeps the connection (response.keep_alive), end to end
with real clients and the real backend:

- curl, nine URLs on one connection (a key of 3 a minute, then a path no
  rule limits): 200 200 200, 429 x 5, 200 — every transfer after the
  first on the connection it opened (num_connects 0), the last one
  reaching the backend after five 429s on that connection;
- Python's http.client on one connection, bodies read: the same, the
  socket never replaced;
- the backend saw exactly the allowed requests, none refused;
- counters: every 429 kept the connection, none fell back.

usage: test_keepalive_curl.py PATH/TO/sluice
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keepalive.yaml")
S4 = "198.18.0.2"

HTTPCLIENT = """
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], 80, timeout=5)
c.connect()
sock = c.sock
for path in sys.argv[2:]:
    c.request("GET", path, headers={"X-API-Key": "k-py"})
    r = c.getresponse()
    body = r.read()
    print(r.status, len(body), int(c.sock is sock), r.getheader("Connection", "-"))
"""


def main():
    res = sltest.Results("keepalive_curl")
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp) as t:
        paths = ["/v1/k/curl%d" % i for i in range(8)] + ["/free/curl"]
        args = ["curl", "-sS", "--max-time", "20", "-H", "X-API-Key: k-curl",
                "-w", "%{http_code} %{num_connects}\\n"]
        for p in paths:
            args += ["-o", "/dev/null", "http://%s%s" % (S4, p)]
        r = t.client(*args, timeout=40)
        got = [tuple(int(x) for x in line.split()) for line in r.stdout.split("\n") if line]
        res.eq([g[0] for g in got], [200] * 3 + [429] * 5 + [200],
               "curl, one connection: three allowed, five refused, then a free path")
        res.eq([g[1] for g in got], [1] + [0] * 8,
               "curl opened one connection and kept it through five 429s")

        pypaths = ["/v1/k/py%d" % i for i in range(5)] + ["/free/py"]
        r = t.client("/usr/bin/python3", "-c", HTTPCLIENT, S4, *pypaths)
        rows = [line.split() for line in r.stdout.split("\n") if line]
        res.eq([int(x[0]) for x in rows], [200] * 3 + [429] * 2 + [200],
               "http.client, one connection: the same %s" % r.stderr[-200:])
        res.check(rows and all(x[2] == "1" for x in rows),
                  "http.client kept its socket throughout")
        res.check(rows and all(int(x[1]) > 0 for x in rows), "every body read to its length")

        time.sleep(0.3)
        seen = sorted(g["path"] for g in t.backend_log())
        allowed = sorted(paths[:3] + paths[8:] + pypaths[:3] + pypaths[5:])
        res.eq(seen, allowed, "the backend saw exactly the allowed requests")
        s = t.sluice.stats()
        res.eq(s["keepalive_replies"], 7, "every 429 kept its connection")
        res.eq(s["keepalive_fallback"], 0, "none fell back to closing")
        res.eq(s["rejected"], 7, "rejected")
        res.check(s["keepalive_translated"] > 0, "segments translated (%d)" %
                  s["keepalive_translated"])
        res.eq(t.sluice.stop(), 0, "clean shutdown")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
