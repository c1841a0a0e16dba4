#!/usr/bin/python3
"""Global limits across regions, static slices.

Two regions on this machine, each with its own redis-server and one
appliance (one worker), `regions: {eu: 1, us: 1}`:

- an `across_regions: true` rule of 600/min, burst 20, is enforced in each region
  at its slice, 300/min, burst 10, through that region's own Redis (no
  ask crosses regions): wrk through both at once for 6 s admits each
  region's slice (burst/2 + rate/2 x t, within [0.9, 1.05]) and the two
  together the global limit, not twice it;
- a regional rule with the same numbers gets them in each region (twice
  the limit over both: what `global` is for);
- /sluice/rules gives the rule's global limit and this region's slice;
- each appliance reports the global rule's demand into its region's
  Redis (sl:usage:{RULE}: one identity, units, a fresh time; the
  regional rule never), and one round of sluice-aggregator reads those
  reports and writes both regions a slice for the identity (the slices
  enforced and moving: e2e/slices);
- the us appliance's file edited to `{eu: 1, us: 3}` and reloaded: its
  slice is 3/4 (450/min) at once; a file whose regions lack us is
  refused and the running rules stay.

usage: test_regions.py PATH/TO/sluice
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
AGGREGATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                          "sluice-aggregator")
SECS = 6
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
regions: %(regions)s
rules:
  - {name: global, scope: key, match: {path_prefix: /v1/global}, limit: 600/min, burst: 20,
     across_regions: true}
  - {name: regional, scope: key, match: {path_prefix: /v1/regional}, limit: 600/min,
     burst: 20}
store:
  region: %(region)s
  redis: {endpoints: ["127.0.0.1:%(port)d"], timeout_ms: 20}
response: {retry_jitter: 0}
"""


def write(path, **kw):
    with open(path, "w") as f:
        f.write(CONF % kw)


def admitted(t, path, key):
    return sum(1 for r in t.backend_log() if r.get("path", "").startswith(path) and
               ["X-API-Key", key] in r.get("headers", []))


def wrk_both(topos, path, key):
    """wrk through every region at once for SECS; (seconds, offered)."""
    procs = [subprocess.Popen(
        ["ip", "netns", "exec", t.cns, "timeout", str(SECS + 30), "wrk", "-t1", "-c8",
         "-d%ds" % SECS, "-H", "X-API-Key: " + key, "http://%s%s" % (S4, path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for t in topos]
    outs = [p.communicate(timeout=SECS + 60)[0] for p in procs]
    secs = max([float(x) for o in outs for x in re.findall(r"requests in ([\d.]+)s", o)]
               or [SECS])
    offered = [sum(int(x) for x in re.findall(r"(\d+) requests in", o)) for o in outs]
    return secs, offered


def check_run(res, topos, names, path, key, per_region, total, after=None):
    """per_region: (burst, rate/s) each region may admit; total: the same
    for both together. after(): run as soon as the traffic ends."""
    secs, offered = wrk_both(topos, path, key)
    if after is not None:
        after()
    time.sleep(0.3)  # requests still in flight when wrk ended
    got = [admitted(t, path, key) for t in topos]
    for name, n, off in zip(names, got, offered):
        allow = per_region[0] + per_region[1] * secs
        res.check(0.9 * min(allow, off) <= n <= 1.05 * allow,
                  "%s, region %s: %d admitted of %d offered in %.1f s, %.3f x (burst + rate x "
                  "t = %.0f)" % (key, name, n, off, secs, n / allow, allow))
    allow = total[0] + total[1] * secs
    res.check(0.9 * allow <= sum(got) <= 1.05 * allow,
              "%s, both regions: %d admitted, %.3f x (burst + rate x t = %.0f)" % (
                  key, sum(got), sum(got) / allow, allow))


def aggregator(conf, ports):
    """One round of sluice-aggregator over both regions, its log. Run as the
    traffic ends (a report older than three seconds is no demand), not
    during it: its slices would move the static ones measured here
    (e2e/slices measures them moving)."""
    return subprocess.run([sys.executable, AGGREGATOR, "-c", conf, "--once",
                           "--region", "eu=127.0.0.1:%d" % ports[0], "--region",
                           "us=127.0.0.1:%d" % ports[1]],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60).stdout


def check_usage(res, ports, names, said):
    """Each appliance reported the global rule's demand into its region's
    Redis (the regional rule's never), and sluice-aggregator, reading
    those reports, gives the two regions of equal demand about half each."""
    for p, name in zip(ports, names):
        rules = sltest.redis_cli(p, "SMEMBERS", "sl:usage:rules").split()
        rep = {}
        if len(rules) == 1:
            raw = sltest.redis_cli(p, "HGETALL", "sl:usage:{%s}" % rules[0]).splitlines()
            rep = {raw[i]: json.loads(raw[i + 1]) for i in range(0, len(raw) - 1, 2)}
        one = list(rep.values())[0] if len(rep) == 1 else {}
        top = one.get("top", {})
        res.check(len(rules) == 1 and len(rep) == 1 and len(top) == 1 and
                  0 < list(top.values())[0] <= one.get("total", 0) and
                  abs(time.time() * 1000 - one.get("t", 0)) < 5000,
                  "region %s: its appliance reported the global rule's demand, one "
                  "identity, the regional rule not (rules %s, report %s)" % (name, rules, rep))
    parts = []
    for p in ports:
        raw = sltest.redis_cli(p, "--scan", "--pattern", "sl:slice:*").split()
        got = sltest.redis_cli(p, "HGETALL", raw[0]).splitlines() if raw else []
        fields = dict(zip(got[::2], got[1::2]))
        parts += [int(v) for k, v in fields.items() if len(k) == 32]
    # one round on the last second's reports, cut anywhere by the end of
    # the traffic: both regions' demand seen, not its split (e2e/slices).
    # A split within 100 parts of the static halves is no new version:
    # then nothing is written, and the round's log says what it computed.
    rounds = [json.loads(line) for line in said.splitlines()
              if line.startswith("{") and '"round"' in line]
    planned = [list(p.values()) for ids in (rounds[-1]["planned"] if rounds else {}).values()
               for p in ids.values()]
    plan = planned[0] if len(planned) == 1 else []
    good = len(plan) == 2 and sum(plan) <= 10000 and min(plan) >= 200
    res.check(good and (sorted(parts) == sorted(plan) if parts else
                        max(abs(x - 5000) for x in plan) < 100),
              "sluice-aggregator read both regions' reports: the identity's slices %s "
              "written, %s computed (both above the floor, at most the limit; written "
              "unless within 100 parts of the static halves; %s)" % (
                  parts, plan, said.strip()[-300:]))


def main():
    binary = sys.argv[1]
    res = sltest.Results("regions")
    with tempfile.TemporaryDirectory() as tmp:
        ports = [sltest.free_port(), sltest.free_port()]
        redis = []
        for i, p in enumerate(ports):
            d = os.path.join(tmp, "redis%d" % i)
            os.makedirs(d)
            redis.append(sltest.start_redis(p, d))
        try:
            confs = [os.path.join(tmp, "eu.yaml"), os.path.join(tmp, "us.yaml")]
            write(confs[0], regions="{eu: 1, us: 1}", region="eu", port=ports[0])
            write(confs[1], regions="{eu: 1, us: 1}", region="us", port=ports[1])
            pid = os.getpid() % 1000
            with sltest.Topology(binary, confs[0], tmp, prefix="re%d" % pid) as eu, \
                    sltest.Topology(binary, confs[1], tmp, prefix="ru%d" % pid) as us:
                topos, names = [eu, us], ["eu", "us"]
                rules = sltest.telemetry(us.sluice.prefix, "/sluice/rules")["global"]
                res.eq((rules.get("limit"), rules.get("global_limit"), rules.get("slice")),
                       (300, 600, "1/2"), "/sluice/rules: the global rule's limit, its "
                       "global limit and this region's slice")
                res.check("parts/10000" in rules.get("formula", ""),
                          "/sluice/rules gives the formula (%s)" % rules.get("formula"))
                said = []
                check_run(res, topos, names, "/v1/global", "k-global", (10, 5), (20, 10),
                          after=lambda: said.append(aggregator(confs[0], ports)))
                said = said[0] if said else ""
                # read at once: an idle bucket's key expires when full
                keys = [subprocess.run(["redis-cli", "-p", str(p), "--scan", "--pattern",
                                        "sl:{*"], capture_output=True, text=True).stdout.split()
                        for p in ports]
                res.check(all(len(k) == 1 for k in keys),
                          "the global key's state in each region's own Redis (keys: %s)" %
                          [len(k) for k in keys])
                check_usage(res, ports, names, said)
                check_run(res, topos, names, "/v1/regional", "k-regional", (20, 10),
                          (40, 20))
                # the us appliance reweighted: 3/4 of 600 at once
                write(confs[1], regions="{eu: 1, us: 3}", region="us", port=ports[1])
                r = sltest.telemetry(us.sluice.prefix, "/sluice/reload")
                rules = sltest.telemetry(us.sluice.prefix, "/sluice/rules")["global"]
                res.eq((rules.get("limit"), rules.get("slice")), (450, "3/4"),
                       "reloaded with us: 3, its slice is 3/4 of 600 (%s)" % r)
                write(confs[1], regions="{eu: 1, ap: 1}", region="ap", port=ports[1])
                r = sltest.telemetry(us.sluice.prefix, "/sluice/reload")
                rules = sltest.telemetry(us.sluice.prefix, "/sluice/rules")["global"]
                res.check("error" in r and "'us' is not one of" in r["error"] and
                          rules.get("limit") == 450,
                          "a rule set without this appliance's region is refused, the "
                          "running slice kept (%s)" % r)
                res.eq(eu.sluice.stop() + us.sluice.stop(), 0, "both stop cleanly")
        finally:
            for r in redis:
                r.kill()
                r.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
