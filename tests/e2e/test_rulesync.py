#!/usr/bin/python3
"""Rule sets published through the store: two appliances sharing a Redis
follow `sluicectl publish` within moments; when both miss the pub/sub
message the periodic reconcile brings them to the same version; a broken
rule set is refused by sluicectl, and one forced into Redis is refused by
the appliances, which keep the running rules.

usage: test_rulesync.py PATH/TO/sluice
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CTL = os.path.join(sltest.ROOT, "tools", "sluicectl")
BASE = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: key-sync, scope: key, match: {path_prefix: /v1/sync}, limit: %s, burst: %d}
store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 50, probe_interval_ms: 300}
  rules_channel: "%s"
  reconcile_ms: 1000
response: {retry_jitter: 0}
"""


def main():
    binary = sys.argv[1]
    res = sltest.Results("rulesync")
    port = sltest.free_port()
    chan = "sl:rules:%d" % os.getpid()
    with tempfile.TemporaryDirectory() as tmp:
        def write(name, limit, burst):
            p = os.path.join(tmp, name)
            with open(p, "w") as f:
                f.write(BASE % (limit, burst, port, chan))
            return p

        conf = write("sluice.yaml", "2/min", 2)
        with sltest.redis_server(port, tmp):
            with sltest.Topology(binary, conf, tmp, prefix="sa%d" % (os.getpid() % 1000)) as a, \
                    sltest.Topology(binary, conf, tmp, prefix="sb%d" % (os.getpid() % 1000)) as b:
                n = [0]

                def get(t):
                    n[0] += 1
                    return t.curl("-H", "X-API-Key: k-%d" % (n[0] // 100),
                                  "http://%s/v1/sync/%d" % (S4, n[0]))[0]

                def version(t):
                    return sltest.telemetry(t.sluice.prefix, "/sluice/rules")["version"]

                def wait_version(want, secs=10):
                    deadline = time.time() + secs
                    while time.time() < deadline:
                        if version(a) == want and version(b) == want:
                            return True
                        time.sleep(0.1)
                    return False

                def publish(path, reason):
                    return subprocess.run([CTL, "-c", conf, "--sluice", binary, "--by", "ops",
                                           "publish", path, "--reason", reason],
                                          capture_output=True, text=True, timeout=60)

                res.eq([get(a) for _ in range(3)], [200, 200, 429], "2/min from the file")
                r = publish(write("r1.yaml", "100/min", 100), "raise for the launch")
                res.eq(r.returncode, 0, "sluicectl publish: " + r.stdout.strip() + r.stderr.strip())
                t0 = time.time()
                res.check(wait_version("v1"), "both appliances run v1 (%.2f s)" % (time.time() - t0))
                # the throttled key gets more at the next refill, not a free
                # bucket; a fresh key shows the new limit on both at once
                n[0] = 100
                res.eq([get(a) for _ in range(3)] + [get(b) for _ in range(3)], [200] * 6,
                       "the published limit applies on both")

                # v2 stored, its announcement lost: only the reconcile can find it
                rc = ["redis-cli", "-p", str(port)]
                with open(write("r2.yaml", "50/min", 50)) as f:
                    subprocess.run(rc + ["-x", "set", chan + ":v2"], stdin=f, capture_output=True)
                subprocess.run(rc + ["set", chan + ":seq", "2"], capture_output=True)
                subprocess.run(rc + ["set", chan + ":current", "2"], capture_output=True)
                t0 = time.time()
                res.check(wait_version("v2"), "the announcement missed: both reconcile to v2 "
                          "(%.2f s, reconcile every 1 s)" % (time.time() - t0))

                # a broken set: refused before Redis, and refused by the appliances
                r = publish(write("bad.yaml", "50/fortnight", 5), "typo")
                res.check(r.returncode != 0 and "bad.yaml:6:" in r.stderr,
                          "sluicectl refuses a broken rule set with its position")
                refused0 = [sltest.telemetry(t.sluice.prefix, "/sluice/rulesync")["refused"]
                            for t in (a, b)]
                subprocess.run(rc + ["set", chan + ":v99", "rules: [not a rule"], capture_output=True)
                subprocess.run(rc + ["set", chan + ":current", "99"], capture_output=True)
                subprocess.run(rc + ["publish", chan, "99"], capture_output=True)
                deadline = time.time() + 5
                while time.time() < deadline:
                    refused = [sltest.telemetry(t.sluice.prefix, "/sluice/rulesync")["refused"]
                               for t in (a, b)]
                    if all(x > y for x, y in zip(refused, refused0)):
                        break
                    time.sleep(0.1)
                # fetched and refused (counted), not merely never fetched
                res.check(all(x > y for x, y in zip(refused, refused0)),
                          "both fetched the broken set and refused it (refused %s -> %s)" % (
                              refused0, refused))
                res.eq((version(a), version(b)), ("v2", "v2"), "a broken set forced into Redis is refused")
                res.eq(get(a), 200, "and traffic goes on under v2")
                # an override through sluicectl reaches both appliances
                r = subprocess.run([CTL, "-c", conf, "--sluice", binary, "--by", "ops",
                                    "override", "add", "--rule", "key-sync", "--key", "k-big",
                                    "--limit", "600/min", "--burst", "100", "--expires", "+1h",
                                    "--reason", "partner launch"],
                                   capture_output=True, text=True, timeout=60)
                res.eq(r.returncode, 0, "override add with a store publishes " + r.stderr.strip())
                want = "v%s" % subprocess.run(rc + ["get", chan + ":current"], capture_output=True,
                                              text=True).stdout.strip()
                res.check(wait_version(want), "both appliances run the override's version %s" % want)
                codes = [t.curl("-H", "X-API-Key: k-big", "http://%s/v1/sync/big%d" % (S4, i))[0]
                         for t in (a, b) for i in range(35)]
                res.eq(codes.count(200), 70, "k-big: 70 of 70 across both (limit 50 without it)")
                r = sltest.telemetry(a.sluice.prefix, "/sluice/reload")
                res.check("error" in r and "store" in r["error"],
                          "file reloads yield to the store: %s" % r)
                lines = open(conf + ".audit.jsonl").read().count('"publish"')
                res.eq(lines, 2, "the audit log has the publishes made through sluicectl")
                res.eq(a.sluice.stop(), 0, "A stops cleanly")
                res.eq(b.sluice.stop(), 0, "B stops cleanly")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
