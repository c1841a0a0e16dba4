#!/usr/bin/python3
"""A Redis Cluster that fails over under sluice.

Three masters and three replicas on 127.0.0.1 (cluster-node-timeout
1000), one appliance with two seeds and a fail_closed rule (600/min,
burst 50):

- 30 fresh keys, one request each: all served through Redis;
- one master paused (SIGSTOP, the cluster told not to fail it over): its
  breaker alone opens; fresh fail_closed keys it holds are refused at
  once, the others served; /sluice/store says which node is out;
  resumed, its breaker closes and fresh keys are all served again;
- one master holding some of their state is SIGKILLed; its replica is
  promoted (CLUSTER NODES says so);
- within node-timeout + one slot map read after the promotion, 30 more
  fresh keys are all served again — sluice reads the new map (the old
  binary kept sending to the dead master and refused every key hashed
  there until restarted);
- /sluice/store lists the dead master down and the promoted replica
  serving its slots, with slot map reads counted;
- no replica ever ran one of sluice's scripts (INFO commandstats);
- then, while wrk runs on one key for 8 s, every slot of the master that
  holds the key's state is resharded to another master (redis-cli
  --cluster reshard): the key's admissions stay at least 0.8 x those of
  the same run on a key that did not move (the run-to-run noise of one
  worker at 10/s) and at most 1.05 x (burst +
  rate x t), no store error, and the move is learnt (MOVED/ASK followed,
  or the slot map read again).

usage: test_failover.py PATH/TO/sluice
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

cli = sltest.redis_cli

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200,
            mbufs: 4095, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: closed, scope: key, match: {path_prefix: /v1/closed}, limit: 600/min,
     burst: 50, on_store_failure: fail_closed}
  - {name: shared, scope: key, match: {path_prefix: /v1/shared}, limit: 600/min,
     burst: 20, accuracy: 0.02}
store:
  redis: {endpoints: ["127.0.0.1:%d", "127.0.0.1:%d"], cluster: true, timeout_ms: 50,
          probe_interval_ms: 300}
  expected_appliances: 1
response: {retry_jitter: 0}
"""


def nodes(port):
    """CLUSTER NODES as {port: (id, flags, master_id, slots)}."""
    out = {}
    for line in cli(port, "cluster", "nodes").splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        p = int(f[1].split(":")[1].split("@")[0])
        out[p] = (f[0], f[2], f[3], f[8:])
    return out


def state_keys(masters):
    return {(p, k) for p in masters
            for k in cli(p, "--scan", "--pattern", "sl:*").split()}


def run_wrk(t, key, during=None):
    """wrk on key for 8 s (during: run meanwhile); admitted, seconds,
    offered."""
    log0 = len([r for r in t.backend_log() if r.get("path", "").startswith("/v1/shared")])
    wrk = subprocess.Popen(["ip", "netns", "exec", t.cns, "timeout", "40", "wrk", "-t1", "-c8",
                            "-d8s", "-H", "X-API-Key: " + key, "http://%s/v1/shared" % S4],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    extra = during() if during else None
    out = wrk.communicate(timeout=60)[0]
    m = re.findall(r"requests in ([\d.]+)s", out)
    secs = float(m[0]) if m else 8.0
    offered = sum(int(x) for x in re.findall(r"(\d+) requests in", out))
    time.sleep(0.3)  # requests still in flight when wrk ended
    n = len([r for r in t.backend_log() if r.get("path", "").startswith("/v1/shared")]) - log0
    return n, secs, offered, extra


def reshard(res, t, ports, procs):
    """All slots of the master holding a key's state moved to another
    while wrk runs on that key; the same run without a move beside it."""
    live = [p for p in ports if procs[p].poll() is None]
    view = nodes(live[0])
    masters = [p for p, v in view.items() if "master" in v[1] and "fail" not in v[1]
               and v[3]]
    before = state_keys(masters)
    t.curl("-H", "X-API-Key: k-reshard", "http://%s/v1/shared/0" % S4)
    new = state_keys(masters) - before
    src = next(p for p, _ in new)
    dst = next(p for p in masters if p != src)
    nslots = sum(int(r.partition("-")[2] or r) - int(r.partition("-")[0]) + 1
                 for r in view[src][3] if not r.startswith("["))
    t.curl("-H", "X-API-Key: k-still", "http://%s/v1/shared/0" % S4)
    still, _, _, _ = run_wrk(t, "k-still")
    st0 = sltest.telemetry(t.sluice.prefix, "/sluice/store")
    red0, reads0 = st0.get("redirects", 0), st0.get("slot_map_reads", 0)
    # the failover before may have lost asks to the dead master (a
    # connection refused while it was tried again): not this phase's
    err0 = st0.get("store_errors", 0)

    def move():
        time.sleep(1)
        return subprocess.run(["redis-cli", "--cluster", "reshard", "127.0.0.1:%d" % src,
                               "--cluster-from", view[src][0], "--cluster-to", view[dst][0],
                               "--cluster-slots", str(nslots), "--cluster-yes"],
                              capture_output=True, text=True, timeout=120)

    n, secs, offered, mv = run_wrk(t, "k-reshard", move)
    allowed = 20 + 10 * secs
    moved = nodes(dst)[dst][3]
    res.check(mv.returncode == 0 and nodes(src)[src][3] == [],
              "%d slots resharded from %d to %d while wrk ran (%s)" % (
                  nslots, src, dst, mv.stderr.strip()[-200:] or "ok"))
    # against the same run on a key that did not move: the move costs
    # no admission beyond the noise, and the limit holds. One worker at
    # 10/s varies run to run (79-92 admitted with no move; under ASan
    # 80 against 90 was seen), hence 0.8 of the still key's count
    res.check(0.8 * still <= n <= 1.05 * allowed,
              "resharded under load: %d admitted of %d offered in %.1f s, %.3f x (burst + "
              "rate x t = %.0f); %d for a key that did not move" % (
                  n, offered, secs, n / allowed, allowed, still))
    st = sltest.telemetry(t.sluice.prefix, "/sluice/store")
    red = st.get("redirects", 0) - red0
    reads = st.get("slot_map_reads", 0) - reads0
    # the moved slots are learnt by a MOVED/ASK followed, or by the map
    # read again (MOVED in numbers, or every refresh_ms) before one comes
    res.check(red + reads > 0, "the new owner learnt: %d MOVED/ASK followed, %d slot map "
              "reads (%d ranges at %d)" % (red, reads, len(moved), dst))
    res.eq(st.get("store_errors") - err0, 0, "no store error while the slots moved (%d "
           "before, in the failover)" % err0)


def node_entry(t, port):
    """/sluice/store's node_list entry of 127.0.0.1:port, without the name."""
    store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
    nl = {e.split(" ", 1)[0]: e.split(" ", 1)[1] for e in store.get("node_list", [])}
    return nl.get("127.0.0.1:%d" % port, ""), store


def pause_one(res, t, ports, masters, procs, fresh):
    """One master paused (SIGSTOP; the cluster told not to fail it over
    meanwhile): its breaker alone opens. The keys it holds are decided by
    their rule's on_store_failure (fail_closed: 429) at once, the others
    are served through their masters; resumed, its breaker closes and
    every fresh key is served again. A breaker for the whole store, which
    the other masters' replies kept closed, served the paused master's
    fail_closed keys from the node's share as one slow reply after
    another."""
    for p in ports:
        cli(p, "config", "set", "cluster-node-timeout", "20000")
    paused = masters[0]
    procs[paused].send_signal(signal.SIGSTOP)
    try:
        warm = fresh("warm", 10)  # its asks time out: the breaker opens
        time.sleep(0.5)
        codes = fresh("paused")
        entry, store = node_entry(t, paused)
        others = [node_entry(t, p)[0] for p in masters[1:]]
    finally:
        procs[paused].send_signal(signal.SIGCONT)
    print("  while %d was paused: warming %s, then %s" % (
        paused, "".join("." if c == 200 else "x" for c in warm),
        "".join("." if c == 200 else "x" for c in codes)))
    res.check(0 < codes.count(429) < 30 and codes.count(200) + codes.count(429) == 30,
              "one master of three paused: its keys refused by fail_closed, the others "
              "served (%d served, %d refused)" % (codes.count(200), codes.count(429)))
    res.check(", circuit open" in entry or ", circuit half_open" in entry,
              "/sluice/store: the paused master's circuit open (%s)" % entry)
    res.check(all(e.endswith(", circuit closed") for e in others),
              "/sluice/store: the other masters' circuits closed (%s)" % others)
    res.check(store.get("state") in ("open", "half_open"),
              "/sluice/store: the store's state is its worst node's (%s)" % store.get("state"))
    deadline, tries = time.time() + 3, 0
    while True:  # the breaker closes on its next probe's reply
        tries += 1
        codes = fresh("resumed%d" % tries, 10)
        if codes.count(200) == 10 or time.time() > deadline:
            break
        time.sleep(0.2)
    entry, store = node_entry(t, paused)
    res.eq(codes.count(200), 10, "resumed: fresh keys served again (try %d: %s)" % (
        tries, codes))
    res.check(entry.endswith(", circuit closed") and store.get("state") == "closed",
              "resumed: its circuit closed (%s; store %s)" % (entry, store.get("state")))
    for p in ports:
        cli(p, "config", "set", "cluster-node-timeout", "1000")


def main():
    binary = sys.argv[1]
    res = sltest.Results("failover")
    with tempfile.TemporaryDirectory() as tmp:
        ports, procs = sltest.start_cluster(tmp, 3, 1, "--cluster-node-timeout", "1000",
                                            "--repl-diskless-sync", "yes",
                                            "--repl-diskless-sync-delay", "0")
        try:
            view = first_view = nodes(ports[0])
            masters = [p for p, v in view.items() if "master" in v[1]]
            res.eq(len(masters), 3, "three masters, three replicas, in sync")
            conf = os.path.join(tmp, "sluice.yaml")
            with open(conf, "w") as f:
                f.write(CONF % (masters[0], masters[1]))
            with sltest.Topology(binary, conf, tmp, prefix="fo%d" % (os.getpid() % 1000)) as t:
                def fresh(tag, n=30):
                    return [t.curl("-H", "X-API-Key: %s-%d" % (tag, i),
                                   "http://%s/v1/closed/%d" % (S4, i))[0] for i in range(n)]

                codes = fresh("before")
                res.eq(codes.count(200), 30, "30 fresh keys served through the cluster")
                pause_one(res, t, ports, masters, procs, fresh)
                used = [p for p in masters if int(cli(p, "dbsize") or 0) > 0]
                victim = used[-1]
                replica = next(p for p, v in view.items()
                               if v[2] == view[victim][0])
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                t_kill = time.time()
                during = fresh("during", 10)
                promoted = None
                while time.time() < t_kill + 20:
                    now = nodes(replica)
                    if now and "master" in now[replica][1] and now[replica][3]:
                        promoted = time.time()
                        break
                    time.sleep(0.1)
                res.check(promoted is not None,
                          "the replica %d of the killed master %d was promoted (%.1f s)" % (
                              replica, victim, (promoted or time.time()) - t_kill))
                print("  while failing over: %d of 10 fresh keys served (%s)" % (
                    during.count(200), during))
                # node-timeout (1 s) + one slot map read (0.25 s apart)
                time.sleep(1.25)
                codes = fresh("after")
                res.eq(codes.count(200), 30,
                       "1.25 s after the promotion, 30 fresh keys served again (%s)" %
                       "".join("." if c == 200 else "x" for c in codes))
                store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
                nl = {e.split(" ", 1)[0]: e.split(" ", 1)[1]
                      for e in store.get("node_list", [])}
                dead = nl.get("127.0.0.1:%d" % victim, "")
                new = nl.get("127.0.0.1:%d" % replica, "")
                res.check(dead.startswith("down, 0 slots"),
                          "/sluice/store: the killed master down, serving no slot (%s)" % dead)
                res.check(new.startswith("up,") and not new.startswith("up, 0 slots"),
                          "/sluice/store: the promoted replica up, serving slots (%s)" % new)
                res.check(store.get("slot_map_reads", 0) > 0,
                          "the slot map was read again (%d reads, %d failed)" % (
                              store.get("slot_map_reads", 0),
                              store.get("slot_map_failed", 0)))
                reshard(res, t, ports, procs)
                # never a replica: the asks (scripts) went to masters only.
                # The replicas that were never masters (not the promoted
                # one; a master the reshard emptied may have become one)
                replicas = [p for p, v in first_view.items()
                            if "slave" in v[1] and p != replica]
                # run or refused (MOVED counts as rejected_calls)
                calls = {p: sum(int(a) + int(b) for a, b in re.findall(
                    r"cmdstat_(?:fcall|evalsha|eval):calls=(\d+).*?rejected_calls=(\d+)",
                    cli(p, "info", "commandstats"))) for p in replicas}
                res.check(replicas and not any(calls.values()),
                          "no ask ever reached a replica (script calls per replica: %s)" % calls)
                res.eq(t.sluice.stop(), 0, "stops cleanly")
        finally:
            sltest.stop_all(procs)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
