#!/usr/bin/python3
"""Packet tests of enforcement: the real binary between two raw wires the
test plays both ends of (wire.py). Every reply sluice builds (429, 403,
400) is checked field by field: Ethernet and VLAN, IPv4 and IPv6, TCP
sequence numbers, flags and checksums, every header and the body; so are
the RST to the backend and the ACKs that close an answered connection.
Also: strictest of two limits, shadow rules.

usage: test_replies.py PATH/TO/sluice
"""

import json
import re
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import sltest  # noqa: E402
import pktcheck  # noqa: E402
import wire  # noqa: E402
from wire import Conn, req  # noqa: E402

from scapy.all import Ether, TCP  # noqa: E402


class Case:
    def __init__(self, name, status, rule=None):
        self.name, self.status, self.rule = name, status, rule


def run(w, res):
    port = [41000]

    def flow(**kw):
        port[0] += 1
        f = Conn(port[0], **kw)
        w.handshake(f, res)
        return f

    def allowed(f, payload, what):
        w.fwd(res, "c", f.data(payload), what)

    def refused(f, payload, case):
        p = f.data(payload)
        r = w.answered(res, p, case.status, f.cseq - len(payload), case.name)
        if r is not None:
            check_headers(res, case, r[0], r[1])
        return p, (r[2] if r is not None else None)

    # 1. A free key with burst 2: two pass, the third is 429 (IPv4).
    for i in range(2):
        allowed(flow(), req("/v1/a%d" % i, "X-API-Key: k-free"), "k-free %d" % i)
    f = flow()
    p, reply = refused(f, req("/v1/a2", "X-API-Key: k-free"), Case("429 ipv4", 429, "key-burst"))
    # the client goes on: its data and its FIN are acknowledged, not forwarded
    for seg in (f.data(b"more bytes"), f.fin()):
        oc, os_ = w.step("c", seg)
        if res.eq((len(oc), len(os_)), (1, 0), "absorbed: one ACK back") and reply:
            check_ack(res, oc[0], seg, reply)

    # 2. The same over IPv6 in VLAN 30, on port 8080.
    for i in range(2):
        allowed(flow(v6=True, vlan=30, dport=8080), req("/v1/b%d" % i, "X-API-Key: k-six"),
                "k-six %d" % i)
    refused(flow(v6=True, vlan=30, dport=8080), req("/v1/b2", "X-API-Key: k-six"),
            Case("429 ipv6 vlan", 429, "key-burst"))

    # 3. Two limits deny: the one with the longer wait is reported.
    allowed(flow(), req("/strict/x", "X-API-Key: k-pro"), "k-pro strict")
    refused(flow(), req("/strict/x", "X-API-Key: k-free"),  # key-burst is spent too
            Case("strictest", 429, "strict-endpoint"))

    # 4. Shadow rules count and never reject.
    for i in range(3):
        allowed(flow(), req("/shadow/%d" % i), "shadow %d" % i)

    # 5. Blocklists: a CIDR (v4 and v6) and a key get 403.
    refused(flow(csrc="198.18.9.5"), req("/v1/blocked"), Case("403 cidr", 403, "blocklist"))
    refused(flow(v6=True, csrc="2001:2:0:9::5"), req("/v1/blocked6"),
            Case("403 cidr v6", 403, "blocklist"))
    refused(flow(), req("/v1/x", "X-API-Key: k-bad"), Case("403 key", 403, "blocklist"))

    # 6. An exact login limit (sliding log, 2/min per IP).
    login = b"POST /login HTTP/1.1\r\nHost: api\r\nContent-Length: 0\r\n\r\n"
    for i in range(2):
        allowed(flow(), login, "login %d" % i)
    refused(flow(), login, Case("429 login", 429, "login"))


def main():
    binary = sys.argv[1]
    res = sltest.Results("replies")
    conf = os.path.join(HERE, "replies.yaml")
    with wire.Wire(wire.netns_prefix()) as w:
        with sltest.Sluice(binary, conf, w.vdevs()) as s:
            s.wait_ready()
            w.attach(s.counts)
            run(w, res)
            st = s.stats()
            rules = sltest.telemetry(s.prefix, "/sluice/rules")
            top = sltest.telemetry(s.prefix, "/sluice/top")
            top5 = sltest.telemetry(s.prefix, "/sluice/top,5")
            res.eq(s.stop(), 0, "sluice exits 0")

    res.eq(st["requests"], 17, "requests")
    res.eq(st["allowed"], 10, "allowed")
    res.eq(st["rejected"], 4, "rejected")
    res.eq(st["blocked"], 3, "blocked")
    res.eq(st["requests"], st["allowed"] + st["rejected"] + st["blocked"] + st["invalid"],
           "requests = allowed + rejected + blocked + invalid")
    res.eq(st["shadow_rejected"], 2, "shadow_rejected (inside allowed)")
    res.eq(st["replies"], 7, "replies built")
    res.eq(st["absorbed"], 2, "absorbed segments acknowledged")
    r = {v["name"]: v for k, v in rules.items() if k != "version"}
    res.check(all(k.replace("_", "-") == v["name"] or k == v["name"]
                  for k, v in rules.items() if k != "version"),
              "/sluice/rules: keys are the rule names ('-' written '_')")
    res.eq((r["key-burst"]["rejected"], r["strict-endpoint"]["rejected"], r["login"]["rejected"]),
           (2, 1, 1), "/sluice/rules: rejections by the deciding rule")
    res.eq(r["shadow-ip"]["shadow_rejected"], 2, "/sluice/rules: shadow_rejected")
    res.eq(r["key-burst"]["allowed"], 4, "/sluice/rules: key-burst allowed")
    res.check(len(rules["version"]) > 0, "/sluice/rules: version")
    got_top = {(x["identity"], x["rule"]): x["rejected"] for x in top.values()}
    res.eq(sorted(top.keys(), key=int), [str(i) for i in range(1, len(top) + 1)],
           "/sluice/top: ranked 1..n")
    res.eq(len(top5), 5, "/sluice/top,5: five rows")
    want_top = {("key:k-free", "key-burst"): 1, ("key:k-free", "strict-endpoint"): 1,
                ("key:k-six", "key-burst"): 1, ("ip:198.18.0.1", "login"): 1,
                ("ip:198.18.9.5", "blocklist"): 1, ("ip:2001:2:0:9::", "blocklist"): 1,
                ("key:k-bad", "blocklist"): 1}
    res.eq(got_top, want_top, "/sluice/top: every throttled identity and its rule")
    st_lat = [st["latency_ns_p50"], st["latency_ns_p99"], st["latency_ns_p999"]]
    # measured (a histogram nothing reached reads 0) and ordered
    res.check(st_lat[0] > 0 and st_lat == sorted(st_lat),
              "/sluice/stats: latency quantiles measured and ordered %s" % st_lat)
    return res.finish()


def check_headers(res, case, hdrs, body):
    n = case.name
    if case.status == 403:
        res.eq(body, b'{"error":"forbidden","rule":"blocklist"}\n', n + ": body")
        res.check("Retry-After" not in hdrs, n + ": no Retry-After")
        return
    b = json.loads(body)
    res.eq(b["error"], "rate_limited", n + ": body error")
    res.eq(b["rule"], case.rule, n + ": body names the deciding rule")
    res.eq(hdrs.get("X-RateLimit-Rule"), case.rule, n + ": X-RateLimit-Rule")
    retry = int(hdrs["Retry-After"])
    res.eq(b["retry_after"], retry, n + ": body retry_after = Retry-After")
    if case.rule == "key-burst":
        # 2/min: the next token comes 30 s after the two were spent
        res.eq(retry, 30, n + ": Retry-After")
        res.eq(hdrs.get("RateLimit-Policy"), '"key-burst";q=2;w=60', n + ": RateLimit-Policy")
        # on a refusal t is Retry-After (when this request's cost is
        # there again), not the 60 s until the bucket is full
        res.eq(hdrs.get("RateLimit"), '"key-burst";r=0;t=30', n + ": RateLimit")
        res.eq((hdrs.get("RateLimit-Limit"), hdrs.get("RateLimit-Remaining"),
                hdrs.get("RateLimit-Reset")), ("2", "0", "30"), n + ": legacy RateLimit-*")
    elif case.rule == "login":
        res.eq(retry, 60, n + ": Retry-After (the oldest of the log leaves in 60 s)")
        res.eq(hdrs.get("RateLimit-Policy"), '"login";q=2;w=60', n + ": RateLimit-Policy")
    else:
        res.check(3600 <= retry <= 7200, n + ": Retry-After %d within the sliding hour" % retry)
        res.check(retry > 30, n + ": longer than key-burst's 30 s: the strictest won")
    rl = re.search(r";r=(\d+);t=(\d+)$", hdrs.get("RateLimit", ""))
    res.check(rl is not None and int(rl.group(1)) == 0 and int(rl.group(2)) == retry,
              n + ": RateLimit r=0 and t = Retry-After (%s)" % hdrs.get("RateLimit"))


def check_ack(res, frame, seg, reply):
    """An absorbed client segment gets a bare ACK after our FIN."""
    p, r = Ether(frame), Ether(reply)
    rlen = len(r[TCP].payload)
    res.eq(p[TCP].seq, r[TCP].seq + rlen + 1, "absorbed: seq after our reply and FIN")
    want_ack = seg[TCP].seq + len(seg[TCP].payload) + (1 if "F" in str(seg[TCP].flags) else 0)
    res.eq(p[TCP].ack, want_ack, "absorbed: acknowledges what the client sent")
    res.eq(str(p[TCP].flags), "A", "absorbed: a bare ACK")
    res.eq(len(p[TCP].payload), 0, "absorbed: no payload")
    res.check(pktcheck.cksums_ok(frame), "absorbed: checksums")


if __name__ == "__main__":
    sys.exit(main())
