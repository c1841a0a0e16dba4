#!/usr/bin/python3
"""Why a client was limited: /sluice/why and `sluicectl why` against a
live appliance (two workers leasing from the node's authority), judged by
what the bucket then does.

A key at 1/s with a burst of 3: before any request it is full and the
next request admitted; after three, the next is refused and the answer
says when it will be admitted again. A request just before that time is
refused (429, its Retry-After agreeing), one just after it is served.
The address rule appears only when an address is asked about; a shadow
rule is shown as one that never refuses (sluicectl's exit code ignores
it); --rule answers one rule whatever the request; a question with no
identity is refused with its usage; a stalled worker leaves the others'
answer, marked as not from every owner. `sluice --explain` prints each
matching rule's numbers.

usage: test_why.py PATH/TO/sluice
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CTL = os.path.join(sltest.ROOT, "tools", "sluicectl")
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096,
            head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
rules:
  - {name: key-sec, scope: key, match: {path_prefix: /v1}, limit: 60/min, burst: 3}
  - {name: key-watch, scope: key, match: {path_prefix: /v1}, limit: 1/min, burst: 1,
     shadow: true}
  - {name: per-ip, scope: ip, limit: 60/min, burst: 600}
response: {retry_jitter: 0}
"""


def why(t, q):
    return sltest.telemetry(t.sluice.prefix, "/sluice/why," + q)


def ctl(t, *args):
    return subprocess.run([CTL, "-f", t.sluice.prefix, "why"] + list(args),
                          capture_output=True, text=True, timeout=30)


def rules_of(ans):
    return {v["name"]: v for v in ans.values() if isinstance(v, dict)}


def main():
    binary = sys.argv[1]
    res = sltest.Results("why")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF)
        head = os.path.join(tmp, "head")
        with open(head, "wb") as f:
            f.write(b"GET /v1/x HTTP/1.1\r\nHost: a\r\nX-API-Key: k-a\r\n\r\n")
        ex = subprocess.run([binary, "--", "--config", conf, "--explain", head, "--peer",
                             "198.18.0.1"], capture_output=True, text=True, timeout=30)
        got = {r["name"]: r for r in json.loads(ex.stdout)["rules"]}
        res.eq((got["key-sec"]["limit"], got["key-sec"]["period_ms"], got["key-sec"]["burst"],
                got["key-sec"]["algorithm"]), (60, 60000, 3, "token_bucket"),
               "--explain prints each rule's limit, period, burst and algorithm")
        with sltest.Topology(binary, conf, tmp, workers=2,
                             prefix="wy%d" % (os.getpid() % 1000)) as t:
            q = "key:k-a,path:/v1/x"
            r = rules_of(why(t, q))
            res.eq(sorted(r), ["key-sec", "key-watch"],
                   "a key and a path: the key's rules, not the address's")
            k = r["key-sec"]
            res.eq((k["limit"], k["period_ms"], k["burst"], k["decided_by"], k["seen"],
                    k["admits"], k["answered"]), (60, 60000, 3, "node", 0, "now", 3),
                   "before any request: no state, admitted now (every owner answered)")
            c = ctl(t, "--key", "k-a", "--path", "/v1/x")
            res.check(c.returncode == 0 and "key-sec: key token_bucket, 60 per minute, "
                      "burst 3" in c.stdout and "next request: admitted" in c.stdout,
                      "sluicectl why: the limit and 'admitted', exit 0 (%d: %r)" % (
                          c.returncode, c.stdout[:300]))
            codes = [t.curl("-H", "X-API-Key: k-a", "http://%s/v1/x" % S4)[0]
                     for _ in range(3)]
            res.eq(codes, [200] * 3, "three requests: the burst")
            t0 = time.time()
            k = rules_of(why(t, q))["key-sec"]
            wait = k["admits_in_ms"]
            res.check(k["admits"] == "later" and 0 < wait <= 1000 and k["left"] == 0,
                      "at the limit: refused, admitted again in %d ms (at most 1 s at "
                      "1/s), 0 left" % wait)
            res.check(rules_of(why(t, q))["key-watch"]["shadow"] == 1,
                      "the shadow rule is marked as one")
            c = ctl(t, "--key", "k-a", "--path", "/v1/x")
            res.check(c.returncode == 1 and "next request: refused, admitted again in"
                      in c.stdout and "shadow: counts, never refuses" in c.stdout,
                      "sluicectl why: refused and when, exit 1 (%d)" % c.returncode)
            # judged only where the answer came before the time: on a
            # loaded machine the questions above, or the curl itself, once
            # ran past it, and the request was served, as it should be
            deadline = t0 + wait / 1000.0
            served_late = False
            if deadline - time.time() > 0.3:  # time to ask before it
                st, hdr, _ = t.curl("-H", "X-API-Key: k-a", "http://%s/v1/x" % S4)
                done = time.time()
                ra = int(hdr.get("retry-after", "-1"))
                if done < deadline:
                    res.check(st == 429 and ra == math.ceil(wait / 1000.0),
                              "asked before it: %d, Retry-After %d" % (st, ra))
                else:
                    served_late = st == 200
                    print("  asked before it, answered %.0f ms after it: %d (not judged)"
                          % ((done - deadline) * 1000, st))
            time.sleep(max(0.0, deadline + 0.15 - time.time()))
            st = t.curl("-H", "X-API-Key: k-a", "http://%s/v1/x" % S4)[0]
            if not served_late:
                res.eq(st, 200, "asked just after the time it gave: served")
            r = rules_of(why(t, q + ",ip:198.18.0.1"))
            ip = r.get("per-ip", {})
            # units leased out are no longer the authority's, spent or not
            res.check(ip.get("seen") == 1 and ip["left"] + ip["lease_units"] < 600,
                      "with the client's address: its rule too, %s left of 600 and %s in "
                      "leases" % (ip.get("left"), ip.get("lease_units")))
            r = rules_of(why(t, "rule:per-ip,ip:198.18.0.9"))
            res.eq((sorted(r), r["per-ip"]["seen"], r["per-ip"]["admits"]),
                   (["per-ip"], 0, "now"), "--rule: that rule alone; an address never seen")
            # a worker that stops polling (debug builds: /sluice/stall)
            # cannot answer: the others' answer comes, saying so
            sltest.telemetry(t.sluice.prefix, "/sluice/stall,0,1500")
            time.sleep(0.1)
            r = why(t, q)
            res.eq([(v["answered"], r["owners"]) for v in rules_of(r).values()],
                   [(2, 3), (2, 3)], "a stalled worker: answered by the other two owners")
            time.sleep(1.6)
            r = why(t, q)
            res.eq([v["answered"] for v in rules_of(r).values()], [3, 3],
                   "the worker back: every owner answers again")
            bad = why(t, "path:/v1/x")
            res.check("usage" in bad.get("error", ""), "no identity: the usage (%s)" % bad)
            res.eq(t.sluice.stop(), 0, "sluice exits 0")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
