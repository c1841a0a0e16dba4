#!/usr/bin/python3
"""Two appliances, one Redis: each sluice (own namespaces, own
--file-prefix) leases from a real redis-server on 127.0.0.1, so a limit
holds across both. Redis stopped (SIGSTOP), then killed: no request
stalls, each rule's on_store_failure decides, the circuit opens; Redis
back: the circuit closes and the shared limit holds again.

usage: test_redis.py PATH/TO/sluice
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
# small tables and napping idle workers: two appliances x two polling
# workers share CI's two vCPUs with Redis, curl and the kernel
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200,
            mbufs: 4095, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: shared, scope: key, match: {path_prefix: /v1/shared}, limit: 5/min, burst: 5}
  - {name: open, scope: key, match: {path_prefix: /v1/open}, limit: 4/min, burst: 4,
     on_store_failure: fail_open}
  - {name: closed, scope: key, match: {path_prefix: /v1/closed}, limit: 100/min,
     on_store_failure: fail_closed}
  - {name: leased, scope: key, match: {path_prefix: /v1/bulk}, limit: 200/min, burst: 200,
     accuracy: 0.1}
  - {name: strict, scope: key, match: {path_prefix: /v1/strict}, limit: 8/min, burst: 8,
     on_store_failure: local_strict}
  - {name: open8, scope: key, match: {path_prefix: /v1/eight}, limit: 8/min, burst: 8,
     on_store_failure: fail_open}
store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 20, probe_interval_ms: 300}
  expected_appliances: 2
response: {retry_jitter: 0}
"""


def strict_vs_open(res, redis, t):
    """Redis frozen, the circuit open: a fresh key on a local_strict rule
    gets the limit divided by every lease holder (2 appliances x 2
    workers: 8/4 = 2), one on fail_open by the appliances (8/2 = 4) —
    each decided by the node at once, from its ledger."""
    redis.send_signal(signal.SIGSTOP)
    try:
        deadline = time.time() + 5
        state = "closed"
        while time.time() < deadline and state != "open":
            t.curl("-H", "X-API-Key: k-trip", "http://%s/v1/shared/t" % S4)
            state = sltest.telemetry(t.sluice.prefix, "/sluice/store")["state"]
        res.eq(state, "open", "Redis frozen: the circuit open")
        got = {path: [t.curl("-H", "X-API-Key: k-%s" % path,
                             "http://%s/v1/%s/%d" % (S4, path, i))[0] for i in range(6)]
               for path in ("strict", "eight")}
        res.eq((got["strict"].count(200), got["eight"].count(200)), (2, 4),
               "store out: local_strict 8/min over 4 holders admits 2, fail_open over 2 "
               "appliances 4 (%s)" % got)
        res.check(all(c in (200, 429) for v in got.values() for c in v),
                  "every answer a 200 or a 429")
    finally:
        redis.send_signal(signal.SIGCONT)


def flapping(binary, res, tmp, conf, redis):
    """Redis paused and continued every half second: a known key and a
    fresh key each time, on a fail_open rule, are all served, and no
    request waits for the worker's own deadline (coordinator_timeout_ms,
    200 ms): an ask the store does not answer within its timeout (20 ms)
    is decided by the node at its next poll. A veth pair's first exchange
    (0.5-0.8 s until its carrier is on) once read as such a wait."""
    with sltest.Topology(binary, conf, tmp, workers=2, prefix="rf%d" % (os.getpid() % 1000)) as t:
        t.curl("-H", "X-API-Key: k-known", "http://%s/v1/bulk/0" % S4)
        codes, slow = [], 0.0
        for i in range(10):
            redis.send_signal(signal.SIGSTOP if i % 2 == 0 else signal.SIGCONT)
            for key in ("k-known", "k-fresh-%d" % i):
                t0 = time.time()
                codes.append(t.curl("-H", "X-API-Key: " + key,
                                    "http://%s/v1/bulk/%d" % (S4, i))[0])
                slow = max(slow, time.time() - t0)
            time.sleep(0.5)
        redis.send_signal(signal.SIGCONT)
        store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
        res.eq(codes.count(200), len(codes),
               "Redis flapping every 0.5 s: every known and fresh key served (%s)" % codes)
        st = t.sluice.stats()
        res.check(st["degraded"] > 0 and st["degraded"] == store["degraded"],
                  "requests decided while an answer was late are counted degraded "
                  "(%d; /sluice/store %d)" % (st["degraded"], store["degraded"]))
        res.check(store["store_timeouts"] > 0 and store["parked_ns_max"] < 200000000,
                  "no request waited for the worker's deadline: the longest park %.1f ms "
                  "(its bucket), the store's timeout 20 ms, %d asks timed out; curl's "
                  "slowest %.3f s" % (store["parked_ns_max"] / 1e6, store["store_timeouts"],
                                      slow))
        res.eq(t.sluice.stop(), 0, "the flapped appliance stops cleanly")


def two_workers_each(binary, res, tmp, conf, redis):
    """The accuracy run again with two workers per appliance: four lease
    holders of one limit, connections spread over both queues by RSS;
    then the store out: local_strict against fail_open."""
    with sltest.Topology(binary, conf, tmp, workers=2, prefix="rc%d" % (os.getpid() % 1000)) as a, \
            sltest.Topology(binary, conf, tmp, workers=2, prefix="rd%d" % (os.getpid() % 1000)) as b:
        sltest.check_two_by_two(res, a, b, "k-bulk4", "2 appliances x 2 workers")
        strict_vs_open(res, redis, a)
        res.eq(a.sluice.stop(), 0, "A (2 workers) stops cleanly")
        res.eq(b.sluice.stop(), 0, "B (2 workers) stops cleanly")


def main():
    binary = sys.argv[1]
    res = sltest.Results("redis")
    port = sltest.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF % port)
        redis = sltest.start_redis(port, tmp)
        try:
            with sltest.Topology(binary, conf, tmp, prefix="ra%d" % (os.getpid() % 1000)) as a, \
                    sltest.Topology(binary, conf, tmp, prefix="rb%d" % (os.getpid() % 1000)) as b:
                def get(t, path, key):
                    t0 = time.time()
                    st = t.curl("-H", "X-API-Key: " + key, "http://%s%s" % (S4, path))[0]
                    return st, time.time() - t0

                codes = []
                for i in range(6):
                    codes.append(get(a, "/v1/shared/a%d" % i, "k-shared")[0])
                    codes.append(get(b, "/v1/shared/b%d" % i, "k-shared")[0])
                res.eq(sorted(codes), [200] * 5 + [429] * 7,
                       "5/min across two appliances through Redis: 5 of 12 (%s)" % codes)
                keys = subprocess.run(["redis-cli", "-p", str(port), "--scan", "--pattern", "sl:*"],
                                      capture_output=True, text=True).stdout.split()
                res.check(len(keys) > 0, "state lives in Redis under hash-tagged keys")
                ttls = [int(subprocess.run(["redis-cli", "-p", str(port), "pttl", k],
                                           capture_output=True, text=True).stdout or -1)
                        for k in keys]
                res.check(all(t > 0 for t in ttls),
                          "every key has a TTL (%d keys, %s ms)" % (len(keys), ttls))
                store = sltest.telemetry(a.sluice.prefix, "/sluice/store")
                res.eq((store["kind"], store["state"]), ("redis", "closed"), "/sluice/store: redis, closed")
                res.eq(store["scripts"], "fcall", "Redis 7: the scripts run as functions (FCALL)")

                def functions():
                    return subprocess.run(["redis-cli", "-p", str(port), "function", "list"],
                                          capture_output=True, text=True).stdout

                res.check("sluice_" in functions() and "sl_reserve_" in functions(),
                          "the sluice function library is loaded")
                # functions flushed under it: the ask is sent again as EVAL, the
                # library loaded again, and the limit still counts
                subprocess.run(["redis-cli", "-p", str(port), "function", "flush"],
                               capture_output=True)
                res.check("sl_reserve_" not in functions(), "FUNCTION FLUSH emptied the library")
                codes = [get(a, "/v1/shared/f%d" % i, "k-flush")[0] for i in range(6)]
                res.eq(codes, [200] * 5 + [429], "after FUNCTION FLUSH: still 5 of 6")
                res.check("sl_reserve_" in functions(), "the library was loaded again")

                # a leased limit, demand above it from both appliances at once
                sltest.check_leased_200(res, a, b, "k-bulk", "across two appliances")

                # Redis frozen: nobody waits long, each rule's policy decides
                redis.send_signal(signal.SIGSTOP)
                out = [get(a, "/v1/open/%d" % i, "k-open") for i in range(4)]
                res.eq([c for c, _ in out], [200, 200, 429, 429],
                       "fail_open: the limit divided by expected_appliances (4/2) while Redis is out")
                # the coordinator's deadline is 200 ms, Redis's 20 ms: a
                # second is five deadlines and curl's own start
                res.check(max(d for _, d in out) < 1.0,
                          "no request stalled (slowest %.3f s)" % max(d for _, d in out))
                res.eq(get(a, "/v1/closed/1", "k-closed")[0], 429, "fail_closed refuses")
                store = sltest.telemetry(a.sluice.prefix, "/sluice/store")
                # open, or already half-open: its probe interval may have
                # passed by the time this is read on a loaded machine
                res.check(store["state"] in ("open", "half_open") and store["circuit_opened"] >= 1,
                          "/sluice/store: the circuit opened (state %s, opened %d times)" % (
                              store["state"], store["circuit_opened"]))
                # requests decided without Redis: by the node in its place
                # (store_degraded asks) or by a worker alone at its own
                # deadline (degraded requests), as the timing falls
                res.check(store["degraded"] > 0,
                          "degraded decisions counted (%d requests; %d asks by the node)" % (
                              store["degraded"], store["store_degraded"]))

                # Redis back: the circuit closes, the shared limit holds again
                redis.send_signal(signal.SIGCONT)
                deadline = time.time() + 10
                states = []
                while time.time() < deadline:
                    for t in (a, b):
                        get(t, "/v1/closed/probe", "k-probe")
                    states = [sltest.telemetry(t.sluice.prefix, "/sluice/store")["state"]
                              for t in (a, b)]
                    if states == ["closed", "closed"]:
                        break
                    time.sleep(0.2)
                res.eq(states, ["closed", "closed"],
                       "the circuit closed again on both after Redis came back")
                # both asking Redis again: exactly the limit across them,
                # not a share each (fail_open's 2 + 2) nor more
                codes = [get(a if i % 2 else b, "/v1/shared/x%d" % i, "k-after")[0]
                         for i in range(10)]
                res.eq(sorted(codes), [200] * 5 + [429] * 5,
                       "limits back across appliances: 5 of 10 admitted (%s)" % codes)

                # Redis killed and restarted: the same
                redis.kill()
                redis.wait()
                st, d = get(b, "/v1/closed/2", "k-closed2")
                res.check(st == 429 and d < 2.0, "Redis killed: fail_closed refuses at once")
                redis = sltest.start_redis(port, tmp)
                deadline = time.time() + 10
                st = 0
                while time.time() < deadline:
                    st = get(b, "/v1/closed/3", "k-closed3")[0]
                    if st == 200:
                        break
                    time.sleep(0.3)
                res.eq((st, sltest.telemetry(b.sluice.prefix, "/sluice/store")["state"]),
                       (200, "closed"),
                       "Redis restarted: back to closed, a fail_closed request served")
                res.eq(a.sluice.stop(), 0, "appliance A stops cleanly")
                res.eq(b.sluice.stop(), 0, "appliance B stops cleanly")
            two_workers_each(binary, res, tmp, conf, redis)
            flapping(binary, res, tmp, conf, redis)
        finally:
            if redis.poll() is None:
                redis.send_signal(signal.SIGCONT)
                redis.kill()
                redis.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
