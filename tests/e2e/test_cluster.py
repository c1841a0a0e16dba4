#!/usr/bin/python3
"""Two appliances against a local Redis Cluster of three masters (started
here with redis-server and redis-cli --cluster create): limits hold across
both for keys that live on different masters; a slot moved to another
master mid-run is followed through MOVED, and the limit still holds; a
slot caught mid-migration is followed through ASK (ASKING to the
importing master, the slot left to its source) with the key's count
intact; a
leased 200/min key under demand from both stays within its bound, with
one worker per appliance and again with two; a hot key spread over
three masters (sub_buckets: 3) is admitted at its rate in every second
of a flood from both. Both
appliances write every decision to one Redis Stream whose slot lives on a
master other than the seed (reached through MOVED).

usage: test_cluster.py PATH/TO/sluice
"""

import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

cli = sltest.redis_cli

S4 = "198.18.0.2"
CONF = """version: 1
# small tables and napping idle workers: two appliances x two polling
# workers share CI's two vCPUs with three Redis masters, curl and the kernel
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200,
            mbufs: 4095, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: shared, scope: key, match: {path_prefix: /v1/shared}, limit: 5/min, burst: 5}
  - {name: leased, scope: key, match: {path_prefix: /v1/bulk}, limit: 200/min, burst: 200,
     accuracy: 0.1}
  - {name: split, scope: key, match: {path_prefix: /v1/split}, limit: 6000/min, burst: 300,
     sub_buckets: 3}
store:
  redis: {endpoints: ["127.0.0.1:%d"], cluster: true, timeout_ms: 50, probe_interval_ms: 300}
  expected_appliances: 2
response: {retry_jitter: 0}
decisions: {sample: 1, stream: "%s", maxlen: 10000}
"""


def owner(ports, slot):
    """The port of the master serving slot."""
    for line in cli(ports[0], "cluster", "nodes").splitlines():
        f = line.split()
        if "master" not in f[2]:
            continue
        for r in f[8:]:
            lo, _, hi = r.partition("-")
            if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                return int(f[1].split(":")[1].split("@")[0])
    return None


def move_slot(ports, slot, src, dst):
    """Moves slot (and its keys) from master src to master dst."""
    sid, did = cli(src, "cluster", "myid"), cli(dst, "cluster", "myid")
    cli(dst, "cluster", "setslot", str(slot), "importing", sid)
    cli(src, "cluster", "setslot", str(slot), "migrating", did)
    keys = cli(src, "cluster", "getkeysinslot", str(slot), "1000").split()
    if keys:
        cli(src, "migrate", "127.0.0.1", str(dst), "", "0", "5000", "keys", *keys)
    for p in ports:
        cli(p, "cluster", "setslot", str(slot), "node", did)


def asking_calls(port):
    """ASKING commands a node has run."""
    m = re.search(r"cmdstat_asking:calls=(\d+)", cli(port, "info", "commandstats"))
    return int(m.group(1)) if m else 0


def ask_redirect(res, ports, run, all_keys, a, b):
    """A slot caught in the middle of a migration: importing on one master,
    migrating on another, its keys already moved, never finished. The
    source answers ASK for them; sluice must send ASKING and its script to
    the importing master, once, without taking the slot into its map (the
    slot is still the source's). The key's count moved with it: 2 admitted
    before, 3 more after, 5 in all (a fresh count on either side would
    admit more)."""
    k = "k-ask"
    before = all_keys()
    res.eq(run(k, 1).count(200), 2, "k-ask: first two pass")
    fresh = all_keys() - before
    slots = {int(cli(ports[0], "cluster", "keyslot", x)) for x in fresh}
    asking0 = {p: asking_calls(p) for p in ports}
    red0 = sum(sltest.telemetry(t.sluice.prefix, "/sluice/store")["redirects"] for t in (a, b))
    moves = []
    for s in slots:
        src = owner(ports, s)
        dst = next(p for p in ports if p != src)
        sid, did = cli(src, "cluster", "myid"), cli(dst, "cluster", "myid")
        cli(dst, "cluster", "setslot", str(s), "importing", sid)
        cli(src, "cluster", "setslot", str(s), "migrating", did)
        keys = cli(src, "cluster", "getkeysinslot", str(s), "1000").split()
        cli(src, "migrate", "127.0.0.1", str(dst), "", "0", "5000", "keys", *keys)
        moves.append((s, src, dst, did))
    codes = run(k, 3)
    res.eq(codes.count(200), 3, "mid-migration (ASK): 3 more, 5 in all (%s)" % codes)
    asked = {p: asking_calls(p) - asking0[p] for p in ports}
    dsts = {m[2] for m in moves}
    red = sum(sltest.telemetry(t.sluice.prefix, "/sluice/store")["redirects"]
              for t in (a, b)) - red0
    # a request refused from a cached refusal asks nothing; every ask that
    # went found the source first (the slot never taken into the map)
    res.check(moves and all(asked[d] >= 3 for d in dsts) and
              not any(asked[p] for p in ports if p not in dsts) and red == sum(asked.values()),
              "ASKING sent to the importing master only, once per ask, each ask to the "
              "source first (ASKING %s, %d redirects, 6 requests)" % (asked, red))
    for s, src, dst, did in moves:
        for p in ports:
            cli(p, "cluster", "setslot", str(s), "node", did)
    codes = run(k, 1)
    res.eq(codes.count(200), 0, "migration finished (MOVED): still 5 in all (%s)" % codes)


def script_calls(port):
    """Script calls a node has run (FCALL, EVALSHA, EVAL)."""
    out = cli(port, "info", "commandstats")
    return sum(int(m) for m in re.findall(r"cmdstat_(?:fcall|evalsha|eval):calls=(\d+)", out))


def split_key(res, ports, c, d):
    """A hot key with sub_buckets: 3 from both appliances under wrk: its
    state in three keys, one per master; the script calls shared by the
    masters; admissions within the limit."""
    def late():
        st = [sltest.telemetry(t.sluice.prefix, "/sluice/store") for t in (c, d)]
        return sum(x["store_degraded"] + x["late_answers"] for x in st)

    calls0 = {p: script_calls(p) for p in ports}
    late0 = late()
    n0 = sum(1 for t in (c, d) for r in t.backend_log() if r["path"].startswith("/v1/split"))
    procs = [subprocess.Popen(
        ["ip", "netns", "exec", t.cns, "timeout", "40", "wrk", "-t1", "-c8", "-d6s",
         "-H", "X-API-Key: k-split", "http://%s/v1/split" % S4],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for t in (c, d)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    wrk_secs = max([float(x) for o in outs for x in re.findall(r"requests in ([\d.]+)s", o)]
                   or [6])
    secs = wrk_secs
    offered = sum(int(x) for o in outs for x in re.findall(r"(\d+) requests in", o))
    time.sleep(0.3)  # requests still in flight when wrk ended
    got = sorted(r["t"] for t in (c, d) for r in t.backend_log()
                 if r["path"].startswith("/v1/split"))[n0:]
    n = len(got)
    # the two wrks start one after the other (a namespace each): the
    # limit runs over the span both together admitted in, which under
    # load is longer than either's own (8.8 s against 8.1 was seen)
    if len(got) > 1:
        secs = max(secs, got[-1] - got[0])
    allowed = 300 + 100 * secs
    # a Redis answer later than timeout_ms (50 ms: a loaded CI machine
    # delays three masters and two appliances on two CPUs) is decided by
    # the rule's fail_open share instead, charged to the store once it
    # answers: admitted, not refused, so it may add to the count
    lt = late() - late0
    top = 1.05 if lt == 0 else 1.10
    # the rate second by second, while both wrks run (they start within
    # a second of each other): a sub-bucket none of the holders drew on
    # left 2/3 of the rate for seconds, made up for in a lump once it
    # was asked again (its refill capped at its burst), which the whole
    # run's count hid
    per_s = [sum(1 for x in got if w <= x - got[0] < w + 1) for w in (1, 2, 3, 4)] \
        if got else [0]
    if lt == 0:
        res.check(min(per_s) >= 0.75 * 100,
                  "sub_buckets 3: admitted each second from 1 s to 5 s %s, at least 0.75 x "
                  "the rate (100/s)" % per_s)
    else:
        print("  admitted each second from 1 s to 5 s: %s (%d answers late)" % (per_s, lt))
    # at least 0.9 x what one wrk's own span was due: past it, one
    # appliance alone still asks while the other's reservations stand
    # unspent until its leases end (fewer admissions, never more), and
    # a start 1.4 s behind the other read 0.895 x over the joint span
    owed = 300 + 100 * wrk_secs
    res.check(0.9 * min(owed, offered) <= n <= top * allowed,
              "sub_buckets 3: %d admitted of %d offered in %.1f s, %.3f x (burst + rate x t "
              "= %.0f; at most %.2f x with %d answers late; at least 0.9 x %.0f, one wrk's "
              "%.1f s)" % (n, offered, secs, n / allowed, allowed, top, lt, owed, wrk_secs))
    where = {}
    for p in ports:
        for k in subprocess.run(["redis-cli", "-p", str(p), "--scan", "--pattern", "sl:{*.*.*}:*"],
                                capture_output=True, text=True).stdout.split():
            where[k] = p
    res.eq(sorted(set(where.values())), sorted(ports),
           "sub_buckets 3: the key's state in %d keys, one on each master (%s)" % (
               len(where), sorted(where.items())))
    calls = {p: script_calls(p) - calls0[p] for p in ports}
    total = sum(calls.values())
    res.check(total > 0 and min(calls.values()) >= 0.15 * total,
              "sub_buckets 3: script calls shared by the masters (%s; %.1f per 1000 admitted)" %
              (calls, 1000.0 * total / max(n, 1)))
    st = [sltest.telemetry(t.sluice.prefix, "/sluice/store") for t in (c, d)]
    print("  sub-bucket retries: %d" % sum(x["sub_bucket_retries"] for x in st))


def main():
    binary = sys.argv[1]
    res = sltest.Results("cluster")
    with tempfile.TemporaryDirectory() as tmp:
        ports, procs = sltest.start_cluster(tmp, 3)
        try:
            conf = os.path.join(tmp, "sluice.yaml")
            stream = next(k for k in ("sl:dec:%d" % i for i in range(100))
                          if owner(ports, int(cli(ports[0], "cluster", "keyslot", k)))
                          != ports[0])
            with open(conf, "w") as f:
                f.write(CONF % (ports[0], stream))
            with sltest.Topology(binary, conf, tmp, prefix="ca%d" % (os.getpid() % 1000)) as a, \
                    sltest.Topology(binary, conf, tmp, prefix="cb%d" % (os.getpid() % 1000)) as b:
                def run(key, n):
                    codes = []
                    for i in range(n):
                        for t in (a, b):
                            codes.append(t.curl("-H", "X-API-Key: " + key,
                                                "http://%s/v1/shared/%s%d" % (S4, key, i))[0])
                    return codes

                store = sltest.telemetry(a.sluice.prefix, "/sluice/store")
                res.eq((store["kind"], store["nodes"]), ("redis-cluster", 3),
                       "/sluice/store: a cluster of three masters")
                keys = ["k-%d" % i for i in range(6)]
                for k in keys:
                    codes = run(k, 4)
                    res.eq(codes.count(200), 5, "%s: 5 of 8 across two appliances" % k)
                used = [p for p in ports if int(cli(p, "dbsize") or 0) > 0]
                res.check(len(used) >= 2, "state spread over %d masters" % len(used))

                # move the slot of a fresh key's state, once sluice has learnt it
                def all_keys():
                    return {x for p in ports for x in subprocess.run(
                        ["redis-cli", "-p", str(p), "--scan", "--pattern", "sl:*"],
                        capture_output=True, text=True).stdout.split()}

                k = "k-moved"
                before = all_keys()
                res.eq(run(k, 1).count(200), 2, "k-moved: first two pass")
                fresh = all_keys() - before
                res.check(len(fresh) > 0, "k-moved's state is in the cluster")
                for s in {int(cli(ports[0], "cluster", "keyslot", x)) for x in fresh}:
                    src = owner(ports, s)
                    move_slot(ports, s, src, next(p for p in ports if p != src))
                codes = run(k, 3)
                res.eq(codes.count(200), 3, "after its slot moved: 3 more, 5 in all (%s)" % codes)
                st = sltest.telemetry(a.sluice.prefix, "/sluice/store")
                st_b = sltest.telemetry(b.sluice.prefix, "/sluice/store")
                res.check(st["redirects"] + st_b["redirects"] > 0,
                          "MOVED followed (%d redirects)" % (st["redirects"] + st_b["redirects"]))
                res.eq(st["store_degraded"] + st_b["store_degraded"], 0, "nothing degraded")

                # a leased limit through the cluster, demand from both at once
                sltest.check_leased_200(res, a, b, "k-bulk", "cluster, two appliances")
                time.sleep(0.5)
                da = sltest.telemetry(a.sluice.prefix, "/sluice/decisions")
                db = sltest.telemetry(b.sluice.prefix, "/sluice/decisions")
                home = owner(ports, int(cli(ports[0], "cluster", "keyslot", stream)))
                res.eq(int(cli(home, "xlen", stream) or 0), 356,
                       "decision stream: 356 entries, one per request of both")
                res.eq(da["written"] + db["written"], 356, "both wrote theirs")
                res.check(da["stream_redirects"] >= 1 and db["stream_redirects"] >= 1,
                          "each followed MOVED to the stream's master")
                # after the stream's count: its requests are not in it
                ask_redirect(res, ports, run, all_keys, a, b)
                res.eq(a.sluice.stop(), 0, "A stops cleanly")
                res.eq(b.sluice.stop(), 0, "B stops cleanly")
            # the accuracy run with two workers each
            with sltest.Topology(binary, conf, tmp, workers=2,
                                 prefix="cc%d" % (os.getpid() % 1000)) as c, \
                    sltest.Topology(binary, conf, tmp, workers=2,
                                    prefix="cd%d" % (os.getpid() % 1000)) as d:
                sltest.check_two_by_two(res, c, d, "k-bulk2", "cluster, 2 appliances x 2 workers")
                split_key(res, ports, c, d)
                res.eq(c.sluice.stop() + d.sluice.stop(), 0, "both stop cleanly")
        finally:
            sltest.stop_all(procs)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
