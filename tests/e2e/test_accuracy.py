#!/usr/bin/python3
"""The shared limit under a slow store. Two appliances x two workers
(idle_sleep_us, as on CI's two vCPUs) share one redis-server reached
through a delay injector written here: a TCP proxy on 127.0.0.1 that
holds each chunk of Redis's replies for a random 0-6 ms, so that a share
of answers miss store.redis.timeout_ms (5 ms) and arrive late. wrk from
both appliances' clients at once, on one key:

- a shared key (600/min, burst 20, accuracy 0.02): admitted within
  [0.9, 1.05] x (burst + rate x t) -- not the 1.6-1.9x that deciding late
  asks from a bucket nothing else charged gave;
- a hot key (6000/min, burst 100): the same bound; Redis calls per 1000
  admitted printed and bounded (600);
- the same key's bound with 1 and with 64 connections from each
  appliance: admissions do not grow with the connections;
- 20 fresh keys on a fail_closed route, one request each, while answers
  are late: all served (one late reply is not an outage);
- a run with Redis paused (SIGSTOP) 3 s in its middle: the same bound,
  no answer slower than a second, the circuit open meanwhile and closed
  after;
- a node the others outpaced, its share refilled to its burst, enters
  an outage admitting nothing while the store's bucket is promised to
  the others' reservations;
- late replies counted and squared (/sluice/store late_*), and the
  degraded counts agree between /sluice/stats, /sluice/store and the
  per-tier counters.

A bounded run outside its bound is printed whole (admissions per second
on each appliance, what each store did) and run once more on a fresh
key; the check fails when the second is outside too (check_bound says
why).

usage: test_accuracy.py PATH/TO/sluice
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import delayproxy  # noqa: E402
import sltest  # noqa: E402

S4 = "198.18.0.2"
SECS = 10
WORKERS = 2  # per appliance
SATURATED_S = 4.0  # SL_LEASE_SATURATED_MS
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 100,
            mbufs: 8191, coordinator_timeout_ms: 50}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: shared, scope: key, match: {path_prefix: /v1/shared}, limit: 600/min,
     burst: 20, accuracy: 0.02}
  - {name: hot, scope: key, match: {path_prefix: /v1/hot}, limit: 6000/min,
     burst: 100, accuracy: 0.02}
  - {name: closed, scope: key, match: {path_prefix: /v1/closed}, limit: 100/min,
     burst: 50, on_store_failure: fail_closed}
store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 5, probe_interval_ms: 200}
  expected_appliances: 2
response: {retry_jitter: 0}
"""


def wrk(topos, path, key, conns=8, during=None, secs=SECS):
    """wrk from each topology's client at once for secs; the seconds it
    ran, the requests sent and the slowest answer (ms). during: run
    meanwhile (in this thread)."""
    t0 = time.time()
    procs = [subprocess.Popen(
        ["ip", "netns", "exec", t.cns, "timeout", str(secs + 30), "wrk", "-t1",
         "-c%d" % conns,
         "-d%ds" % secs, "-H", "X-API-Key: " + key, "http://%s%s" % (S4, path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for t in topos]
    if during is not None:
        during()
    outs = [p.communicate(timeout=secs + 60)[0] for p in procs]
    # wrk's own span (its first request to its last), not the process's
    spans = [float(m.group(1)) for o in outs
             for m in [re.search(r"requests in ([\d.]+)s", o)] if m]
    secs = max(spans) if spans else time.time() - t0
    total = sum(int(m.group(1)) for o in outs
                for m in [re.search(r"(\d+) requests in", o)] if m)
    slowest = 0.0
    for o in outs:
        m = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", o)
        if m:
            slowest = max(slowest, float(m.group(1)) *
                          {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)])
    return secs, total, slowest


def admitted(topos, path, key):
    """Requests of key the backends got (other keys on the same route,
    such as the fresh ones sent during the pause, are not counted)."""
    return sum(1 for t in topos for r in t.backend_log()
               if r.get("path", "").startswith(path) and
               ["X-API-Key", key] in r.get("headers", []))


def timeline(topos, path, key, t0, secs):
    """Each appliance's admissions of key per second from t0 (the
    backend's arrival times): where an excursion happened, and on which
    node."""
    rows = []
    for t in topos:
        n = [0] * (int(secs) + 4)
        for r in t.backend_log():
            if r.get("path", "").startswith(path) and ["X-API-Key", key] in r.get("headers", []) \
                    and "t" in r:
                n[max(0, min(len(n) - 1, int(r["t"] - t0)))] += 1
        rows.append("%s %s" % (t.prefix, " ".join("%2d" % c for c in n)))
    return rows


def store_sum(topos, field):
    return sum(sltest.telemetry(t.sluice.prefix, "/sluice/store").get(field, 0) for t in topos)


# what each appliance's store did over a run, printed with an excursion
WATCH = ("store_calls", "store_timeouts", "late_answers", "late_charged", "late_given_back",
         "degraded", "owed_units", "refunds_owed", "circuit_opened", "reservations")


def store_fields(topos):
    out = []
    for t in topos:
        st = sltest.telemetry(t.sluice.prefix, "/sluice/store") or {}
        out.append([st.get(f, 0) for f in WATCH])
    return out


def run_bound(topos, path, key, count, period_s, burst, conns, during, low, secs):
    """One run of wrk on key for secs: what check_bound judges."""
    steady_from = int(secs * 0.4)
    before = admitted(topos, path, key)
    fields0 = store_fields(topos)
    marks = []

    def sample():
        for at in (steady_from, secs - 1):
            time.sleep(max(0, t0 + at - time.time()))
            marks.append((store_sum(topos, "store_calls"), admitted(topos, path, key),
                          store_sum(topos, "store_timeouts")))
        if during is not None:
            during()

    t0 = time.time()
    secs, total, slowest = wrk(topos, path, key, conns, sample if during is None else during,
                               secs)
    r = {"key": key, "t0": t0, "secs": secs, "total": total, "slowest": slowest,
         "n": admitted(topos, path, key) - before, "steady_from": steady_from}
    r["fields"] = [[b - a for a, b in zip(x, y)] for x, y in zip(fields0, store_fields(topos))]
    r["calls"] = sum(f[0] for f in r["fields"])
    r["allowed"] = burst + count * secs / period_s
    # the lower bound needs demand above the limit (a slow build, under
    # ASan, may offer less): what was offered then bounds it instead.
    # Units reserved when wrk stops and not yet good are not the run's;
    # those good and unspent then are (a key above its limit spends its
    # units as they come good, measured 0.96-0.99 x). A connection moves
    # to another worker at every 429 (it is closed), and what
    # its last worker holds waits there until it comes back or the lease
    # ends: with fewer connections than workers, a worker without one may
    # hold a saturated lease (its fair share of SL_LEASE_SATURATED_MS)
    # good and unspent when wrk stops (measured 0.898-0.991 x with one
    # connection, under ASan too)
    r["idle"] = len(topos) * max(0, WORKERS - conns)
    r["lease"] = count / period_s * SATURATED_S / (len(topos) * WORKERS)
    r["lo"] = low * min(r["allowed"], total) - r["idle"] * r["lease"]
    r["hi"] = 1.05 * r["allowed"]
    r["ok"] = r["lo"] <= r["n"] <= r["hi"]
    r["steady"] = r["steady_timed_out"] = None
    if len(marks) == 2:
        n = max(marks[1][1] - marks[0][1], 1)
        r["steady"] = 1000.0 * (marks[1][0] - marks[0][0]) / n
        # an ask that timed out may be followed by a second before its
        # late answer comes (the lease's asks_out): one call more for
        # each lateness the injector (and the machine) caused
        r["steady_timed_out"] = 1000.0 * (marks[1][2] - marks[0][2]) / n
    return r


def describe(r, conns, low):
    return ("%s under late answers, %d connections from each: %d admitted of %d offered in "
            "%.1f s, %.3f x (burst + rate x t = %.0f; bounds %.0f = %.2f x that - %d idle "
            "workers x a lease of %.0f, %.0f)" % (
                r["key"], conns, r["n"], r["total"], r["secs"], r["n"] / r["allowed"],
                r["allowed"], r["lo"], low, r["idle"], r["lease"], r["hi"]))


def excursion(topos, path, r):
    """Where a run outside its bound went: each appliance's admissions
    per second and what its store did, for the issue to read."""
    for row in timeline(topos, path, r["key"], r["t0"], r["secs"]):
        print("  per second: " + row)
    for t, f in zip(topos, r["fields"]):
        print("  %s store: %s" % (t.prefix, " ".join("%s=%d" % kv for kv in zip(WATCH, f))))


def check_bound(res, topos, path, key, count, period_s, burst, conns=8, during=None,
                low=0.9, secs=SECS):
    """Runs wrk on KEY for secs and checks admissions within [low, 1.05] x
    (burst + rate x t). A run outside is printed whole (its per-second
    admissions on each appliance, what each store did) and the scenario
    runs once more on a fresh key: the check fails when that one is
    outside too. A broken shared limit fails both (1.6-1.9 x before the
    ledger); the tails of a sound one are single runs, on a 2-vCPU
    machine whose scheduling decides which appliance outpaces the other
    (a 3 s outage in CI: 1.076 x once under ASan, 0.899 x once before the
    refunds; 0.904-1.0 x in 30 runs of it here). Returns (Redis calls per
    1000 admitted over the run, the same over its steady part (from 40 %
    of the run to its last second: without the first asks that find the
    key at its limit), the slowest answer) of the run that counted."""
    r = run_bound(topos, path, key, count, period_s, burst, conns, during, low, secs)
    if not r["ok"]:
        print("     excursion: " + describe(r, conns, low))
        excursion(topos, path, r)
        sltest.record("accuracy", run=key, conns=conns, admitted=r["n"], ratio=r["n"] /
                      r["allowed"], excursion=True)
        r = run_bound(topos, path, key + "-again", count, period_s, burst, conns, during, low,
                      secs)
    res.check(r["ok"], describe(r, conns, low))
    if not r["ok"] or os.environ.get("SL_TIMELINE"):
        excursion(topos, path, r)
    per = 1000.0 * r["calls"] / max(r["n"], 1)
    steady = r["steady"]
    print("  %s: %d Redis calls, %.1f per 1000 admitted (%s from %d s on, %s of them after "
          "a timed-out ask), slowest answer %.1f ms" % (
              r["key"], r["calls"], per, "-" if steady is None else "%.1f" % steady,
              r["steady_from"], "-" if steady is None else "%.1f" % r["steady_timed_out"],
              r["slowest"]))
    sltest.record("accuracy", run=r["key"], conns=conns, admitted=r["n"], offered=r["total"],
                  secs=r["secs"], allowed=r["allowed"], low=r["lo"], high=r["hi"],
                  ratio=r["n"] / r["allowed"], calls_per_1000=per,
                  steady_calls_per_1000=steady, steady_timed_out=r["steady_timed_out"])
    return per, None if steady is None else (steady, r["steady_timed_out"]), r["slowest"]


# 20 connections opened first ("ready"), their heads sent at once when a
# line comes on stdin: the time they went, then each one's status
AT_ONCE = """
import socket, sys, time
host, key = sys.argv[1], sys.argv[2]
socks = [socket.create_connection((host, 80), timeout=10) for _ in range(20)]
print("ready", flush=True)
sys.stdin.readline()
sent = time.time()
for i, s in enumerate(socks):
    s.sendall(("GET /v1/shared/x%d HTTP/1.1\\r\\nHost: %s\\r\\nX-API-Key: %s\\r\\n"
               "Connection: close\\r\\n\\r\\n" % (i, host, key)).encode())
codes = []
for s in socks:
    head = s.recv(64).split(b" ")
    codes.append(head[1].decode() if len(head) > 1 else "0")
print(sent, " ".join(codes))
"""


def outpaced(res, redis, a, b, key="k-outpaced"):
    """A node the others outpaced enters an outage with its share's rate,
    not its burst: A takes the whole of a key for 4 s while B is refused,
    then Redis stops and B gets 20 requests at once. B's share (limit /
    2: 300/min, burst 10) had refilled to its burst meanwhile, while
    the store had nothing left and A still holds what it reserved: the
    store's last answers to B said its bucket was promised seconds
    ahead (A's reservations), so B's share earns nothing until then and
    B admits none of the 20 (measured 0 in 10 runs; 10-14 were admitted
    with the burst, then up to 5 while B's share earned its rate from
    the outage's first decision, which A's reservations already had)."""
    pre = []

    def refused_meanwhile():
        # until the store refuses B: a grant's lease may cover B's next
        # few requests (under ASan, where A saturates the key later, three
        # requests were all answered from one)
        time.sleep(2)
        until = time.time() + 1.5
        while 429 not in pre and len(pre) < 30 and time.time() < until:
            pre.append(b.curl("-H", "X-API-Key: " + key, "http://%s/v1/shared/pre" % S4)[0])

    wrk((a,), "/v1/shared", key, during=refused_meanwhile, secs=4)
    # the connections opened before the outage: a lost SYN's second
    # retransmission is not the outage's
    p = subprocess.Popen(["ip", "netns", "exec", b.cns, "timeout", "30", "/usr/bin/python3",
                          "-c", AT_ONCE, S4, key], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    redis.send_signal(signal.SIGSTOP)
    t_stop = time.time()
    try:
        # late or out, the node decides: no need to wait for the circuit
        time.sleep(0.5)
        out = p.communicate("go\n", timeout=30)[0].split()
        elapsed = time.time() - t_stop
    finally:
        redis.send_signal(signal.SIGCONT)
    start = float(out[0]) - t_stop if out else 0.0
    codes = [int(c) for c in out[1:]]
    # 20 heads sent at once on connections opened before, decided within
    # 50 ms (the coordinator's deadline) of arriving: a unit at most, a
    # worker's slice earning its rate over that span where its own last
    # answer was not a refusal (curl -Z spread them over a second on a
    # loaded machine, 7 admitted)
    res.check(pre.count(429) >= 1 and len(codes) == 20 and codes.count(200) <= 1,
              "an outpaced node in an outage: %d of 20 requests at once admitted, sent %.1f s "
              "into it, answered by %.1f s (bound 1: the store's bucket was promised to A's "
              "reservations; B was answered %s before)" % (codes.count(200), start, elapsed,
                                                            pre))


def main():
    binary = sys.argv[1]
    res = sltest.Results("accuracy")
    port = sltest.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        redis = sltest.start_redis(port, tmp)
        proxy = delayproxy.DelayProxy(port, 6)
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF % proxy.port)
        pid = os.getpid() % 1000
        try:
            with sltest.Topology(binary, conf, tmp, workers=WORKERS, prefix="ya%d" % pid) as a, \
                    sltest.Topology(binary, conf, tmp, workers=WORKERS, prefix="yb%d" % pid) as b:
                topos = (a, b)
                check_bound(res, topos, "/v1/shared", "k-shared", 600, 60, 20)
                # a client cannot multiply the limit by its connections
                check_bound(res, topos, "/v1/shared", "k-conn1", 600, 60, 20, conns=1)
                check_bound(res, topos, "/v1/shared", "k-conn64", 600, 60, 20, conns=64)
                # 15 s: the first asks of its four holders (~4 s under
                # ASan) left out of the steady part
                per, steady, _ = check_bound(res, topos, "/v1/hot", "k-hot", 6000, 60, 100,
                                             secs=15)
                # a key above its limit (here 1.6x, the demand wrk's
                # reconnects after each 429 allow) gets leases of its
                # holders' fair share of 4 s, reserved in Redis up to 5 s
                # ahead and good at the rate: one call per lease once the
                # key is known to be at its limit (measured 12.9-14.8 per
                # 1000 from 6 to 14 s; 17-22 while a holder its
                # connections fell short on, seen below its share, was
                # not counted saturated; ~140 when reservations were good only
                # at their end and 0.5 s ahead, ~1 100 with leases capped
                # by the accuracy budget); over the whole run the first
                # asks of each holder and the leases given back add more.
                # An ask that timed out may be followed by a second, one
                # more call per late answer: counted apart (the steady
                # part measured 15.2, 16.5 and 23.0 per 1000 with 4.7 or
                # more of them after a timeout, on the same 4.4-5 k
                # requests offered; the rest is what the bound judges)
                res.check(steady is not None and steady[0] - steady[1] <= 20,
                          "hot key at its limit: %.1f Redis calls per 1000 admitted from 6 "
                          "to 14 s, %.1f of them after a timed-out ask: %.1f (bound 20)" % (
                              steady[0], steady[1], steady[0] - steady[1]))
                res.check(per <= 50, "hot key: %.1f Redis calls per 1000 admitted over the "
                          "run (bound 50)" % per)
                late = store_sum(topos, "late_answers")
                timeouts = store_sum(topos, "store_timeouts")
                res.check(timeouts > 0 and late > 0,
                          "the injector made answers late: %d timeouts, %d late replies "
                          "(%d units given back, %d charged)" % (
                              timeouts, late, store_sum(topos, "late_given_back"),
                              store_sum(topos, "late_charged")))
                # fresh keys on a fail_closed route while replies are late
                codes = [(a if i % 2 else b).curl("-H", "X-API-Key: k-fresh-%d" % i,
                                                  "http://%s/v1/closed/%d" % (S4, i))[0]
                         for i in range(20)]
                res.eq(codes.count(200), 20,
                       "20 fresh keys on a fail_closed route, replies late: all served (%s)" %
                       codes)
                for t in topos:
                    st = sltest.telemetry(t.sluice.prefix, "/sluice/stats")
                    store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
                    tiers = sltest.telemetry(t.sluice.prefix, "/sluice/tiers")
                    tier_deg = sum(v.get("degraded", 0) for v in tiers.values()
                                   if isinstance(v, dict))
                    # asks the node decided mean requests decided so
                    res.check(store["store_degraded"] == 0 or st["degraded"] > 0,
                              "%s: %d asks decided by the node show as degraded "
                              "requests (%d)" % (t.prefix, store["store_degraded"],
                                                 st["degraded"]))
                    res.eq((st["degraded"], tier_deg), (store["degraded"], store["degraded"]),
                           "%s: degraded requests agree in /sluice/stats, /sluice/store and "
                           "the tiers (%d; %d asks decided by the node)" % (
                               t.prefix, st["degraded"], store["store_degraded"]))
                # Redis paused 3 s in the middle of a run: each node decides
                # from its share meanwhile; the bound holds, nothing stalls,
                # the circuit closes again once it answers
                opened = store_sum(topos, "circuit_opened")

                outage = []
                before = {}

                def pause():
                    time.sleep(3.5)
                    for f in ("owed_units", "late_charged", "late_covered"):
                        before[f] = store_sum(topos, f)
                    redis.send_signal(signal.SIGSTOP)
                    t_stop = time.time()
                    # a key never seen, first asked for while Redis is
                    # out: the node decides from its share (the paused
                    # key's holders may well spend what they had reserved)
                    time.sleep(1)
                    for i in range(3):
                        code, hdrs, body = a.curl("-H", "X-API-Key: k-outage",
                                                  "http://%s/v1/shared/o%d" % (S4, i))
                        outage.append(code)
                        if code != 200:
                            print("  k-outage %d: %d %s %s" % (i, code, hdrs, body.strip()))
                    time.sleep(max(0, t_stop + 3 - time.time()))
                    redis.send_signal(signal.SIGCONT)

                # while Redis is out each node admits from its share and
                # owes what it admitted; charged when Redis answers again
                # (against the refill Redis lost to its cap meanwhile), so
                # the fleet's count has every unit: measured 0.93-0.99 x
                # (it was 1.08 x uncharged, 0.78 x charged after the cap)
                _, _, slowest = check_bound(res, topos, "/v1/shared", "k-pause", 600, 60,
                                            20, during=pause)
                # sluice's own wait, not wrk's latency (which has a lost
                # SYN's 1 s retransmission in it on a loaded machine): a
                # parked request is decided at the coordinator's deadline
                # (50 ms), whether Redis answers or not
                waited = max(sltest.telemetry(t.sluice.prefix, "/sluice/store")["parked_ns_max"]
                             for t in topos) / 1e6
                res.check(waited < 1000, "Redis paused for 3 s: no request waited for it (the "
                          "longest park %.0f ms or less; wrk's slowest answer %.0f ms)" % (
                              waited, slowest))
                # the circuit closes on the first reply after a probe: an ask
                # is needed (the paused key's clients are answered locally)
                deadline = time.time() + 0.2 + 1 + 1
                while True:
                    for t in topos:
                        t.curl("-H", "X-API-Key: k-probe", "http://%s/v1/shared/p" % S4)
                    states = [sltest.telemetry(t.sluice.prefix, "/sluice/store")["state"]
                              for t in topos]
                    if states == ["closed", "closed"] or time.time() > deadline:
                        break
                    time.sleep(0.1)
                res.check(store_sum(topos, "circuit_opened") > opened and
                          states == ["closed", "closed"],
                          "the circuit opened while Redis was paused (%d times) and "
                          "closed after (%s)" % (store_sum(topos, "circuit_opened") - opened,
                                                 states))
                # (the last pause's: the run is repeated after an excursion)
                res.eq(outage[-3:], [200] * 3, "a fresh key while Redis was out: served from the "
                       "node's share (fail_open)")
                deadline = time.time() + 3
                while (store_sum(topos, "owed_charged") < store_sum(topos, "owed_units") or
                       store_sum(topos, "refunds_settled") < store_sum(topos, "refunds_owed")) \
                        and time.time() < deadline:
                    time.sleep(0.1)
                owed = store_sum(topos, "owed_units")
                # what was admitted while Redis was out reaches it once:
                # owed once the circuit opens, or, for an ask that was
                # already out, charged by its late reply, or counted by
                # that reply's own grant where it granted as many (under
                # load the circuit opens later and every unit can go one
                # of the last two ways: a fresh key's late grant covered
                # all three once, nothing owed or charged)
                carried = {f: store_sum(topos, f) - before[f] for f in before}
                res.check(carried["owed_units"] + carried["late_charged"] +
                          carried["late_covered"] >= 1 and
                          store_sum(topos, "owed_charged") == owed and
                          store_sum(topos, "owed_dropped") == 0,
                          "units admitted while Redis was out were carried to it once it "
                          "answered (%d owed, %d charged by late replies, %d covered by "
                          "their grants; %d owed in all, %d charged, %d dropped)" % (
                              carried["owed_units"], carried["late_charged"],
                              carried["late_covered"], owed,
                              store_sum(topos, "owed_charged"),
                              store_sum(topos, "owed_dropped")))
                # reserved units given back while Redis was out: it still
                # counts them as spent, so they are refunded once it
                # answers (lost, they were 0-30 units of a run's 120)
                kept = store_sum(topos, "refunds_owed")
                res.check(store_sum(topos, "refunds_settled") == kept and
                          store_sum(topos, "given_back_lost") == 0,
                          "units given back while Redis was out were refunded once it "
                          "answered (%d kept, %d refunded, %d lost)" % (
                              kept, store_sum(topos, "refunds_settled"),
                              store_sum(topos, "given_back_lost")))
                outpaced(res, redis, a, b)
                res.eq(a.sluice.stop(), 0, "A stops cleanly")
                res.eq(b.sluice.stop(), 0, "B stops cleanly")
        finally:
            proxy.close()
            redis.kill()
            redis.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
