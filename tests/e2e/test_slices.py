#!/usr/bin/python3
"""Global limits rebalanced across regions: the appliances
enforce the slices sluice-aggregator writes.

Three regions on this machine (a, b, c: one appliance, one worker, each,
and a's Redis a Cluster of three masters, b's and c's a redis-server; `regions: {a: 1, b: 1, c: 1}`), an `across_regions: true` rule of
1200/min (20/s), burst 20, and one identity flooding through a (two
curls, about 40/s) while it sends a tenth of the limit through b (2/s):

1. static slices (no aggregator yet): a admits its third, 400/min;
2. the aggregator started (a round a second, max-min fair): b, below its
   fair share, is given its demand and the margin, and a the rest (>= 80 %
   of the limit within 3 rounds, /sluice/regions); over the seconds after,
   b is served >= 90 % of what it offers while the three regions together
   admit [0.9, 1.05] x the limit;
3. the aggregator killed: the slices hold while they live, then expire to
   the static ones (/sluice/regions version 0, a back at its third);
4. the aggregator again, then b's Redis paused (SIGSTOP): b decides by
   its rule's policy (its breaker opens), a keeps its slice and admits as
   before; b's Redis resumed;
5. the identity moves: it floods through b and sends the tenth through a:
   b holds the rest of the limit within 5 rounds, and a is served what it
   offers.

Counted from the backend's log (each request's arrival time), so the
windows are the test's own clock, not wrk's.

usage: test_slices.py PATH/TO/sluice
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

S4 = "198.18.0.2"
AGGREGATOR = os.path.join(sltest.ROOT, "tools", "sluice-aggregator")
EXPORTER = os.path.join(sltest.ROOT, "tools", "sluice-exporter")
SLUICECTL = os.path.join(sltest.ROOT, "tools", "sluicectl")
LIMIT = 20.0  # per second, across the regions
TENTH = int(LIMIT * 60 / 10)  # per minute: the modest region's demand
KEY = "k-spread"
REBALANCE_MS = 1000
TTL_MS = 3000
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
regions: {a: 1, b: 1, c: 1}
rules:
  - {name: spread, scope: key, match: {path_prefix: /v1/spread}, limit: 1200/min, burst: 20,
     across_regions: true}
store:
  region: %(region)s
  redis: {endpoints: ["127.0.0.1:%(port)d"], cluster: %(cluster)s, timeout_ms: 20}
response: {retry_jitter: 0, keep_alive: true}
"""


class Client:
    """curl at a fixed rate through one region, bounded in count and time."""

    def __init__(self, topo, per_min, secs):
        self.per_min = per_min
        n = int(per_min * secs / 60)
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", topo.cns, "timeout", str(secs + 30), "curl", "-s", "-N",
             "-o", "/dev/null", "--rate", "%d/m" % per_min, "-H", "X-API-Key: " + KEY,
             "-w", "%{stderr}%{http_code}\\n", "http://%s/v1/spread/[1-%d]" % (S4, n)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self):
        """The answers' codes (written to stderr, unbuffered: the curl is
        stopped before its last URL)."""
        if self.p.poll() is None:
            self.p.terminate()
        return self.p.communicate(timeout=30)[1].split()


def arrivals(topo):
    return [r["t"] for r in topo.backend_log() if r.get("path", "").startswith("/v1/spread")]


def rate_in(times, t0, t1):
    return sum(1 for t in times if t0 <= t < t1) / (t1 - t0)


def decided(topo):
    """(admitted + refused, refused) of the spread rule in this region,
    from one reading."""
    r = sltest.telemetry(topo.sluice.prefix, "/sluice/rules").get("spread", {})
    return r.get("allowed", 0) + r.get("rejected", 0), r.get("rejected", 0)


def seen(topo):
    """Requests of the spread rule this region decided (admitted + refused)."""
    return decided(topo)[0]


def degraded(topo):
    """Requests a region's store failures left to the rule's policy."""
    return sltest.telemetry(topo.sluice.prefix, "/sluice/store").get("store_degraded", 0)


def regions(topo):
    return sltest.telemetry(topo.sluice.prefix, "/sluice/regions")


def slice_of(topo):
    """(version, parts) of the spread rule's one identity here."""
    r = regions(topo).get("spread", {})
    parts = [v for k, v in r.items() if len(k) == 32]
    return r.get("version", 0), parts[0] if parts else None


def check_exporter(res, topo):
    """The slices as Prometheus sees them."""
    r = subprocess.run([EXPORTER, "-f", topo.sluice.prefix, "--once"], capture_output=True,
                       text=True, timeout=30)
    fams = {f.name: f for f in text_string_to_metric_families(r.stdout)}
    got = {n: [(s.labels, s.value) for s in fams[n].samples] for n in
           ("sluice_region_info", "sluice_region_slice_version", "sluice_region_slice_parts")
           if n in fams}
    ver = [v for lb, v in got.get("sluice_region_slice_version", []) if lb.get("rule") == "spread"]
    parts = [v for lb, v in got.get("sluice_region_slice_parts", []) if lb.get("rule") == "spread"]
    res.check(got.get("sluice_region_info") == [({"region": "a"}, 1.0)] and ver and ver[0] > 0
              and len(parts) == 1 and parts[0] >= 8000,
              "exporter: the region, the slices' version and the identity's parts (%s)" % got)


def check_pickup(res, topo, ports):
    """An appliance picks a slice up within a second whether or not it
    hears the announcement (its reconcile reads every second). Written by
    hand into c's Redis (no traffic there) for the identity b reports."""
    rules = sltest.redis_cli(ports[1], "SMEMBERS", "sl:usage:rules").split()
    raw = sltest.redis_cli(ports[1], "HGETALL", "sl:usage:{%s}" % rules[0]).splitlines() \
        if len(rules) == 1 else []
    top = list(json.loads(raw[1]).get("top", {})) if len(raw) == 2 else []
    if not top:
        res.check(False, "b reports the identity's demand (%s, %s)" % (rules, raw))
        return
    key = "sl:slice:{%s}" % rules[0]
    took, heard = [], []
    for v, announce in ((1, False), (2, True)):
        before = regions(topo).get("messages", 0)
        sltest.redis_cli(ports[2], "HSET", key, "v", str(v), "t", "0", "x", "3000", top[0],
                         "100")
        if announce:
            sltest.redis_cli(ports[2], "PUBLISH", "sl:slices", "%s %d" % (rules[0], v))
        ok, secs = wait_for(lambda: slice_of(topo) == (v, 100), 3)
        took.append(round(secs, 2) if ok else None)
        heard.append(regions(topo).get("messages", 0) - before)
    sltest.redis_cli(ports[2], "DEL", key)
    # (the bounds leave room for the telemetry calls that poll, under ASan)
    res.check(None not in took and took[0] <= 1.5 and took[1] <= 1.0 and heard == [0, 1],
              "a slice picked up unannounced within a second (%s s: the reconcile), and "
              "announced (%s s; messages heard %s)" % (took[0], took[1], heard))


def check_sluicectl(res, topo):
    """The slices as sluicectl regions prints them."""
    r = subprocess.run([SLUICECTL, "-f", topo.sluice.prefix, "regions"], capture_output=True,
                       text=True, timeout=30)
    lines = r.stdout.splitlines()
    res.check(r.returncode == 0 and lines and lines[0].startswith("region a ") and
              any(ln.startswith("spread ") and "static  33.3 %" in ln and "version" in ln
                  for ln in lines) and
              any(len(ln.split()) == 3 and float(ln.split()[1]) >= 80 for ln in lines[2:]),
              "sluicectl regions: the region, the rule's static and held slices, the "
              "identity's share (%s)" % (lines or r.stderr.strip()[-200:]))


def aggregator(conf, ports, log):
    # max-min with its default margin (0.2) and growth (0.5); a floor of
    # 1 % for the quiet region c: the flood's region holds 87 % beside the
    # tenth and its margin (86 % at the default 2 %)
    args = [sys.executable, AGGREGATOR, "-c", conf, "--rebalance-ms", str(REBALANCE_MS),
            "--slice-ttl-ms", str(TTL_MS), "--floor", "0.01"]
    for name, p in zip("abc", ports):
        args += ["--region", "%s=127.0.0.1:%d" % (name, p)]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def wait_for(cond, secs):
    """Polls cond() until true or secs pass; (held, seconds taken)."""
    t0 = time.time()
    while time.time() - t0 < secs:
        if cond():
            return True, time.time() - t0
        time.sleep(0.2)
    return False, time.time() - t0


def phases(res, topos, ports, conf, tmp):
    a, b, c = topos
    log = open(os.path.join(tmp, "aggregator.log"), "w")
    # one curl does about 20 requests a second here: two through a, and
    # b at a tenth of the limit
    clients = [Client(a, 1800, 70), Client(a, 1800, 70), Client(b, TENTH, 70)]
    codes = []  # every client's answers, those stopped first included
    agg = None
    try:
        time.sleep(2.5)
        check_pickup(res, c, ports)
        # 1. static slices
        time.sleep(0.5)
        t0 = time.time()
        time.sleep(5)
        t1 = time.time()
        static_a = (t0, t1)

        # 2. rebalanced
        agg = aggregator(conf, ports, log)
        t_start = time.time()
        ok, took = wait_for(lambda: (slice_of(a)[1] or 0) >= 8000,
                            3 * REBALANCE_MS / 1000 + 2)
        res.check(ok, "a holds >= 80 %% of the identity's limit %.1f s after the aggregator "
                  "started (3 rounds: %.1f s; /sluice/regions %s)"
                  % (took, 3 * REBALANCE_MS / 1000, regions(a).get("spread")))
        said = regions(a).get("spread", {}).get("policy", "")
        res.check(said.startswith("max-min margin 0.2 growth 0.5"),
                  "/sluice/regions says how the aggregator cut the slices (%r)" % said)
        # the rounds the test cannot see: a's rate from 3 rounds after the
        # start, once the lease reserved under the old slice is spent
        t2 = max(time.time(), t_start + 3 * REBALANCE_MS / 1000) + 2
        time.sleep(max(0.0, t2 - time.time()))
        n2 = [seen(a), seen(b)]
        time.sleep(12)  # b offers 24 requests: each refused costs 4 %
        t3 = time.time()
        n3 = [seen(a), seen(b)]
        offered = [(y - x) / (t3 - t2) for x, y in zip(n2, n3)]
        res.check(offered[0] >= 1.5 * LIMIT and 0.07 * LIMIT <= offered[1] <= 0.13 * LIMIT,
                  "the client offered %.1f/s through a (a flood) and %.1f/s through b (a "
                  "tenth of the limit)" % (offered[0], offered[1]))
        sa, sb = slice_of(a), slice_of(b)
        res.check(sa[0] == sb[0] and sa[0] > 0 and (sa[1] or 0) + (sb[1] or 0) <= 10000,
                  "a and b hold the same version, together at most the limit (a %s, b %s)"
                  % (sa, sb))
        rebalanced = (t2, t3)
        check_exporter(res, a)
        check_sluicectl(res, a)

        # 3. the aggregator killed: slices hold, then expire
        agg.kill()
        agg.wait()
        agg = None
        t4 = time.time()
        last = slice_of(a)  # what the aggregator wrote last
        time.sleep(1.0)
        held = slice_of(a)
        res.check(held == last and (held[1] or 0) >= 8000,
                  "the aggregator gone, a keeps its slice while it lives (%s, then %s)"
                  % (last, held))
        ok, took = wait_for(lambda: slice_of(a)[0] == 0, TTL_MS / 1000 + 3)
        res.check(ok and took + 1.0 >= TTL_MS / 1000 - 1.5,
                  "then it expires to the static slice (%.1f s after the kill; lifetime "
                  "%.1f s)" % (time.time() - t4, TTL_MS / 1000))
        t5 = time.time() + 1
        time.sleep(4)
        t6 = time.time()
        expired = (t5, t6)

        # 4. the aggregator again, then b's Redis paused
        agg = aggregator(conf, ports, log)
        ok, took = wait_for(lambda: (slice_of(a)[1] or 0) >= 8000, 8)
        res.check(ok, "the aggregator back: a's slice again within %.1f s" % took)
        time.sleep(2)
        b_redis = REDIS[-2]
        os.kill(b_redis.pid, signal.SIGSTOP)
        try:
            t7 = time.time() + 1
            time.sleep(4)
            t8 = time.time()
            sb_store = sltest.telemetry(b.sluice.prefix, "/sluice/store")
            sa_now = slice_of(a)
        finally:
            os.kill(b_redis.pid, signal.SIGCONT)
        res.check(sb_store.get("circuit_opened", 0) >= 1 or sb_store.get("store_degraded", 0) > 0,
                  "b's Redis paused: b decides by its rule's policy (circuit_opened %s, "
                  "store_degraded %s)" % (sb_store.get("circuit_opened"),
                                          sb_store.get("store_degraded")))
        res.check((sa_now[1] or 0) >= 8000,
                  "a keeps its slice while b's Redis is paused (%s)" % (sa_now,))
        paused = (t7, t8)

        # 5. the client moves: 10 % through a, 90 % through b
        time.sleep(2)  # b's breaker closes on its next probe
        codes += [cl.stop() for cl in clients]
        clients = [Client(b, 1800, 40), Client(b, 1800, 40), Client(a, TENTH, 40)]
        t9 = time.time()
        # within 5 rounds of the aggregator seeing it: the demand reaches
        # the coordinator within 250 ms and its report within a second;
        # a's demand is held a round at its last reading, then falls by
        # 0.8 a round, b's slice grows by at most half the limit a round;
        # and 0.5 s for the test (the curls' start, polling the telemetry)
        ok, took = wait_for(lambda: (slice_of(b)[1] or 0) >= 8000,
                            5 * REBALANCE_MS / 1000 + 1.75)
        res.check(ok, "the demand moved to b: b holds >= 80 %% of the limit %.1f s later (at "
                  "most 5 rounds, the reports' 1.25 s and the test's 0.5 s: %s, a %s)"
                  % (took, slice_of(b), slice_of(a)))
        # what a is offered is counted over the window its service is
        # (curl's pace under load is not steady across the 12 s)
        time.sleep(max(0.0, t9 + 6 - time.time()))
        t_a, (n_a, r_a), d_a = time.time(), decided(a), degraded(a)
        time.sleep(max(0.0, t9 + 12 - time.time()))
        moved = (t9, t9 + 12)
        a_window = (t_a, time.time())
        n_end, r_end = decided(a)
        a_offered = (n_end - n_a) / (a_window[1] - a_window[0])
        # what a said of it: its refusals there, those its store's
        # failures decided (timeout_ms 20 under the suite's load), its
        # slice at the end
        a_said = (r_end - r_a, degraded(a) - d_a, slice_of(a))
    finally:
        if agg is not None:
            agg.kill()
            agg.wait()
        codes += [cl.stop() for cl in clients]
        log.close()
    time.sleep(0.5)  # requests still in flight when the curls ended
    ta, tb, tc = arrivals(a), arrivals(b), arrivals(c)
    res.check(all(set(cs) <= {"200", "429"} and cs for cs in codes),
              "every answer a 200 or a 429 (%s answers)" % [len(cs) for cs in codes])

    r = rate_in(ta, *static_a)
    b_static = rate_in(tb, *static_a)
    res.check(0.85 * LIMIT / 3 <= r <= 1.1 * LIMIT / 3,
              "static slices: a admits %.2f/s, %.2f x its third of %.0f/s" % (
                  r, r / (LIMIT / 3), LIMIT))
    ra, rb, rc = (rate_in(x, *rebalanced) for x in (ta, tb, tc))
    res.check(rb >= 0.9 * offered[1],
              "rebalanced: b, a tenth of the limit beside a flood, is served %.2f/s of the "
              "%.2f/s it offers (%.0f %%; >= 90 %%; %.2f/s under the static slices)"
              % (rb, offered[1], 100 * rb / max(1e-9, offered[1]), b_static))
    res.check(ra >= 0.8 * LIMIT,
              "rebalanced: a admits %.2f/s, %.2f x the global limit (>= 0.8: the rest)"
              % (ra, ra / LIMIT))
    tot = ra + rb + rc
    res.check(0.9 * LIMIT <= tot <= 1.05 * LIMIT,
              "rebalanced: the regions together admit %.2f/s, %.3f x the global limit "
              "(within [0.9, 1.05])" % (tot, tot / LIMIT))
    # at most its static third: what it reserved ahead at its raised slice
    # (up to SL_LEASE_AHEAD_MS of it) is repaid at the static rate first,
    # so it may admit less for a while, never more
    r = rate_in(ta, *expired)
    res.check(r <= 1.1 * LIMIT / 3,
              "slices expired: a admits %.2f/s, %.2f x its static third (at most 1.1: the "
              "raised slice gone)" % (r, r / (LIMIT / 3)))
    r = rate_in(ta, *paused)
    res.check(r >= 0.8 * LIMIT,
              "b's Redis paused: a still admits %.2f/s, %.2f x the global limit" % (
                  r, r / LIMIT))
    # while the slices move, the regions together never admit much more
    # than the limit: a region whose slice is lowered gives back what it
    # held (reserved ahead at its old rate) instead of spending it beside
    # the region the slice went to
    ra, rb, rc = (rate_in(x, *moved) for x in (ta, tb, tc))
    res.check(ra + rb + rc <= 1.1 * LIMIT,
              "the client moved: over the 12 s after, the regions together admit %.2f/s, "
              "%.3f x the global limit (at most 1.1; a %.2f/s, b %.2f/s)"
              % (ra + rb + rc, (ra + rb + rc) / LIMIT, ra, rb))
    rb = rate_in(tb, moved[0] + 6, moved[1])
    res.check(rb >= 0.8 * LIMIT,
              "the client moved: b admits %.2f/s from 6 s after, %.2f x the global limit"
              % (rb, rb / LIMIT))
    ra = rate_in(ta, *a_window)
    res.check(ra >= 0.9 * a_offered,
              "the client moved: a, now the tenth, is served %.2f/s of the %.2f/s it offers "
              "from %.1f s after (refused there %d, decided by store failure %d; its "
              "slice at the end %s)" % ((ra, a_offered, a_window[0] - moved[0]) + a_said))
    with open(os.path.join(tmp, "aggregator.log")) as f:
        lines = [json.loads(x) for x in f if x.startswith("{")]
    res.check(any(x.get("event") == "rebalance" for x in lines),
              "the aggregator logged its rebalances (%d lines)" % len(lines))


REDIS = []


def main():
    binary = sys.argv[1]
    res = sltest.Results("slices")
    with tempfile.TemporaryDirectory() as tmp:
        # a's Redis is a Cluster of three masters (its usage and slices
        # on the nodes of their keys), b's and c's single nodes
        cports, cprocs = sltest.start_cluster(tmp, 3)
        REDIS.extend(cprocs.values())
        ports = [cports[0]] + [sltest.free_port() for _ in range(2)]
        for i, p in enumerate(ports[1:]):
            d = os.path.join(tmp, "redis%d" % i)
            os.makedirs(d)
            REDIS.append(sltest.start_redis(p, d))
        try:
            confs = []
            for name, p in zip("abc", ports):
                confs.append(os.path.join(tmp, name + ".yaml"))
                with open(confs[-1], "w") as f:
                    f.write(CONF % {"region": name, "port": p,
                                    "cluster": "true" if name == "a" else "false"})
            pid = os.getpid() % 1000
            with sltest.Topology(binary, confs[0], tmp, prefix="sa%d" % pid) as a, \
                    sltest.Topology(binary, confs[1], tmp, prefix="sb%d" % pid) as b, \
                    sltest.Topology(binary, confs[2], tmp, prefix="sc%d" % pid) as c:
                r = regions(a)
                res.eq((r.get("region"), r.get("spread", {}).get("static_parts"),
                        r.get("spread", {}).get("version")), ("a", 3333, 0),
                       "/sluice/regions: this region, the rule's static slice, no version yet")
                phases(res, [a, b, c], ports, confs[0], tmp)
                res.eq(a.sluice.stop() + b.sluice.stop() + c.sluice.stop(), 0,
                       "the three stop cleanly")
        finally:
            for r in REDIS:
                try:
                    os.kill(r.pid, signal.SIGCONT)
                except OSError:
                    pass
                r.kill()
                r.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
