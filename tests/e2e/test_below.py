#!/usr/bin/python3
"""A client below its limit is never refused, and the leases that serve
it reserve about what it spends.

One key under a rule far above what this machine can offer (6 000 000/min,
burst 100 000: 100 k/s), wrk from 4 connections over 2 workers to a real
nginx for 8 s, with the node as the authority and then through Redis.
The judge: no answer but a 200 (nginx serves every request it gets), and
/sluice/store's units granted to the leases at most twice those spent.
Then 16 requests per write without a store: the ones that cannot wait
for the node's authority are decided alone (decided_alone), and nothing
is degraded, since nothing failed.
A rate read per arrival took the requests of one packet burst (which
share a timestamp) for a unit per nanosecond: every lease was the
accuracy budget's 60 k, 11 x what was spent, and the node's authority
refused while 100 k/s of it stood unspent (29 of 168 418 refused).

usage: test_below.py PATH/TO/sluice
"""

import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

PORT = 8083
SECS = 8
CONF = """version: 1
dataplane: {service_ports: [%d], flows_per_worker: 4096, head_buffers_per_worker: 128,
            mbufs: 8191, idle_sleep_us: 100}
identity: {api_key_header: X-API-Key}
rules:
  - {name: far, scope: key, limit: 6000000/min, burst: 100000}
%s
response: {retry_jitter: 0}
"""


# wrk's requests pipelined 16 to a write
PIPELINE = """
init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
"""


def run(res, binary, tmp, store_port, what, pipelined=False):
    store = ("store:\n  redis: {endpoints: [\"127.0.0.1:%d\"], timeout_ms: 5}\n" % store_port
             if store_port else "")
    tmp = os.path.join(tmp, what)  # nginx's log of this run alone
    os.makedirs(tmp)
    conf = os.path.join(tmp, "below.yaml")
    with open(conf, "w") as f:
        f.write(CONF % (PORT, store))
    script = []
    if pipelined:
        script = ["-s", os.path.join(tmp, "pipeline.lua")]
        with open(script[1], "w") as f:
            f.write(PIPELINE)
    with sltest.Topology(binary, conf, tmp, workers=2, prefix="bl%d" % (os.getpid() % 1000)) \
            as t, sltest.Nginx(t, tmp, PORT, "$status") as ng:
        r = t.client("wrk", "-t1", "-c4", "-d%ds" % SECS, "-H", "X-API-Key: k-below",
                     *script, "http://198.18.0.2:%d/v1/below" % PORT, timeout=SECS + 60)
        m = re.search(r"(\d+) requests in", r.stdout)
        sent = int(m.group(1)) if m else 0
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
        st = t.sluice.stats()
        store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
        served = sum(1 for f in ng.log() if f and f[0] == "200")
        res.eq(t.sluice.stop(), 0, "%s: sluice exits 0" % what)
    res.check(sent > 1000, "%s: wrk sent %d requests" % (what, sent))
    res.eq((int(non2xx.group(1)) if non2xx else 0, st["rejected"]), (0, 0),
           "%s: %d requests far below the limit, none refused (answers not 2xx, "
           "rejected)" % (what, sent))
    if pipelined:
        # nginx closes a connection after 1 000 requests (keepalive_
        # requests): those pipelined behind the last go unserved
        res.check(st["decided_alone"] > 0 and st["degraded"] == 0,
                  "%s: requests that could not wait were decided alone (%d), none "
                  "degraded (%d)" % (what, st["decided_alone"], st["degraded"]))
        return
    res.check(served >= st["allowed"] - 8,
              "%s: nginx served what sluice allowed (%d of %d)" % (what, served, st["allowed"]))
    if not store_port:  # (Redis may answer later than its 5 ms: degraded)
        res.eq(st["degraded"], 0, "%s: none degraded" % what)
    # one key: a lease on each worker that saw it (one swept in a lull
    # and made again is a new entry), never one per request
    res.check(1 <= st["buckets_created"] <= 10 and 1 <= st["buckets_active"] <= 2,
              "%s: one key's state on each worker (buckets created %d, active %d)"
              % (what, st["buckets_created"], st["buckets_active"]))
    granted = store.get("granted_units", 0)
    used = st["allowed"]
    sltest.record("below", what=what, requests=sent, granted=granted, used=used)
    res.check(used > 0 and granted <= 2 * used,
              "%s: leases granted %d units for %d spent (%.2f x, at most 2)" % (
                  what, granted, used, granted / used if used else 0))


def main():
    binary = sys.argv[1]
    res = sltest.Results("below")
    with tempfile.TemporaryDirectory() as tmp:
        run(res, binary, tmp, 0, "node")
        run(res, binary, tmp, 0, "node-pipelined", pipelined=True)
        port = sltest.free_port()
        redis = sltest.start_redis(port, tmp)
        try:
            run(res, binary, tmp, port, "redis")
        finally:
            redis.kill()
            redis.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
