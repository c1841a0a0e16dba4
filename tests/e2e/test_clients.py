#!/usr/bin/python3
"""Clients that obey the fields: what sluice tells a client is enough
for it never to be refused twice in a row, or at all.

A rule of 600/min with a burst of 5 (the burst binds first: told as
q=5;w=1, five per second at the rule's rate) through one worker:

- urllib3's own Retry (respect_retry_after_header, on 429), the retrying
  client most Python programs use, makes 12 requests: every one ends
  served, and none is refused twice in a row (each Retry-After is long
  enough);
- a pacing client on one keep-alive connection reads RateLimit on
  every allowed response and waits t seconds whenever r reaches 0: it
  is never refused, through one worker (r: the node's count and the
  lease) and through two (r: the lease alone).

Counts refusals, never seconds.

usage: test_clients.py PATH/TO/sluice
"""

import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 4096,
            head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
rules:
  - {name: paced, scope: key, match: {path_prefix: /v1}, limit: 600/min, burst: 5}
  - {name: per-ip, scope: ip, limit: 60000/min}
response: {keep_alive: true, headers_on_allow: true}
"""

# run inside the client namespace: urllib3 with its Retry, then the pacer
CLIENT = r'''
import http.client, json, re, sys, time
import urllib3
from urllib3.util.retry import Retry

out = {}
retry = Retry(total=8, status_forcelist=[429], respect_retry_after_header=True,
              backoff_factor=0, allowed_methods=None, raise_on_status=False)
pool = urllib3.PoolManager(retries=retry, headers={"X-API-Key": "k-urllib3"})
statuses, runs = [], []
for i in range(12 if sys.argv[1] == "all" else 0):
    r = pool.request("GET", "http://198.18.0.2/v1/u/%d" % i)
    statuses.append(r.status)
    hist = [h.status for h in r.retries.history] if r.retries else []
    runs.append(hist)
out["urllib3"] = {"statuses": statuses, "refusals": runs}

def field(h, name):
    m = re.search(name + r"=(\d+)", h or "")
    return int(m.group(1)) if m else None

c = http.client.HTTPConnection("198.18.0.2", 80, timeout=10)
got, policies, waits = [], set(), 0
for i in range(int(sys.argv[2])):
    c.request("GET", "/v1/p/%d" % i, headers={"X-API-Key": "k-pacer"})
    r = c.getresponse()
    r.read()
    got.append(r.status)
    policies.add(r.getheader("RateLimit-Policy"))
    rl = r.getheader("RateLimit")
    if r.status == 200 and field(rl, "r") == 0:
        waits += 1
        time.sleep(field(rl, "t"))
    if r.getheader("Connection", "").lower() == "close":
        c.close()
        c = http.client.HTTPConnection("198.18.0.2", 80, timeout=10)
out["pacer"] = {"statuses": got, "policies": sorted(p or "" for p in policies),
                "waits": waits}
print(json.dumps(out))
'''


def main():
    binary = sys.argv[1]
    res = sltest.Results("clients")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF)
        script = os.path.join(tmp, "client.py")
        with open(script, "w") as f:
            f.write(CLIENT)
        with sltest.Topology(binary, conf, tmp, prefix="cl%d" % (os.getpid() % 1000)) as t:
            r = t.client("/usr/bin/python3", script, "all", "11", timeout=120)
            try:
                out = json.loads(r.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                print(r.stdout[-2000:], r.stderr[-2000:])
                out = {}
            u = out.get("urllib3", {})
            res.eq(u.get("statuses"), [200] * 12,
                   "urllib3 Retry (respecting Retry-After): 12 of 12 served")
            refused = [h for h in u.get("refusals", []) if h]
            res.check(len(refused) > 0 and all(h == [429] for h in refused),
                      "it was refused (%d times) and never twice in a row: %s" % (
                          len(refused), [len(h) for h in u.get("refusals", [])]))
            p = out.get("pacer", {})
            res.check(p.get("statuses") and set(p["statuses"]) == {200} and p["waits"] > 0,
                      "a client pacing on RateLimit (r, t): never refused, %d waits (%s)" % (
                          p.get("waits", 0), p.get("statuses")))
            pol = [x for x in p.get("policies", []) if x]
            res.check(pol and all(re.search(r'"paced";q=5;w=1\b', x) for x in pol),
                      "the burst that binds is told: q=5;w=1 (%s)" % pol)
            st = t.sluice.stats()
            res.check(st["keepalive_replies"] + st["keepalive_fallback"] >= len(refused),
                      "the 429s counted (%d kept, %d closed)" % (
                          st["keepalive_replies"], st["keepalive_fallback"]))
            time.sleep(0.1)
            res.eq(t.sluice.stop(), 0, "sluice exits 0")
        # two workers: each holds a lease of the key, and r is what the
        # connection's own worker holds now, never what the other took
        # (a lower bound: the pacer waits t more often than it must)
        with sltest.Topology(binary, conf, tmp, workers=2,
                             prefix="cm%d" % (os.getpid() % 1000)) as t:
            r = t.client("/usr/bin/python3", script, "pacer", "4", timeout=120)
            try:
                p = json.loads(r.stdout.strip().splitlines()[-1]).get("pacer", {})
            except (IndexError, ValueError):
                print(r.stdout[-2000:], r.stderr[-2000:])
                p = {}
            res.check(p.get("statuses") and set(p["statuses"]) == {200},
                      "two workers leasing the key: the pacer never refused, %d waits (%s)" % (
                          p.get("waits", 0), p.get("statuses")))
            res.eq(t.sluice.stop(), 0, "sluice (two workers) exits 0")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
