#!/usr/bin/python3
"""The sampled decision stream, end to end with curl and the backend.

Without a store: every decision (sample 1) becomes one JSON line naming the
decision, rule, tier, identity and remaining, matching what curl saw;
after a SIGHUP that sets the rate to 0.5, about half of 400 decisions are
written (the rate, not a count, is random); a rotated file is reopened on
SIGHUP. With a real redis-server: the same records go to a capped Redis
Stream, trimmed near maxlen; a Redis that goes away loses records (counted)
and never a request.

usage: test_decisions.py PATH/TO/sluice
"""

import calendar
import json
import os
import signal
import subprocess
import hashlib
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
BASE = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096, head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free, pro]
default_tier: free
keys: {k-pro: pro}
rules:
  - {name: per-key, scope: key, tier: free, limit: 3/hour, burst: 3}
  - {name: pro-key, scope: key, tier: pro, limit: 100000/min, burst: 100000}
blocklist: {keys: [k-bad]}
response: {retry_jitter: 0}
"""


def read_lines(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def wait_written(t, n, timeout=5.0):
    end = time.time() + timeout
    d = {}
    while time.time() < end:
        d = sltest.telemetry(t.sluice.prefix, "/sluice/decisions")
        if d.get("written", 0) + d.get("stream_errors", 0) + \
                d.get("stream_unreachable_dropped", 0) >= n:
            return d
        time.sleep(0.1)
    return d


def burst(t, key, n, path="/v1/x"):
    """n requests on one keep-alive connection; returns curl's codes."""
    urls = []
    for i in range(n):
        urls += ["-o", "/dev/null", "http://%s%s/%d" % (S4, path, i)]
    r = t.client("curl", "-s", "--max-time", "30", "-w", "%{http_code}\n",
                 "-H", "X-API-Key: " + key, *urls, timeout=60)
    return [int(c) for c in r.stdout.split()]


def file_sink(binary, res, tmp):
    out = os.path.join(tmp, "decisions.jsonl")
    conf = os.path.join(tmp, "file.yaml")
    with open(conf, "w") as f:
        f.write(BASE + "decisions: {sample: 1, file: %s, identity: clear}\n" % out)
    with sltest.Topology(binary, conf, tmp, prefix="dc%d" % (os.getpid() % 1000)) as t:
        codes = [t.curl("-H", "X-API-Key: k-a", "http://%s/v1/a/%d" % (S4, i))[0]
                 for i in range(5)]
        res.eq(codes, [200, 200, 200, 429, 429], "curl: 3 of 5 for k-a (3/hour)")
        res.eq(t.curl("-H", "X-API-Key: k-bad", "http://%s/v1/b" % S4)[0], 403,
               "curl: the blocked key gets 403")
        res.eq(t.curl("http://%s/v1/nokey" % S4)[0], 200, "curl: no key, no rule: 200")
        d = wait_written(t, 7)
        lines = read_lines(out)
        res.eq(len(lines), 7, "sample 1: one line per decision")
        res.eq((d["sampled"], d["written"], d["ring_dropped"]), (7, 7, 0),
               "/sluice/decisions: sampled = written, nothing dropped")
        a = [x for x in lines if x["identity"] == "key:k-a"]
        res.eq([x["decision"] for x in a], ["allowed"] * 3 + ["rejected"] * 2,
               "k-a's lines in order: 3 allowed, 2 rejected")
        res.eq([x["remaining"] for x in a], [2, 1, 0, 0, 0], "remaining after each")
        res.check(all(x["rule"] == "per-key" and x["tier"] == "free" for x in a),
                  "k-a's lines name rule per-key and tier free")
        res.check(all(0 < x["retry_after_ms"] <= 1200000 for x in a[3:]),
                  "rejections carry the wait (at most 20 min for 3/hour)")
        res.check("retry_after_ms" not in a[0], "allowed lines carry no wait")
        b = [x for x in lines if x["identity"] == "key:k-bad"]
        res.eq([(x["decision"], x["rule"]) for x in b], [("blocked", "blocklist")],
               "the blocked key: decision blocked, rule blocklist")
        n = [x for x in lines if x["identity"].startswith("ip:")]
        res.eq([(x["decision"], x["rule"], x["tier"]) for x in n], [("allowed", None, None)],
               "no key: identity is the client address, no rule, no tier")
        res.check(all(x["ts"].endswith("Z") and x["node"] and x["worker"] == 0
                      and x["degraded"] is False and isinstance(x["parked"], bool)
                      and x["shadow_rejected"] is False for x in lines),
                  "every line has ts, node, worker and the flags")
        res.check(all(x["parked"] for x in a[:3]),
                  "an exact limit (3/hour) waits for the coordinator: parked")
        res.check(not any(x["parked"] for x in b + n),
                  "a blocked request and one no rule matched never wait: not parked")
        # read as UTC whatever the machine's zone and its summer time
        lag = abs(time.time() - calendar.timegm(time.strptime(
            lines[0]["ts"][:19], "%Y-%m-%dT%H:%M:%S")))
        res.check(lag < 60, "ts is the wall clock in UTC (%.1f s ago)" % lag)
        stats = sltest.telemetry(t.sluice.prefix, "/sluice/stats")
        res.eq((stats["decisions_sampled"], stats["decisions_dropped"]), (7, 0),
               "/sluice/stats counts the sampled decisions")
        exp = subprocess.run([os.path.join(sltest.ROOT, "tools", "sluice-exporter"),
                              "--once", "-f", t.sluice.prefix],
                             capture_output=True, text=True, timeout=30).stdout
        res.check("sluice_decisions_written_total 7" in exp and
                  "sluice_decisions_sampled_total 7" in exp,
                  "the exporter carries the decision stream's counters")

        # rotate, then halve the rate with a SIGHUP (rates apply on reload)
        os.rename(out, out + ".1")
        with open(conf, "w") as f:
            f.write(BASE + "decisions: {sample: 0.5, sample_rejected: 1, file: %s, "
                    "identity: clear}\n" % out)
        t.sluice.proc.send_signal(signal.SIGHUP)
        for _ in range(100):
            if sltest.telemetry(t.sluice.prefix, "/sluice/decisions")["sample_ppm"] == 500000:
                break
            time.sleep(0.1)
        codes = burst(t, "k-pro", 400)
        res.eq(codes.count(200), 400, "400 requests of k-pro pass")
        res.eq(burst(t, "k-a", 2), [429, 429], "k-a is still refused")
        time.sleep(0.5)
        lines = read_lines(out)
        pro = [x for x in lines if x["identity"] == "key:k-pro"]
        rej = [x for x in lines if x["identity"] == "key:k-a"]
        print("  sample 0.5: %d of 400 allowed decisions written" % len(pro))
        res.check(140 <= len(pro) <= 260,
                  "sample 0.5: about half of 400 written (%d; 5 sigma is 150-250)" % len(pro))
        res.eq(len(rej), 2, "sample_rejected 1: every rejection written")
        res.check(all(x["tier"] == "pro" and x["rule"] == "pro-key" for x in pro),
                  "k-pro's lines: tier pro, rule pro-key")
        res.eq(len(read_lines(out + ".1")), 7, "the rotated file kept its 7 lines")
        res.eq(t.sluice.stop(), 0, "clean shutdown")


def stream_sink(binary, res, tmp):
    port = sltest.free_port()
    key = "sl:dec:%d" % os.getpid()
    conf = os.path.join(tmp, "stream.yaml")
    with open(conf, "w") as f:
        f.write(BASE + "store:\n  redis: {endpoints: [\"127.0.0.1:%d\"]}\n" % port +
                "decisions: {sample: 1, stream: \"%s\", maxlen: 100}\n" % key)
    redis = sltest.start_redis(port, tmp)
    cli = ["redis-cli", "-p", str(port)]
    try:
        with sltest.Topology(binary, conf, tmp, prefix="ds%d" % (os.getpid() % 1000)) as t:
            codes = [t.curl("-H", "X-API-Key: k-a", "http://%s/v1/a/%d" % (S4, i))[0]
                     for i in range(4)]
            res.eq(codes, [200, 200, 200, 429], "curl: 3 of 4 for k-a with a store")
            wait_written(t, 4)
            text = subprocess.run(cli + ["xrange", key, "-", "+"],
                                  capture_output=True, text=True).stdout
            # by default a key is written as a digest, never as it is
            ka = "key#" + hashlib.sha256(b"\nkey:k-a").hexdigest()[:16]
            res.eq((text.count(ka), text.count("k-a")), (4, 0),
                   "four entries for k-a in the stream, its key as %s" % ka)
            res.eq(text.count("rejected"), 1, "one of them rejected")
            res.check("per-key" in text and "free" in text and "retry_after_ms" in text,
                      "entries name the rule, the tier and the wait")
            codes = burst(t, "k-pro", 300)
            res.eq(codes.count(200), 300, "300 requests of k-pro pass")
            d = wait_written(t, 304)
            n = int(subprocess.run(cli + ["xlen", key], capture_output=True,
                                   text=True).stdout.strip() or 0)
            print("  stream length after 304 entries, maxlen ~100: %d" % n)
            res.check(100 <= n < 250, "the stream is trimmed near maxlen (%d)" % n)
            res.eq(d["written"], 304, "/sluice/decisions: 304 written")

            # Redis gone: requests still pass, records are counted as lost
            redis.kill()
            redis.wait()
            codes = burst(t, "k-pro", 50)
            res.eq(codes.count(200), 50, "Redis gone: requests still pass")
            d = wait_written(t, 354)
            lost = d["stream_errors"] + d["stream_unreachable_dropped"]
            res.eq(d["written"] + lost, 354, "Redis gone: the 50 records counted as lost")
            res.check(lost >= 50, "lost records counted (%d)" % lost)
            res.eq(t.sluice.stop(), 0, "clean shutdown")
    finally:
        if redis.poll() is None:
            redis.kill()
            redis.wait()


def main():
    binary = sys.argv[1]
    res = sltest.Results("decisions")
    with tempfile.TemporaryDirectory() as tmp:
        file_sink(binary, res, tmp)
        stream_sink(binary, res, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
