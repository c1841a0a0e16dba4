#!/usr/bin/python3
"""End to end live reload: rules change without a restart, by SIGHUP, by the
/sluice/reload telemetry command and by the file changing on disk; an
invalid file is refused with its errors and the running rules stay; bucket
state and per-rule counters carry over, so raising a limit adds room and
lowering it takes effect at once — never a free bucket.

usage: test_reload.py PATH/TO/sluice
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
BASE = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: key-r, scope: key, match: {path_prefix: /v1/r}, limit: %s, burst: %d}
"""


def write(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # an editor's atomic save


def main():
    res = sltest.Results("reload")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        write(conf, BASE % ("3/min", 3))
        with sltest.Topology(sys.argv[1], conf, tmp) as t:
            n = [0]

            def get():
                n[0] += 1
                return t.curl("-H", "X-API-Key: k1", "http://%s/v1/r/%d" % (S4, n[0]))[0]

            def version():
                return sltest.telemetry(t.sluice.prefix, "/sluice/rules")["version"]

            res.eq([get() for _ in range(4)], [200, 200, 200, 429], "burst 3 under the first rules")
            v1 = version()

            # an invalid file: refused, with its position; nothing changes
            write(conf, BASE % ("3/fortnight", 3))
            t.sluice.proc.send_signal(signal.SIGHUP)
            time.sleep(1.5)
            r = sltest.telemetry(t.sluice.prefix, "/sluice/reload")
            res.check("error" in r and "sluice.yaml:6:" in r["error"],
                      "/sluice/reload reports the error with its line: %s" % r)
            res.eq(version(), v1, "the running rules stay")
            res.eq(get(), 429, "and still enforce")

            # raising the burst: what was used stays used and the new room
            # comes by refill (3/min: one in 20 s), never at once
            write(conf, BASE % ("3/min", 6))
            r = sltest.telemetry(t.sluice.prefix, "/sluice/reload")
            res.check("version" in r and r["version"] != v1, "/sluice/reload returns the new version")
            res.eq(version(), r.get("version"), "/sluice/rules reports it")
            res.eq([get() for _ in range(4)], [429, 429, 429, 429],
                   "burst 6: a drained key gets nothing at once (no free tokens)")

            # lowering it, noticed from the file alone
            v2 = version()
            write(conf, BASE % ("3/min", 1))
            deadline = time.time() + 10
            while version() == v2 and time.time() < deadline:
                time.sleep(0.2)
            res.check(version() != v2, "a changed file is picked up by itself")
            res.eq(get(), 429, "lowering the limit takes effect at once")

            # SIGHUP applies a valid file too
            v3 = version()
            write(conf, BASE % ("600/min", 50))
            t.sluice.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while version() == v3 and time.time() < deadline:
                time.sleep(0.2)
            res.check(version() != v3, "SIGHUP reloads")
            rules = sltest.telemetry(t.sluice.prefix, "/sluice/rules")
            rk = rules["key_r"]
            res.eq((rk["allowed"], rk["rejected"]), (3, 7),
                   "per-rule counters carry over reloads")
            st = t.sluice.stats()
            res.eq(st["requests"], st["allowed"] + st["rejected"] + st["blocked"] + st["invalid"],
                   "requests add up")
            res.eq(t.sluice.stop(), 0, "clean shutdown")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
