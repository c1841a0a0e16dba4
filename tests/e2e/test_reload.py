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
# keep_alive off at start: the test turns it on by a reload below
BASE = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
response: {keep_alive: false}
rules:
  - {name: key-r, scope: key, match: {path_prefix: /v1/r}, limit: %s, burst: %d}
"""


def write(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # an editor's atomic save


def write_unseen(path, text):
    """Rewrites the file in place, same size, inode and mtime: the file
    watch cannot tell, so only a SIGHUP can apply it."""
    st = os.stat(path)
    old = open(path).read()
    assert len(text) <= len(old)
    text = text.rstrip("\n") + "\n" + "#" * (len(old) - len(text) - 1) + "\n" \
        if len(text) < len(old) else text
    text = text[:len(old)]
    with open(path, "r+") as f:
        f.write(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (st.st_ino, st.st_size, st.st_mtime_ns)


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
            res.check("error" in r and "sluice.yaml:7:" in r["error"],
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

            # keep_alive turned on by a reload: the workers' translation
            # table is sized at start, so it is said to wait for a
            # restart, and a 429 still closes its connection meanwhile
            write(conf, BASE.replace("keep_alive: false", "keep_alive: true") % ("3/min", 6))
            r = sltest.telemetry(t.sluice.prefix, "/sluice/reload")
            res.check("version" in r and "keep_alive" in r.get("note", ""),
                      "keep_alive turned on by a reload: applied at the next restart, "
                      "and said so (%s)" % r)
            st, hdrs, _ = t.curl("-H", "X-API-Key: k1", "http://%s/v1/r/k" % S4)
            res.eq((st, hdrs.get("connection")), (429, "close"),
                   "a 429 meanwhile still closes its connection")
            write(conf, BASE % ("3/min", 6))
            sltest.telemetry(t.sluice.prefix, "/sluice/reload")

            # lowering it, noticed from the file alone
            v2 = version()
            write(conf, BASE % ("3/min", 1) + "# room for the next edit, in place\n")
            deadline = time.time() + 10
            while version() == v2 and time.time() < deadline:
                time.sleep(0.2)
            res.check(version() != v2, "a changed file is picked up by itself")
            res.eq(get(), 429, "lowering the limit takes effect at once")

            # written in place in two halves 300 ms apart, the first of
            # which parses (its second rule missing): applied once, whole
            v2b = version()
            whole = BASE % ("3/min", 1) + \
                "  - {name: other, scope: ip, match: {path_prefix: /v1/o}, limit: 9/min}\n"
            half = whole[:whole.index("  - {name: other")]
            with open(conf, "w") as f:
                f.write(half)
            time.sleep(0.3)
            with open(conf, "w") as f:
                f.write(whole)
            deadline = time.time() + 10
            while version() == v2b and time.time() < deadline:
                time.sleep(0.2)
            time.sleep(2.5)  # two more polls: nothing else may apply
            rules = sltest.telemetry(t.sluice.prefix, "/sluice/rules")
            res.check("other" in rules, "a file written in two halves: the whole applied")

            # SIGHUP applies a valid file too: one the file watch cannot
            # see change (same inode, size and mtime), so only the signal
            # can have applied it
            v3 = version()
            time.sleep(1.5)  # the watch has seen the last file
            write_unseen(conf, BASE % ("600/min", 50))
            time.sleep(1.5)
            res.eq(version(), v3, "the watch did not see the unseen edit")
            t.sluice.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while version() == v3 and time.time() < deadline:
                time.sleep(0.2)
            res.check(version() != v3, "SIGHUP reloads")
            rules = sltest.telemetry(t.sluice.prefix, "/sluice/rules")
            rk = rules["key_r"]
            res.eq((rk["allowed"], rk["rejected"]), (3, 8),
                   "per-rule counters carry over reloads")
            st = t.sluice.stats()
            res.eq(st["requests"], st["allowed"] + st["rejected"] + st["blocked"] + st["invalid"],
                   "requests add up")
            res.eq(t.sluice.stop(), 0, "clean shutdown")
            res.check("reload (SIGHUP) refused" in t.sluice.out and
                      "reload (SIGHUP): rules version" in t.sluice.out,
                      "SIGHUP both refused the bad file and applied the good one (log)")
            # the file watch applied two files: the lowered limit, and the
            # one written in halves once, whole (the explicit reloads came
            # first: a change is applied after a second unchanged)
            res.eq(t.sluice.out.count("reload (file changed): rules version"), 2,
                   "the file watch applied each file once, never a half")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
