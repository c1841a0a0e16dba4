#!/usr/bin/python3
"""sluice-aggregator: the slice computation, and one process
against real redis-servers standing for three regions.

- slices, proportional: static weights without demand; proportional to
  demand with a floor per region (water-filling); never more than the
  whole limit, over thousands of random demands; a region that cannot be
  written keeps its parts and the others share the rest;
- slices, max-min (the default): a region below its fair share gets its
  demand and the margin whatever another region floods; over thousands
  of random demand vectors the parts never pass the limit, every region
  either has all it wants or at least as much as any other (equal
  weights), more demand never a smaller slice than less, and a slice
  never grows faster than --growth; the whole limit handed out;
- rounds: usage reports written as the appliances' contract says are
  read (stale ones ignored), slices written into every region with a
  version, a TTL and a message on sl:slices; a second aggregator does
  nothing while the first holds the lease; a region whose Redis is down
  keeps its last slice, the others are rebalanced within what is left;
- a region whose Redis is a Cluster: read and written on the nodes of the
  keys, the announcement heard on every node.

usage: test_aggregator.py
"""

import importlib.machinery
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "lib"))
import sltest  # noqa: E402

import redis  # noqa: E402  (python3-redis)

PATH = os.path.join(HERE, "..", "sluice-aggregator")
_loader = importlib.machinery.SourceFileLoader("aggregator", PATH)
_spec = importlib.util.spec_from_loader("aggregator", _loader)
agg = importlib.util.module_from_spec(_spec)
_loader.exec_module(agg)

RULE = "0123456789abcdef"
# identities as the appliances name them: their bucket's k1 and k2
HOT, QUIET = "1111111111111111" "00000000000000aa", "2222222222222222" "00000000000000bb"


def check_slices(res):
    st = agg.static_parts({"eu": 1, "us": 1, "ap": 2}, ["eu", "us", "ap"])
    res.eq(st, {"eu": 2500, "us": 2500, "ap": 5000}, "static parts from the weights")
    res.eq(agg.compute_slices(st, {}, 200), st, "no demand anywhere: the static slices")
    s3 = agg.static_parts({"a": 1, "b": 1, "c": 1}, ["a", "b", "c"])
    s = agg.compute_slices(s3, {"a": 900, "b": 100}, 200)
    res.check(s["a"] >= 8500 and s["c"] == 200 and sum(s.values()) <= agg.PARTS,
              "90 %% of the demand in a, 10 %% in b, none in c: a gets >= 85 %% of the "
              "limit, c its floor (%s)" % s)
    s4 = agg.static_parts({"eu": 1, "us": 1, "ap": 1, "sa": 1}, ["eu", "us", "ap", "sa"])
    s = agg.compute_slices(s4, {"eu": 900, "us": 100}, 200)
    res.check(s["eu"] >= 8500 and s["ap"] == s["sa"] == 200,
              "the same over four regions: >= 85 %% where 90 %% of it is (%s)" % s)
    s = agg.compute_slices(s3, {"a": 1000, "b": 1}, 200)
    res.check(s["b"] == 200 and s["c"] == 200 and s["a"] == agg.PARTS - 400,
              "a region whose share is under the floor gets the floor, not less (%s)" % s)
    small = {"a": 100, "b": 4950, "c": 4950}
    s = agg.compute_slices(small, {"b": 5, "c": 5}, 200)
    res.eq(s["a"], 100, "the floor is capped at a region's static slice")
    s = agg.compute_slices(s3, {"a": 500, "b": 500, "c": 0}, 200, fixed={"c": 6000})
    res.check(s["c"] == 6000 and s["a"] + s["b"] <= 4000 and s["a"] == s["b"],
              "a region that cannot be written keeps its parts; the others share the "
              "rest (%s)" % s)
    rng = random.Random(16)
    worst, nonmono = 0, 0
    for _ in range(3000):
        n = rng.randint(1, 6)
        names = ["r%d" % i for i in range(n)]
        st = agg.static_parts({r: rng.randint(1, 9) for r in names}, names)
        dem = {r: rng.choice([0, 0, rng.random(), rng.random() * 1e6]) for r in names}
        fixed = {names[0]: rng.randint(0, 10000)} if rng.random() < 0.2 and n > 1 else None
        fl = rng.choice([0, 100, 200, 2000, 5000])
        s = agg.compute_slices(st, dem, fl, fixed)
        worst = max(worst, sum(s.values()))
        if not fixed and any(v < 0 for v in s.values()):
            nonmono += 1
        # one region's demand doubled: its slice does not shrink
        r = rng.choice(names)
        if not fixed and dem[r] > 0:
            more = agg.compute_slices(st, {**dem, r: dem[r] * 2}, fl)
            nonmono += more[r] < s[r]
    res.check(worst <= agg.PARTS, "3000 random demands: the regions never hold more than "
              "the limit (the most: %d of %d parts)" % (worst, agg.PARTS))
    res.eq(nonmono, 0, "no negative slice, and more demand never a smaller slice")


def check_maxmin(res):
    s3 = agg.static_parts({"a": 1, "b": 1, "c": 1}, ["a", "b", "c"])
    # the case: one region floods (a thousand times the demand),
    # another asks a tenth of the limit
    s = agg.compute_maxmin(s3, {"a": 1e6, "b": 1000}, 100, 0.2)
    res.eq(s, {"a": 8700, "b": 1200, "c": 100},
           "a flooding region beside one at a tenth of the limit: the modest one gets its "
           "demand and the margin, the quiet one its floor, the flood the rest")
    s = agg.compute_slices(s3, {"a": 1e6, "b": 1000}, 100)
    res.check(s["b"] <= 110, "the proportional policy gives it next to nothing (%s)" % s)
    s = agg.compute_maxmin(s3, {"a": 1e6, "b": 6000}, 100, 0.2)
    res.eq(s, {"a": 4950, "b": 4950, "c": 100},
           "both wanting more than an equal share: split equally, however much more a floods")
    s2 = agg.static_parts({"eu": 2, "us": 1}, ["eu", "us"])
    s = agg.compute_maxmin(s2, {"eu": 1e6, "us": 1e6}, 100, 0.2)
    res.eq(s, {"eu": 6666, "us": 3333}, "both flooding: split by the static weights")
    s = agg.compute_maxmin(s3, {"a": 1000, "b": 1000}, 100, 0.2)
    res.eq(s, {"a": 3700, "b": 3700, "c": 2600},
           "every region served: what is left poured again, so that growth finds room")
    s = agg.compute_maxmin(s3, {"a": 1e6, "b": 1000}, 100, 0.2,
                           prev={"a": 1000, "b": 1000, "c": 8000}, growth=0.3)
    res.eq(s, {"a": 4000, "b": 1200, "c": 100},
           "a slice grows by at most --growth of the limit a round; the parts it may not "
           "take yet stay unheld")
    s = agg.compute_maxmin(s3, {"a": 1e6, "b": 1000}, 100, 0.2, fixed={"c": 6000})
    res.eq(s, {"a": 2800, "b": 1200, "c": 6000},
           "a region that cannot be written keeps its parts; the others share the rest")
    rng = random.Random(36)
    over, unfair, nonmono, fast, idle, n_cases = 0, [], 0, 0, 0, 4000
    for _ in range(n_cases):
        n = rng.randint(1, 7)
        names = ["r%d" % i for i in range(n)]
        st = agg.static_parts({r: 1 for r in names}, names)
        dem = {r: rng.choice([0.0, rng.random() * 500, rng.random() * 5000,
                              rng.random() * 1e6]) for r in names}
        fl = rng.choice([0, 100, 200])
        m = rng.choice([0.0, 0.2, 0.5])
        s = agg.compute_maxmin(st, dem, fl, m)
        over += sum(s.values()) > agg.PARTS
        if sum(dem.values()) > 0:
            # the whole limit handed out (rounding down: a part a region)
            idle += sum(s.values()) < agg.PARTS - n
            want = {r: max(min(fl, st[r]), dem[r] * (1 + m)) for r in names}
            for r in names:
                if s[r] < int(want[r]) and s[r] < max(s.values()) - 1:
                    unfair.append((dem, s))
            # more demand never a smaller slice (ties within rounding)
            for x in names:
                for y in names:
                    nonmono += dem[x] > dem[y] and s[x] < s[y] - 1
        # with the last slices given, none grows more than growth a round
        prev = {r: rng.randint(0, agg.PARTS // n) for r in names}
        g = rng.choice([0.1, 0.5, 1.0])
        s = agg.compute_maxmin(st, dem, fl, m, prev=prev, growth=g)
        over += sum(s.values()) > agg.PARTS
        fast += any(s[r] > prev[r] + g * agg.PARTS for r in names)
    res.check(over == 0 and fast == 0,
              "%d random demand vectors: the parts never pass the limit, no slice grows "
              "faster than --growth (%d over, %d too fast)" % (n_cases, over, fast))
    res.check(not unfair, "every region has all it wants, or at least as much as any "
              "other (%d not; the first %s)" % (len(unfair), unfair[:1]))
    res.eq(nonmono, 0, "no region with more demand has a smaller slice than one with less")
    res.eq(idle, 0, "with demand anywhere, the whole limit is handed out")


def check_estimate(res):
    """A region's demand read from counts over one report's span each."""
    def run(readings):
        sm = last = 0.0
        out = []
        for raw in readings:
            sm, last, d = agg.estimate(sm, last, raw)
            out.append(d)
        return out

    s3 = agg.static_parts({"a": 1, "b": 1, "c": 1}, ["a", "b", "c"])
    # a client at a steady 2/s whose arrivals straddle the reports' edges
    # reads 1, 3, 1, 3 beside a flood in b: the limit is 20/s, so 2/s is
    # 1000 parts of demand, and its slice must stay above it
    dem = run([2, 2, 1, 3, 1, 3, 1, 3, 3, 1, 2, 1, 3])[2:]
    slices = [agg.compute_maxmin(s3, {"a": d / 20 * agg.PARTS, "b": 1e6}, 100, 0.2)["a"]
              for d in dem]
    res.check(min(dem) >= 2 and min(slices) >= 1200,
              "a steady 2/s read as 1, 3, 1, 3 (a count's edges): demand read %s, a's "
              "slices %s (>= its 2/s and the margin, 1200 parts, in every round)"
              % ([round(d, 2) for d in dem], slices))
    sm = 0.0
    old = []
    for raw in [2, 2, 1, 3, 1, 3, 1, 3, 3, 1, 2, 1, 3]:
        sm = agg.ALPHA * raw + (1 - agg.ALPHA) * sm
        old.append(sm)
    res.check(min(old[2:]) < 1.5, "smoothed alone, the same readings fall to %.2f/s"
              % min(old[2:]))
    # a flood that left: 40/s, then 2/s from the second reading on
    dem = run([40, 40, 40, 2, 2, 2, 2])
    res.check(dem[3] == 40 and dem[5] <= 2.4 * 1.1,
              "a flood that left: held one round (%.1f/s), down to its 2/s and less "
              "than the margin by the third reading after (%s)"
              % (dem[3], [round(d, 2) for d in dem]))


def report(db, node, top, total, age_ms=0, span=1000, lim=None):
    db.sadd("sl:usage:rules", RULE)
    u = {"t": int(time.time() * 1000) - age_ms, "i": span, "total": total, "top": top}
    if lim:
        u["lim"] = lim
    db.hset("sl:usage:{%s}" % RULE, node, json.dumps(u))


def run_rounds(res, tmp):
    ports = [sltest.free_port() for _ in range(3)]
    procs = {p: sltest.start_redis(p, tmp) for p in ports}
    try:
        names = ["a", "b", "c"]
        dbs = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=1) for p in ports]
        weights = {"a": 1, "b": 1, "c": 1}
        one = agg.Aggregator(list(zip(names, dbs)), weights, 0.02, 1000, 10000, "one")
        two = agg.Aggregator(list(zip(names, dbs)), weights, 0.02, 1000, 10000, "two")
        sub = dbs[1].pubsub()
        sub.subscribe("sl:slices")
        report(dbs[0], "a1", {HOT: 900, QUIET: 5}, 905)
        report(dbs[1], "b1", {HOT: 100}, 100)
        report(dbs[1], "b2", {HOT: 900}, 900, age_ms=10000)  # stale: ignored
        for _ in range(4):  # the smoothed demand settles on 90/10
            one.round()
        got = [dbs[i].hgetall("sl:slice:{%s}" % RULE) for i in range(3)]
        hot = [int(g.get(HOT.encode(), 0)) for g in got]
        res.check(hot[0] >= 8500 and hot[2] == 200 and sum(hot) <= agg.PARTS,
                  "90/10 reports: the hot identity's slices %s (a >= 85 %%, c its floor; "
                  "b2's stale report not counted)" % hot)
        vs = {g.get(b"v") for g in got}
        res.check(len(vs) == 1 and None not in vs, "every region holds the same version (%s)"
                  % vs)
        ttl = dbs[0].pttl("sl:slice:{%s}" % RULE)
        res.check(0 < ttl <= 10000, "the slices expire (%d ms left)" % ttl)
        res.eq(got[0].get(b"x"), b"10000", "the hash says its lifetime to the appliances")
        msgs = []
        deadline = time.time() + 2
        while time.time() < deadline:
            m = sub.get_message(timeout=0.2)
            if m and m["type"] == "message":
                msgs.append(m["data"].decode())
        res.check(msgs and msgs[-1] == "%s %s" % (RULE, vs.pop().decode()),
                  "each new version announced on sl:slices (%s)" % msgs)
        before = dbs[0].hget("sl:slice:{%s}" % RULE, "v")
        report(dbs[1], "b1", {HOT: 900}, 900)
        report(dbs[0], "a1", {HOT: 100}, 100)
        res.check(two.round() is None and not two.leader, "a second aggregator does not act "
                  "while the first holds the lease")
        res.eq(dbs[0].hget("sl:slice:{%s}" % RULE, "v"), before, "its round wrote nothing")
        # the demand moves: 90 % of it to b now (one.round renews the lease)
        for k in range(3):
            one.round()
        hot = [int(dbs[i].hget("sl:slice:{%s}" % RULE, HOT) or 0) for i in range(3)]
        res.check(hot[1] >= 8500 and sum(hot) <= agg.PARTS, "the demand moved to b: b holds "
                  ">= 85 %% of the limit within 3 rounds (%s)" % hot)
        # c gets demand, then its Redis goes down
        report(dbs[2], "c1", {HOT: 900}, 900)
        for k in range(4):
            one.round()
        last_c = one.given[(RULE, HOT)]["c"]
        procs[ports[2]].kill()
        procs[ports[2]].wait()
        report(dbs[0], "a1", {HOT: 900}, 900)
        report(dbs[1], "b1", {HOT: 10}, 10)
        for _ in range(4):
            one.round()
        hot = [int(dbs[i].hget("sl:slice:{%s}" % RULE, HOT) or 0) for i in range(2)]
        res.check(last_c >= 3000 and hot[0] > hot[1] and hot[0] + hot[1] + last_c <= agg.PARTS,
                  "c's Redis down: the demand moved to a is followed within what c keeps "
                  "(a, b: %s; c keeps %d)" % (hot, last_c))
        res.eq(one.given[(RULE, HOT)]["c"], last_c, "c's slice frozen at its last value")
        check_cli(res, tmp, ports[:2])
    finally:
        sltest.stop_all(procs)


def check_cli(res, tmp, ports):
    """The command as an operator starts it: the regions from the config,
    one --region each, one round."""
    conf = os.path.join(tmp, "regions.yaml")
    with open(conf, "w") as f:
        f.write("version: 1\nregions: {a: 1, b: 3}\nrules: []\n")
    dbs = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=1) for p in ports]
    for db in dbs:
        db.flushall()
    report(dbs[1], "b1", {HOT: 50}, 50)
    cmd = [sys.executable, PATH, "-c", conf, "--once", "--id", "cli"]
    r = subprocess.run(cmd + ["--region", "a=127.0.0.1:%d" % ports[0],
                              "--region", "b=127.0.0.1:%d" % ports[1]],
                       capture_output=True, text=True, timeout=60)
    got = [int(db.hget("sl:slice:{%s}" % RULE, HOT) or 0) for db in dbs]
    res.check(r.returncode == 0 and got == [200, 9800], "sluice-aggregator --once: b's demand "
              "alone gives b all but a's floor (%s; %s)" % (got, r.stderr.strip()[-200:]))
    # demand split as the static weights: nothing new to write, and the
    # round's log says what it computed
    for db in dbs:
        db.flushall()
    report(dbs[0], "a1", {HOT: 25}, 25)
    report(dbs[1], "b1", {HOT: 75}, 75)
    r = subprocess.run(cmd + ["--region", "a=127.0.0.1:%d" % ports[0],
                              "--region", "b=127.0.0.1:%d" % ports[1]],
                       capture_output=True, text=True, timeout=60)
    rounds = [json.loads(x) for x in r.stdout.splitlines() if '"round"' in x]
    plan = rounds[-1]["planned"].get(RULE, {}).get(HOT) if rounds else None
    res.check(r.returncode == 0 and plan == {"a": 2500, "b": 7500} and
              rounds[-1]["written"] == [] and not any(db.exists("sl:slice:{%s}" % RULE)
                                                      for db in dbs),
              "sluice-aggregator --once: demand split as the static weights writes no "
              "version, its round logged (%s)" % (rounds[-1:] or r.stdout.strip()[-200:]))
    # reports that say the identity's limit (20/s): cut max-min by
    # default, in proportion with --policy proportional
    lim = {HOT: [1200, 60000]}
    for pol, want in (([], "max-min margin 0.2 growth 0.5 floor 0.02"),
                      (["--policy", "proportional"], "proportional floor 0.02")):
        for db in dbs:
            db.flushall()
        report(dbs[0], "a1", {HOT: 100000}, 100000, lim=lim)
        report(dbs[1], "b1", {HOT: 2}, 2, lim=lim)
        r = subprocess.run(cmd + pol + ["--region", "a=127.0.0.1:%d" % ports[0],
                                        "--region", "b=127.0.0.1:%d" % ports[1]],
                           capture_output=True, text=True, timeout=60)
        got = [db.hgetall("sl:slice:{%s}" % RULE) for db in dbs]
        parts = [int(g.get(HOT.encode(), 0)) for g in got]
        said = {g.get(b"p", b"").decode() for g in got}
        # one round from nothing: its reading of 2/s (never read below
        # it), a tenth of a second's 20: 1000 parts, and the margin
        res.check(r.returncode == 0 and said == {want} and sum(parts) <= agg.PARTS and
                  ((parts[1] >= 1200) if not pol else parts[1] == 200),
                  "sluice-aggregator --once %s: b's 2/s of a flooded 20/s limit gets %s "
                  "parts (%s; %s)" % (" ".join(pol) or "(max-min)",
                                      "its demand and the margin" if not pol else "the floor",
                                      parts, said))
    r = subprocess.run(cmd + ["--region", "a=127.0.0.1:%d" % ports[0]],
                       capture_output=True, text=True, timeout=60)
    res.check(r.returncode != 0 and "no --region for b" in r.stderr,
              "a region of the config without its Redis is refused (%s)" % r.stderr.strip())
    r = subprocess.run(cmd + ["--region", "x=127.0.0.1:1"], capture_output=True, text=True,
                       timeout=60)
    res.check(r.returncode != 0 and "NAME in the config's regions" in r.stderr,
              "a region the config does not name is refused (%s)" % r.stderr.strip()[-120:])


def check_cluster(res, tmp):
    """A region whose Redis is a Cluster: its reports read and its slices
    written on the nodes of their keys (the rule's hash tag), announced on
    every node (an appliance subscribes to its first endpoint, which need
    not serve the key)."""
    import redis.cluster

    single = sltest.free_port()
    d = os.path.join(tmp, "single")
    os.makedirs(d)
    one = sltest.start_redis(single, d)
    ports, procs = sltest.start_cluster(tmp, 3)
    try:
        cl = redis.cluster.RedisCluster(host="127.0.0.1", port=ports[0], socket_timeout=2)
        db = redis.Redis(host="127.0.0.1", port=single, socket_timeout=1)
        key = "sl:slice:{%s}" % RULE
        subs = []
        for p in ports:
            s = redis.Redis(host="127.0.0.1", port=p, socket_timeout=1).pubsub()
            s.subscribe("sl:slices")
            subs.append(s)
        report(cl, "k1", {HOT: 100}, 100)
        report(db, "s1", {HOT: 900}, 900)
        a = agg.Aggregator([("a", agg.Region("127.0.0.1", single)),
                            ("b", agg.Region("127.0.0.1", ports[1]))],
                           {"a": 1, "b": 1}, 0.02, 1000, 10000, "c")
        a.round()
        got = cl.hgetall(key)
        res.check(int(got.get(HOT.encode(), 0)) in range(900, 1100) and got.get(b"x") ==
                  b"10000", "a Cluster region: its report read, its slice written on the "
                  "key's node (%s; the single node's %s)" % (got, db.hget(key, HOT)))
        heard = []
        for s in subs:
            m = None
            for _ in range(10):
                m = s.get_message(timeout=0.2)
                if m and m["type"] == "message":
                    break
            heard.append(bool(m and m["type"] == "message"))
        res.eq(heard, [True] * 3, "the new version heard on every node of the Cluster")
    finally:
        sltest.stop_all(procs)
        one.kill()
        one.wait()


def main():
    res = sltest.Results("aggregator")
    check_slices(res)
    check_maxmin(res)
    check_estimate(res)
    with tempfile.TemporaryDirectory() as tmp:
        run_rounds(res, tmp)
        check_cluster(res, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
