#!/usr/bin/python3
"""Two appliances against a local Redis Cluster of three masters (started
here with redis-server and redis-cli --cluster create): limits hold across
both for keys that live on different masters; a slot moved to another
master mid-run is followed through MOVED, and the limit still holds; a
leased 200/min key under demand from both stays within its bound, with
one worker per appliance and again with two. Both
appliances write every decision to one Redis Stream whose slot lives on a
master other than the seed (reached through MOVED).

usage: test_cluster.py PATH/TO/sluice
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402
import random  # noqa: E402
import socket  # noqa: E402


def free_port():
    """A port whose cluster bus port (+10000) is free and valid too."""
    while True:
        p = random.randrange(20000, 40000)
        ok = True
        for q in (p, p + 10000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p

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
store:
  redis: {endpoints: ["127.0.0.1:%d"], cluster: true, timeout_ms: 50, probe_interval_ms: 300}
  expected_appliances: 2
response: {retry_jitter: 0}
decisions: {sample: 1, stream: "%s", maxlen: 10000}
"""


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                          capture_output=True, text=True, timeout=30).stdout.strip()


def start_cluster(tmp, n=3):
    ports, procs = [free_port() for _ in range(n)], []
    for p in ports:
        d = os.path.join(tmp, str(p))
        os.makedirs(d)
        procs.append(sltest.start_redis(p, d, "--cluster-enabled", "yes",
                                        "--cluster-config-file", "nodes.conf"))
    subprocess.run(["redis-cli", "--cluster", "create"] + ["127.0.0.1:%d" % p for p in ports] +
                   ["--cluster-replicas", "0", "--cluster-yes"],
                   capture_output=True, text=True, timeout=60, check=True)
    for _ in range(100):
        if all("cluster_state:ok" in cli(p, "cluster", "info") for p in ports):
            break
        time.sleep(0.1)
    return ports, procs


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


def main():
    binary = sys.argv[1]
    res = sltest.Results("cluster")
    with tempfile.TemporaryDirectory() as tmp:
        ports, procs = start_cluster(tmp)
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
                res.eq(a.sluice.stop(), 0, "A stops cleanly")
                res.eq(b.sluice.stop(), 0, "B stops cleanly")
            # the accuracy run with two workers each
            with sltest.Topology(binary, conf, tmp, workers=2,
                                 prefix="cc%d" % (os.getpid() % 1000)) as c, \
                    sltest.Topology(binary, conf, tmp, workers=2,
                                    prefix="cd%d" % (os.getpid() % 1000)) as d:
                sltest.check_two_by_two(res, c, d, "k-bulk2", "cluster, 2 appliances x 2 workers")
                res.eq(c.sluice.stop() + d.sluice.stop(), 0, "both stop cleanly")
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
