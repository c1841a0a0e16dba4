#!/usr/bin/python3
"""End to end with two workers: connections of one client spread over both
(af_packet fanout), and the limit holds for the node, not per worker —
the coordinator leases tokens to each. A request that waits for the
coordinator with a body in several segments arrives whole.

usage: test_workers.py PATH/TO/sluice
"""

import hashlib
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers.yaml")


def main():
    res = sltest.Results("workers")
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp, workers=2) as t:
        codes = [t.curl("-H", "X-API-Key: k-five", "http://%s/v1/five/%d" % (S4, i))[0]
                 for i in range(12)]
        res.eq(sorted(codes), [200] * 5 + [429] * 7,
               "5/min across two workers: exactly five of twelve (%s)" % codes)
        wk = sltest.telemetry(t.sluice.prefix, "/sluice/workers")
        res.check(all(w["requests"] > 0 for w in wk.values()),
                  "both workers decided some: %s" % [w["requests"] for w in wk.values()])

        body = os.path.join(tmp, "login.bin")
        with open(body, "wb") as f:
            f.write(os.urandom(20000))
        sha = hashlib.sha256(open(body, "rb").read()).hexdigest()
        codes = [t.curl("--data-binary", "@" + body, "http://%s/v1/login" % S4)[0]
                 for _ in range(4)]
        res.eq(codes, [200, 200, 200, 429], "sliding log 3/min across two workers")
        logins = [g for g in t.backend_log() if g["path"] == "/v1/login"]
        res.eq(len(logins), 3, "the backend got the three allowed logins")
        res.check(all(g["body_sha256"] == sha for g in logins),
                  "their 20 kB bodies arrived whole after waiting for the coordinator")
        st = t.sluice.stats()
        res.check(st["parked"] > 0, "requests waited for the coordinator (%d)" % st["parked"])
        res.eq(st["degraded"], 0, "no degraded decisions")
        res.eq(len([g for g in t.backend_log() if g["path"].startswith("/v1/five/")]), 5,
               "the backend saw five of the twelve")
        res.eq(t.sluice.stop(), 0, "clean shutdown")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
