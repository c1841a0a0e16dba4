#!/usr/bin/python3
"""A client below its limit is never refused, and the leases that serve
it reserve about what it spends.

One key under a rule far above what this machine can offer (6 000 000/min,
burst 100 000: 100 k/s), wrk from 4 connections over 2 workers to a real
nginx for 3 s (6 s in the whole matrix), with the node as the authority
and then through Redis.
The judge: no answer but a 200 (nginx serves every request it gets), and
/sluice/store's units granted to the leases at most 2.5 times those
spent.
Then 16 requests per write without a store: the heads behind one that
waits for the node's authority wait with it, its ask sized for them, and
are decided from its grant: at most one in 20 000 decided alone from the
worker's slice (decided_alone; one in 700 when they were decided at
once, one in 7 000 while a segment that parked behind another's ask took
a grant sized for the first; none in five runs now), and nothing
degraded, since nothing failed.
A rate read per arrival took the requests of one packet burst (which
share a timestamp) for a unit per nanosecond: every lease was the
accuracy budget's 60 k, 11 x what was spent, and the node's authority
refused while 100 k/s of it stood unspent (29 of 168 418 refused).

Then wrk paced to at most 1 000 requests a second (each connection waits
its share of a millisecond between requests) against a rule at 1.25 x
that (and 10 and 2 x in the whole matrix; and at 1.25 x again with the
key's state over three Redis keys, sub_buckets, through Redis), each with a burst of a
fifth of a second of its rate: not one refused; and against a rule at 0.8 x (which a client paced to 1 000
may exceed in some seconds and not on average): admitted at most 1.05 x
(burst + rate x t), and at least 0.9 x that when it offered more. From 1
and 4 connections over 2 workers, with the node and with Redis as the
authority, SL_BELOW_SECS (2) each. SL_BELOW_FULL=1 runs the whole
matrix BENCHMARKS.md reports: 1, 2 and 4 connections, 1 and 2 workers.

usage: test_below.py PATH/TO/sluice
"""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

PORT = 8083
SECS = 6 if os.environ.get("SL_BELOW_FULL") == "1" else 3
PACED_SECS = int(os.environ.get("SL_BELOW_SECS", "2"))
FULL = os.environ.get("SL_BELOW_FULL") == "1"
OFFER = 1000  # paced wrk's most requests a second, all connections
# the paced rules: limit as a multiple of OFFER, burst a fifth of a second
PACED = (("x10", 10.0), ("x2", 2.0), ("x125", 1.25), ("x08", 0.8), ("x125s3", 1.25))
# the key's state spread over three store keys (sub_buckets), each
# holding a third of the limit
SUBS = {"x125s3": 3}
# the suite's: just below and above (far below is the unpaced run's
# 100 k/s rule; x10 and x2 are in the whole matrix)
PACED_RUN = PACED if FULL else tuple(p for p in PACED if p[0] in ("x125", "x08", "x125s3"))
# the node's authority given 200 ms, as in e2e/cluster: on CI's two vCPUs
# a stalled main lcore once answered six asks past the default 50 ms,
# and "none degraded" is about a store that did not fail
CONF = """version: 1
dataplane: {service_ports: [%d], flows_per_worker: 4096, head_buffers_per_worker: 128,
            mbufs: 8191, idle_sleep_us: 100, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
rules:
  - {name: far, scope: key, match: {path_prefix: /v1/below}, limit: 6000000/min,
     burst: 100000}
%s
%s
response: {retry_jitter: 0}
"""


def paced_rules():
    return "\n".join(
        "  - {name: %s, scope: key, match: {path_prefix: /%s/}, limit: %d/min, burst: %d%s}"
        % (name, name, OFFER * x * 60, OFFER * x / 5,
           ", sub_buckets: %d" % SUBS[name] if name in SUBS else "") for name, x in PACED)


# each connection waits its share of OFFER's interval between requests
PACE = """
local gap = 1
init = function(args) gap = tonumber(args[1]) end
delay = function() return gap end
"""


# wrk's requests pipelined 16 to a write
PIPELINE = """
init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
"""


def wrk_out(r):
    """(requests sent, answers not 2xx, wrk's own span in seconds)."""
    m = re.search(r"(\d+) requests in ([\d.]+)s", r.stdout)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    return (int(m.group(1)) if m else 0, int(non2xx.group(1)) if non2xx else 0,
            float(m.group(2)) if m else 0.0)


def paced(res, t, tmp, what, conns):
    """Paced wrk from conns connections against each paced rule."""
    lua = os.path.join(tmp, "pace.lua")
    with open(lua, "w") as f:
        f.write(PACE)
    for name, x in PACED_RUN:
        if name in SUBS and not what.startswith("redis"):
            continue  # sub-buckets are the store's: the node's bucket is whole
        key = "k-%s-%s-c%d" % (what, name, conns)
        r = t.client("wrk", "-t1", "-c%d" % conns, "-d%ds" % PACED_SECS, "-H",
                     "X-API-Key: " + key, "-s", lua, "http://198.18.0.2:%d/%s/r" % (PORT, name),
                     "--", str(conns), timeout=PACED_SECS + 60)
        sent, refused, span = wrk_out(r)
        limit = OFFER * x
        allowed = limit / 5 + limit * span
        admitted = sent - refused
        sltest.record("below", what=what, rule=name, conns=conns, secs=span, sent=sent,
                      refused=refused, allowed=allowed)
        label = "%s, %d conn, rule %s at %.2f x %d/s: %d sent in %.1f s (%.0f/s), %d refused" % (
            what, conns, name, x, OFFER, sent, span, sent / span if span else 0, refused)
        if x > 1:  # the pacing's most is below the limit, every second
            res.check(sent > 0 and refused == 0, label + " (below its limit: none)")
        elif sent <= allowed:
            # below it on average, not in every second (a loaded
            # machine answers in surges): refusals are fair, over-
            # admission is not
            res.check(admitted <= 1.05 * allowed, label + " (at its limit: admitted %d, at "
                      "most %.0f)" % (admitted, 1.05 * allowed))
        else:
            res.check(0.9 * allowed <= admitted <= 1.05 * allowed,
                      label + " (above its limit: admitted %d within [0.9, 1.05] x %.0f)"
                      % (admitted, allowed))


def ledger(st, store):
    """(units granted to leases, given back, admitted)."""
    return store.get("granted_units", 0), store.get("given_back_units", 0), st["allowed"]


def kept_ok(st, store):
    """What the leases kept is what was admitted (give or take a lease)."""
    granted, back, used = ledger(st, store)
    return granted - back <= used * 1.02 + 64


def run(res, binary, tmp, store_port, what, pipelined=False, workers=2, conns=(1, 4)):
    store = ("store:\n  redis: {endpoints: [\"127.0.0.1:%d\"], timeout_ms: 5}\n" % store_port
             if store_port else "")
    tmp = os.path.join(tmp, what)  # nginx's log of this run alone
    os.makedirs(tmp)
    conf = os.path.join(tmp, "below.yaml")
    with open(conf, "w") as f:
        f.write(CONF % (PORT, paced_rules(), store))
    script = []
    if pipelined:
        script = ["-s", os.path.join(tmp, "pipeline.lua")]
        with open(script[1], "w") as f:
            f.write(PIPELINE)
    with sltest.Topology(binary, conf, tmp, workers=workers,
                         prefix="bl%d" % (os.getpid() % 1000)) as t, \
            sltest.Nginx(t, tmp, PORT, "$status") as ng:
        r = t.client("wrk", "-t1", "-c4", "-d%ds" % SECS, "-H", "X-API-Key: k-below",
                     *script, "http://198.18.0.2:%d/v1/below" % PORT, timeout=SECS + 60)
        sent, non2xx, _ = wrk_out(r)
        # the leases' last units go back once they end (a second on):
        # read until they have, or for 5 s
        end = time.time() + (5 if not pipelined else 0)
        while True:
            st = t.sluice.stats()
            store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
            if kept_ok(st, store) or time.time() >= end:
                break
            time.sleep(0.2)
        served = sum(1 for f in ng.log() if f and f[0] == "200")
        if not pipelined:
            for c in conns:
                paced(res, t, tmp, what, c)
        res.eq(t.sluice.stop(), 0, "%s: sluice exits 0" % what)
    res.check(sent > 1000, "%s: wrk sent %d requests" % (what, sent))
    res.eq((non2xx, st["rejected"]), (0, 0),
           "%s: %d requests far below the limit, none refused (answers not 2xx, "
           "rejected)" % (what, sent))
    if pipelined:
        # nginx closes a connection after 1 000 requests (keepalive_
        # requests): those pipelined behind the last go unserved
        res.check(st["decided_alone"] * 20000 <= sent and st["degraded"] == 0,
                  "%s: heads behind a wait decided from its grant: %d of %d decided "
                  "alone (at most 1/20000), none degraded (%d)"
                  % (what, st["decided_alone"], sent, st["degraded"]))
        return
    res.check(served >= st["allowed"] - 8,
              "%s: nginx served what sluice allowed (%d of %d)" % (what, served, st["allowed"]))
    if not store_port:  # (Redis may answer later than its 5 ms: degraded)
        res.eq(st["degraded"], 0, "%s: none degraded" % what)
    # one key: a lease on each worker that saw it (one swept in a lull
    # and made again is a new entry) and the node's own entry (the
    # authority's bucket, or its ledger of the store's), never one per
    # request
    # (a worker's lease swept once idle, or not yet: the node's stays)
    res.check(2 <= st["buckets_created"] <= 10 and 1 <= st["buckets_active"] <= workers + 1,
              "%s: one key's state on each worker and the node (buckets created %d, "
              "active %d)" % (what, st["buckets_created"], st["buckets_active"]))
    granted, back, used = ledger(st, store)
    sltest.record("below", what=what, requests=sent, granted=granted, back=back, used=used)
    # what leases took and kept is what was spent (units that went back
    # when a lease ended unspent were never admitted); what they took at
    # once is bounded by the lease sizing: a second of the rate. Leases
    # are sized on the rate just seen, so a spend that falls mid-run
    # sends more back: 1.2-1.7 x on an idle or evenly loaded machine,
    # 2.01 x once where the suite's parallel jobs halved the spend; a
    # lease sized past the rate (the 11 x above) is what this catches
    res.check(used > 0 and granted <= 2.5 * used and kept_ok(st, store),
              "%s: leases granted %d units for %d spent (%.2f x, at most 2.5), %d given back "
              "(kept %.3f x; %d given back but lost on a full ring)"
              % (what, granted, used, granted / used if used else 0, back,
                 (granted - back) / used if used else 0, st.get("back_unreported", 0)))


def main():
    binary = sys.argv[1]
    res = sltest.Results("below")
    with tempfile.TemporaryDirectory() as tmp:
        conns = (1, 2, 4) if FULL else (1, 4)
        run(res, binary, tmp, 0, "node", conns=conns)
        run(res, binary, tmp, 0, "node-pipelined", pipelined=True)
        if FULL:
            run(res, binary, tmp, 0, "node-1w", workers=1, conns=conns)
        port = sltest.free_port()
        with sltest.redis_server(port, tmp):
            run(res, binary, tmp, port, "redis", conns=conns)
            if FULL:
                run(res, binary, tmp, port, "redis-1w", workers=1, conns=conns)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
