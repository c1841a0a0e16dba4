#!/usr/bin/python3
"""Tiers of keys outside the static map come from a Redis hash (HGET,
asynchronous, cached per worker): a key the hash puts in 'pro' gets the
pro limit, its first requests too (they wait for the answer); a key
nobody names stays in the default tier; a key in the static map never
asks; with Redis gone when a key is first seen, it is asked again once
Redis is back, not cached in the default tier for a minute.

usage: test_tiers.py PATH/TO/sluice
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free, pro]
default_tier: free
keys: {k-static: pro}
rules:
  - {name: free-key, scope: key, tier: free, limit: 2/min, burst: 2}
  - {name: pro-key, scope: key, tier: pro, limit: 100/min, burst: 100}
store:
  redis: {endpoints: ["127.0.0.1:%d"], probe_interval_ms: 500}
  keys_hash: "sl:keys:%d"
response: {retry_jitter: 0}
"""


# Four requests of one key in one segment, then the statuses of their
# answers, in order, as the client reads them (a refused one is sent
# again on its own by the client's stack, and answered then).
PIPELINED = r"""
import re, socket, sys
key, host, n = sys.argv[1], sys.argv[2], 4
s = socket.create_connection((host, 80), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"".join(b"GET /v1/%s/p%d HTTP/1.1\r\nHost: a\r\nX-API-Key: %s\r\n\r\n"
                   % (key.encode(), i, key.encode()) for i in range(n)))
got = b""
try:
    while len(re.findall(rb"HTTP/1\.1 \d{3}", got)) < n:
        b = s.recv(65536)
        if not b:
            break
        got += b
except OSError:
    pass
print(" ".join(m.decode() for m in re.findall(rb"HTTP/1\.1 (\d{3})", got)))
"""


def main():
    binary = sys.argv[1]
    res = sltest.Results("tiers")
    port = sltest.free_port()
    h = "sl:keys:%d" % os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF % (port, os.getpid()))
        with sltest.redis_server(port, tmp) as redis:
            # a key longer than one message to the authority holds
            longk = "sk_live_" + "x" * 150
            subprocess.run(["redis-cli", "-p", str(port), "hset", h, "k-vip", "pro",
                            longk, "pro", "k-pipe", "pro"], capture_output=True)
            with sltest.Topology(binary, conf, tmp, prefix="ti%d" % (os.getpid() % 1000)) as t:
                def get(key, i):
                    return t.curl("-H", "X-API-Key: " + key, "http://%s/v1/%s/%d" % (S4, key, i))[0]

                # five connections at once from a key no worker has seen,
                # which the hash puts in pro: each waits for the tier (or
                # finds it known), none is held to free's burst of 2
                urls = [a for i in range(5)
                        for a in ("-o", "/dev/null", "http://%s/v1/k-vip/%d" % (S4, i))]
                r = t.client("curl", "-sS", "-Z", "--parallel-immediate", "--max-time", "10",
                             "-w", "%{http_code}\\n", "-H", "X-API-Key: k-vip", *urls)
                res.eq(r.stdout.split(), ["200"] * 5,
                       "an unknown key's first five requests at once: pro's limit, not free's")
                st = t.sluice.stats()
                res.check(st.get("tier_waits", 0) >= 1,
                          "they waited for the tier (tier_waits %s)" % st.get("tier_waits"))
                codes = [get("k-vip", i) for i in range(5, 10)]
                res.eq(codes, [200] * 5, "once the hash answered, k-vip has the pro limit")
                res.eq([get("k-nobody", i) for i in range(3)], [200, 200, 429],
                       "a key the hash does not name stays free (2/min)")
                res.eq([get("k-static", i) for i in range(4)], [200] * 4,
                       "a key in the static map is pro without asking")
                res.eq([get(longk, i) for i in range(4)], [200] * 4,
                       "a %d-byte key the hash puts in pro is pro" % len(longk))
                r = sltest.telemetry(t.sluice.prefix, "/sluice/rules")
                rules = {v["name"]: v for k, v in r.items() if k != "version"}
                res.check(rules["pro-key"]["allowed"] >= 9, "pro-key counted the pro requests")
                tiers = sltest.telemetry(t.sluice.prefix, "/sluice/tiers")
                res.eq((tiers["pro"]["allowed"], tiers["pro"]["rejected"]), (18, 0),
                       "/sluice/tiers: pro (k-vip, its first requests too, k-static, "
                       "the long key)")
                res.eq((tiers["free"]["allowed"], tiers["free"]["rejected"]), (2, 1),
                       "/sluice/tiers: free (k-nobody)")
                res.eq(tiers["no_key"]["allowed"], 0, "/sluice/tiers: no_key")

                # a pro key first seen in four pipelined requests: the
                # first waits for the tier holding its segment, the three
                # behind it are decided once the tier is known. Decided at
                # once under free, two were counted in free's ledger and
                # the third refused there (the client's stack sent it
                # again, and pro served it)
                r = t.client("/usr/bin/python3", "-c", PIPELINED, "k-pipe", S4)
                res.eq(r.stdout.split(), ["200"] * 4,
                       "a pro key's first four requests in one segment: all served")
                tiers = sltest.telemetry(t.sluice.prefix, "/sluice/tiers")
                res.eq((tiers["pro"]["allowed"], tiers["free"]["allowed"],
                        tiers["free"]["rejected"]), (22, 2, 1),
                       "/sluice/tiers: all four counted in pro's ledger, none in free's")

                # the keys hash not a hash (WRONGTYPE): the key is in the
                # default tier, and the operator is told
                rc = ["redis-cli", "-p", str(port)]
                subprocess.run(rc + ["rename", h, h + ":kept"], capture_output=True)
                subprocess.run(rc + ["set", h, "oops"], capture_output=True)
                res.eq([get("k-wrong", i) for i in range(3)], [200, 200, 429],
                       "the keys hash of the wrong type: a new key is free")
                st = sltest.telemetry(t.sluice.prefix, "/sluice/store")
                res.check(st.get("tier_errors", 0) >= 1 and st.get("tier_asks", 0) >= 3,
                          "/sluice/store counts the keys hash's error replies (tier_asks %s, "
                          "tier_errors %s)" % (st.get("tier_asks"), st.get("tier_errors")))
                subprocess.run(rc + ["rename", h + ":kept", h], capture_output=True)

                # Redis gone when a key is first seen: the store cannot
                # say, so the key is free for now and asked again a
                # second later, not cached free for a minute
                redis.kill()
                redis.wait()
                again = None
                try:
                    first = [get("k-late", i) for i in range(3)]
                    again = sltest.start_redis(port, tmp)
                    subprocess.run(["redis-cli", "-p", str(port), "hset", h, "k-late", "pro"],
                                   capture_output=True)
                    t0, late = time.time(), []
                    while time.time() - t0 < 12 and late[-3:] != [200] * 3:
                        time.sleep(0.25)
                        late.append(get("k-late", 10 + len(late)))
                    took = time.time() - t0
                finally:
                    if again is not None:
                        again.kill()
                        again.wait()
                # (the breaker probes every 500 ms, a reconnect backs off
                # to 2 s: the bound is what a minute's cache is not; no
                # other key's lease ask closes the breaker: the tier's
                # own reply does)
                res.check(first[-1] == 429 and late[-3:] == [200] * 3,
                          "Redis gone when k-late was first seen (%s: the free limit), then "
                          "%s; pro "
                          "%.1f s after it came back (reconnected, the breaker closed, asked "
                          "again within a second), not a minute later" % (first, late, took))
                res.eq(t.sluice.stop(), 0, "clean shutdown")
                res.eq(t.sluice.out.count("answered the keys hash %s: WRONGTYPE" % h), 1,
                       "the keys hash's error logged, once")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
