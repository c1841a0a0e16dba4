#!/usr/bin/python3
"""One key's decisions against an ideal token bucket fed the same arrivals
(a diagnostic, not a test: it prints what each run gave).

The appliance runs on two workers with a rule of 800/s, burst 160, the
node or Redis as the authority, and writes every decision to its stream
(decisions: {sample: 1}). wrk from CONNS connections in one thread, each
waiting G1 ms between requests for the first N1 requests of all of them,
then G2 ms, for SECS seconds (by default about 1.1 x the limit for 2 s,
then 0.75 x). The stream's arrivals, in order, are fed to a token bucket
of the rule's numbers, full at the first; a request the appliance refused
where the bucket had a unit is refused beyond the ideal, one it admitted
where the bucket had none admitted beyond it. Those two also count the
same refusals made a few milliseconds apart (the stream's time is the
decision's, not the arrival's): the refusals less the ideal's are what
the client lost.

usage: scripts/bench-ideal.py PATH/TO/sluice [redis|node] [RUNS]
           [G1 N1 G2 SECS CONNS]
"""

import datetime
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import sltest  # noqa: E402

RATE, BURST, PORT = 800, 160, 8083
CONF = """version: 1
dataplane: {service_ports: [%d], flows_per_worker: 4096, head_buffers_per_worker: 128,
            mbufs: 8191, idle_sleep_us: 100}
identity: {api_key_header: X-API-Key}
rules:
  - {name: t, scope: key, match: {path_prefix: /t/}, limit: %d/min, burst: %d}
response: {retry_jitter: 0}
decisions: {sample: 1, file: %s, identity: clear}
%s"""
# the first n1 requests (all connections) g1 ms apart on each, then g2
PACE = """
local n = 0
delay = function() n = n + 1; if n < %d then return %d else return %d end end
"""


def arrivals(path):
    """(time in s, refused, worker) of each of the key's decisions, in order."""
    rows = []
    with open(path) as f:
        for line in f:
            x = json.loads(line)
            if x.get("identity") != "key:k-ideal":
                continue
            ts = datetime.datetime.strptime(x["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            rows.append((ts.timestamp(), x["decision"] != "allowed", x.get("worker")))
    rows.sort()
    return rows


def judge(rows):
    """Counts against the ideal bucket, and per half second
    offered/refused/ideal refused/refused beyond it."""
    tokens, last, t0 = float(BURST), rows[0][0], rows[0][0]
    out = {"offered": len(rows), "refused": 0, "ideal_refused": 0, "beyond": 0,
           "over": 0, "workers": {}, "bins": {}}
    for ts, refused, worker in rows:
        tokens = min(BURST, tokens + (ts - last) * RATE)
        last = ts
        ideal = tokens >= 1
        if ideal:
            tokens -= 1
        b = out["bins"].setdefault(int((ts - t0) * 2), [0, 0, 0, 0])
        b[0] += 1
        b[1] += refused
        b[2] += not ideal
        b[3] += refused and ideal
        out["refused"] += refused
        out["ideal_refused"] += not ideal
        out["beyond"] += refused and ideal
        out["over"] += (not refused) and not ideal
        wk = out["workers"].setdefault(worker, [0, 0])
        wk[0] += 1
        wk[1] += refused
    return out


def run(binary, store, pace, secs, conns, n):
    tmp = tempfile.mkdtemp(prefix="ideal")
    stream = os.path.join(tmp, "decisions.jsonl")
    redis, st = None, ""
    if store == "redis":
        port = sltest.free_port()
        redis = sltest.start_redis(port, tmp)
        st = "store:\n  redis: {endpoints: [\"127.0.0.1:%d\"], timeout_ms: 5}\n" % port
    conf = os.path.join(tmp, "ideal.yaml")
    with open(conf, "w") as f:
        f.write(CONF % (PORT, RATE * 60, BURST, stream, st))
    lua = os.path.join(tmp, "pace.lua")
    with open(lua, "w") as f:
        f.write(PACE % pace)
    try:
        with sltest.Topology(binary, conf, tmp, workers=2,
                             prefix="id%d" % ((os.getpid() + n) % 1000)) as t, \
                sltest.Nginx(t, tmp, PORT, "$status"):
            t.client("wrk", "-t1", "-c%d" % conns, "-d%ds" % secs, "-H",
                     "X-API-Key: k-ideal", "-s", lua,
                     "http://198.18.0.2:%d/t/r" % PORT, timeout=secs + 60)
            t.sluice.stop()  # the stream is flushed on the way out
    finally:
        if redis is not None:
            redis.kill()
            redis.wait()
    return judge(arrivals(stream))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    store = sys.argv[2] if len(sys.argv) > 2 else "redis"
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    g1, n1, g2, secs, conns = (int(x) for x in (sys.argv[4:9] if len(sys.argv) > 8
                                                else (4, 2000, 6, 6, 4)))
    print("%s, %d conns: %d ms apart for the first %d requests, then %d ms; %d s; "
          "rule %d/s burst %d" % (store, conns, g1, n1, g2, secs, RATE, BURST))
    for n in range(runs):
        r = run(binary, store, (n1, g1, g2), secs, conns, n)
        print("offered %d, refused %d, ideal refused %d (%+d), refused beyond it %d, "
              "admitted beyond it %d, per worker [offered, refused] %s"
              % (r["offered"], r["refused"], r["ideal_refused"],
                 r["refused"] - r["ideal_refused"], r["beyond"], r["over"], r["workers"]))
        print("  per 0.5 s, offered/refused/ideal/beyond: " + " ".join(
            "%d/%d/%d/%d" % tuple(r["bins"][k]) for k in sorted(r["bins"])))


if __name__ == "__main__":
    main()
