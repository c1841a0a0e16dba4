#!/usr/bin/python3
"""Restarts grant nothing: with dataplane.state_dir the node's buckets
live in a file that outlives the process.

On the two-namespace topology, a key limited to 2/min (burst 2):

- drained (200 200 429), then sluice stopped cleanly and started again:
  still refused;
- killed (SIGKILL, as a crash or the watchdog would) and started again:
  still refused;
- a key at 60/min (a unit a second, burst 2) drained, sluice killed and
  down about 2 s: started again, it has refilled by the time it was down
  and no more (at most the burst);
- the rule's burst raised to 5 in the file while sluice is down: started
  on the new file, the drained key is granted nothing at once (the
  rule-edit rules, as a reload);
- buckets_per_worker doubled while it is down: the buckets are carried
  into the larger table, the drained key still refused;
- with a Redis store that is down: a key admitted from the node's share
  (fail_open), sluice killed and started again while Redis stays down:
  what the node owes Redis is still owed (across buckets_per_worker
  halved), and charged once Redis is back
  (the key's next requests refused where the charge used its limit up);
- fail-to-wire: sluice stopped and `sluice-bypass on` over its two
  interfaces: every request passes, limited or not; `off` and sluice
  started again: the key is limited again, each request decided once;
- the same restart without state_dir: the bucket starts full (what the
  file prevents).

usage: test_restart.py PATH/TO/sluice
"""

import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
BYPASS = os.path.join(sltest.ROOT, "tools", "sluice-bypass")
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 1024,
            buckets_per_worker: %(buckets)d, head_buffers_per_worker: 64, mbufs: 4095%(state)s}
identity: {api_key_header: X-API-Key}
rules:
  - {name: slow, scope: key, match: {path_prefix: /slow}, limit: 2/min, burst: %(burst)d}
  - {name: second, scope: key, match: {path_prefix: /second}, limit: 60/min, burst: 2}
  - {name: owed, scope: key, match: {path_prefix: /owed}, limit: 4/min, burst: 4}
%(store)s"""


def write(path, state_dir, burst=2, redis=None, buckets=1024):
    store = ("store: {redis: {endpoints: [\"127.0.0.1:%d\"], timeout_ms: 20, "
             "probe_interval_ms: 200}, "
             "expected_appliances: 1}\n" % redis) if redis else ""
    with open(path, "w") as f:
        f.write(CONF % {"state": (", state_dir: " + state_dir) if state_dir else "",
                        "burst": burst, "store": store, "buckets": buckets})


def codes(topo, key, path, n):
    return [topo.curl("-H", "X-API-Key: " + key, "http://%s%s/%d" % (S4, path, i))[0]
            for i in range(n)]


def bypass(t, cmd):
    r = subprocess.run([BYPASS, cmd, t.prefix + "-c1", t.prefix + "-s1"], capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout.strip() or r.stderr.strip()


def decided(t):
    st = t.sluice.stats()
    return st["allowed"] + st["rejected"]


def wire(res, t):
    """sluice stopped, the kernel passes the frames; back, sluice alone."""
    res.eq(t.sluice.stop(), 0, "a clean stop")
    rc, said = bypass(t, "on")
    got = codes(t, "k-a", "/slow", 3)
    res.check(rc == 0 and said.startswith("on ") and got == [200, 200, 200],
              "sluice stopped, sluice-bypass on: every request passes, the drained key's "
              "too (%s; %s)" % (got, said))
    rc, said = bypass(t, "off")
    t.restart()  # (stopped already: started)
    n0 = decided(t)
    got = codes(t, "k-a", "/slow", 2)
    res.check(rc == 0 and said.startswith("off ") and got == [429, 429] and
              decided(t) - n0 == 2,
              "sluice-bypass off, sluice started: the key limited again, each request decided "
              "once (%s, %d decided; %s)" % (got, decided(t) - n0, said))


def store(t):
    return sltest.telemetry(t.sluice.prefix, "/sluice/store")


def owed(res, t, conf, state, tmp):
    """What the node owes a Redis that is down survives a restart."""
    port = sltest.free_port()
    d = os.path.join(tmp, "redis")
    os.makedirs(d)
    write(conf, state, burst=5, redis=port)  # (no Redis there yet)
    t.restart()
    got = codes(t, "k-o", "/owed", 2)
    before = store(t)
    # and started on a smaller table: the debts are carried with it
    write(conf, state, burst=5, redis=port, buckets=512)
    t.restart(kill=True)
    wait(lambda: store(t).get("owed_keys", 0) >= 1, 3)  # (counted by its polls)
    after = store(t)
    r = sltest.start_redis(port, d)
    try:
        # another key's requests probe the circuit; once it closes, what
        # is owed goes, and its replies count it charged
        ok, _ = wait(lambda: codes(t, "k-probe", "/owed", 1) and
                     store(t).get("owed_charged", 0) >= 2, 10)
        back = codes(t, "k-o", "/owed", 3)
    finally:
        r.kill()
        r.wait()
    res.check(got == [200, 200] and before.get("owed_units", 0) >= 2 and
              after.get("owed_keys", 0) >= 1,
              "Redis down: 2 admitted from the node's share and owed; after SIGKILL and a "
              "start with buckets_per_worker halved, still owed (%s; owed units %s before, "
              "keys %s after)"
              % (got, before.get("owed_units"), after.get("owed_keys")))
    res.check(ok and back.count(200) == 2 and back[-1] == 429,
              "Redis back: the 2 charged to it, the key's 4/min leaves 2 (%s, charged %s)"
              % (back, store(t).get("owed_charged")))


def wait(cond, secs):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True, None
        time.sleep(0.1)
    return False, None


def main():
    binary = sys.argv[1]
    res = sltest.Results("restart")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        state = os.path.join(tmp, "state")
        write(conf, state)
        with sltest.Topology(binary, conf, tmp, prefix="rs%d" % (os.getpid() % 1000)) as t:
            res.eq(codes(t, "k-a", "/slow", 3), [200, 200, 429], "2/min: drained")
            res.check(os.path.exists(os.path.join(state, "node.state")),
                      "the node's buckets in state_dir/node.state")
            res.eq(t.restart(), 0, "a clean stop")
            res.eq(codes(t, "k-a", "/slow", 2), [429, 429],
                   "started again after a clean stop: still refused")
            res.eq(codes(t, "k-b", "/second", 3), [200, 200, 429], "60/min, burst 2: drained")
            t.restart(kill=True)
            res.eq(codes(t, "k-a", "/slow", 1), [429],
                   "started again after SIGKILL: the 2/min key still refused")
            t.sluice.proc.kill()
            t.sluice.proc.wait()
            down = time.monotonic()
            time.sleep(2)
            t.restart()  # (already dead: started again)
            got = codes(t, "k-b", "/second", 4)
            secs = time.monotonic() - down
            res.check(1 <= got.count(200) <= min(2, int(secs) + 1) and got[-1] == 429,
                      "60/min after %.1f s down: refilled by the time it was down, no more "
                      "than the burst (%s)" % (secs, got))
            t.sluice.stop()
            m = re.search(r"forwarding (\d+) ms after exec", t.sluice.out)
            res.check(m is not None, "it said how long from exec to forwarding (%s ms: "
                      "every worker had faulted its tables in and looped once)" % (
                          m and m.group(1)))
            write(conf, state, burst=5)
            t.restart()
            res.eq(codes(t, "k-a", "/slow", 1), [429],
                   "the burst raised to 5 while it was down: the drained key granted "
                   "nothing at once")
            # the table's size changed while it was down: its buckets
            # are carried into the new one, not started afresh
            write(conf, state, burst=5, buckets=2048)
            t.restart()
            res.eq(codes(t, "k-a", "/slow", 1), [429],
                   "buckets_per_worker doubled while it was down: the drained key still "
                   "refused")
            resized = t.sluice
            owed(res, t, conf, state, tmp)
            m = re.search(r"(\d+) buckets carried over from a table of 2048", resized.out)
            res.check(m is not None and int(m.group(1)) >= 1,
                      "it said what it carried over (%s)" % (m and m.group(0)))
            write(conf, state, burst=5)
            wire(res, t)
            write(conf, None, burst=5)
            res.eq(t.restart(), 0, "a clean stop")
            res.eq(codes(t, "k-a", "/slow", 1), [200],
                   "without state_dir a restart starts the bucket full (what the file "
                   "prevents)")
            res.eq(t.sluice.stop(), 0, "clean shutdown")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
