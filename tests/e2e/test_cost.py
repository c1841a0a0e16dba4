#!/usr/bin/python3
"""Cost settled from the response (a rule's cost_from_response, issue 14):
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
- counters: settled, units charged and given back.

usage: test_cost.py PATH/TO/sluice
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: bulk, scope: key, match: {path_prefix: /bulk/}, limit: 20/min, burst: 20,
     cost_from_response: X-RateLimit-Cost}
response: {retry_jitter: 0}
%s
"""
STORE = """store:
  redis: {endpoints: ["127.0.0.1:%d"]}
"""


def codes(t, key, query, n):
    """n requests on one connection (curl), their statuses."""
    args = ["curl", "-sS", "--max-time", "30", "-H", "X-API-Key: " + key,
            "-w", "%{http_code}\\n"]
    for i in range(n):
        args += ["-o", "/dev/null", "http://%s/bulk/%d?%s" % (S4, i, query)]
    r = t.client(*args, timeout=60)
    return [int(x) for x in r.stdout.split()]


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
    s = t.sluice.stats()
    print("%s: %s" % (label, {k: v for k, v in s.items() if k.startswith("cost_")}))
    res.eq(s["cost_charged"], 4 * 4, label + ": 4 units more for each of the four")
    res.eq(s["cost_refunded"], 30, label + ": 1 back for each of the thirty")
    res.eq(s["cost_unsettled"], 3, label + ": the three without a number")
    res.eq(s["cost_settled"], 4 + 30 + none_ok,
           label + ": settled: every other request allowed")


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
