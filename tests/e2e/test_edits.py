#!/usr/bin/python3
"""A rule edit grants nothing, end to end, for all five algorithms and both
authorities (the node's own coordinator, and a real redis-server): a key
drained under limit 2 is still refused right after a reload raises the
limit to 4, while a key never seen gets the whole new limit at once (so
the raise did take effect). Then the limit is cut to 1: a key that used
one of 4 is refused at once.

usage: test_edits.py PATH/TO/sluice
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
ALGOS = ["token_bucket", "gcra", "fixed_window", "sliding_window", "sliding_log"]
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, mbufs: 4095, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
%(rules)s
%(store)s
response: {retry_jitter: 0}
"""


def conf_text(n, store_port):
    rules = "\n".join(
        "  - {name: r-%s, scope: key, match: {path_prefix: /v1/%s/}, algorithm: %s, "
        "limit: %d/h%s}" % (a, a, a, n, ", burst: %d" % n if a in ALGOS[:2] else "")
        for a in ALGOS)
    store = ("store:\n  redis: {endpoints: [\"127.0.0.1:%d\"], timeout_ms: 50}" % store_port
             if store_port else "")
    return CONF % {"rules": rules, "store": store}


def clear_of_window_edge(within=45):
    """The windows are aligned to the hour (limit n/h): a run that crossed
    one would see the drained key's window renewed. Start clear of it."""
    left = 3600 - time.time() % 3600
    if left < within:
        print("waiting %.0f s for the hour's window to turn" % (left + 1))
        time.sleep(left + 1)


def run(res, binary, tmp, store_port, what):
    clear_of_window_edge()
    conf = os.path.join(tmp, "edits-%s.yaml" % what)
    with open(conf, "w") as f:
        f.write(conf_text(2, store_port))
    with sltest.Topology(binary, conf, tmp, prefix="ed%d" % (os.getpid() % 1000)) as t:
        seq = [0]

        def get(algo, key):
            seq[0] += 1
            return t.curl("-H", "X-API-Key: %s" % key,
                          "http://%s/v1/%s/%d" % (S4, algo, seq[0]))[0]

        for a in ALGOS:
            res.eq([get(a, "k-drained") for _ in range(3)], [200, 200, 429],
                   "%s, %s: limit 2, drained" % (what, a))
        v0 = sltest.telemetry(t.sluice.prefix, "/sluice/rules")["version"]
        with open(conf, "w") as f:
            f.write(conf_text(4, store_port))
        r = sltest.telemetry(t.sluice.prefix, "/sluice/reload")
        res.check(r.get("version") not in (None, v0), "%s: raised to 4: %s" % (what, r))
        for a in ALGOS:
            res.eq(get(a, "k-drained"), 429,
                   "%s, %s: raised to 4, the drained key gets nothing at once" % (what, a))
            res.eq([get(a, "k-new") for _ in range(5)], [200] * 4 + [429],
                   "%s, %s: a key never seen gets the new limit" % (what, a))
            res.eq(get(a, "k-one"), 200, "%s, %s: one of 4 used" % (what, a))
        with open(conf, "w") as f:
            f.write(conf_text(1, store_port))
        r = sltest.telemetry(t.sluice.prefix, "/sluice/reload")
        res.check("version" in r, "%s: cut to 1: %s" % (what, r))
        for a in ALGOS:
            res.eq(get(a, "k-one"), 429, "%s, %s: cut to 1, the key that used one is refused"
                   % (what, a))
        res.eq(t.sluice.stop(), 0, "%s: clean shutdown" % what)


def main():
    binary = sys.argv[1]
    res = sltest.Results("edits")
    with tempfile.TemporaryDirectory() as tmp:
        run(res, binary, tmp, 0, "node")
        port = sltest.free_port()
        with sltest.redis_server(port, tmp):
            run(res, binary, tmp, port, "redis")
            time.sleep(0.1)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
