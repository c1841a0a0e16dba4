#!/usr/bin/python3
"""Packet tests of enforcement: the real binary on net_pcap vdevs. Every
reply sluice builds (429, 403, 400) is checked field by field: Ethernet
and VLAN, IPv4 and IPv6, TCP sequence numbers, flags and checksums, every
header and the body; so are the RST to the backend and the ACKs that close
an answered connection. Also: strictest of two limits, shadow rules.

usage: test_replies.py PATH/TO/sluice
"""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import sltest  # noqa: E402
import pktcheck  # noqa: E402
from test_packets import Flow, req, CM, SM  # noqa: E402

from scapy.all import Ether, TCP, rdpcap, wrpcap  # noqa: E402


class Case:
    def __init__(self, name, pkt, status, rule=None, rst_seq=None):
        self.name, self.pkt, self.status, self.rule = name, pkt, status, rule
        self.rst_seq = rst_seq if rst_seq is not None else pkt[TCP].seq


def build():
    down = []          # (packet, "fwd" | Case | "ack")
    port = [41000]

    def flow(**kw):
        port[0] += 1
        f = Flow(port[0], **kw)
        down.append((f.syn(), "fwd"))
        return f

    # 1. A free key with burst 2: two pass, the third is 429 (IPv4).
    for i in range(2):
        f = flow()
        down.append((f.data(req("/v1/a%d" % i, "X-API-Key: k-free")), "fwd"))
    f = flow()
    p = f.data(req("/v1/a2", "X-API-Key: k-free"))
    down.append((p, Case("429 ipv4", p, 429, "key-burst")))
    # the client goes on: its data and its FIN are acknowledged, not forwarded
    more = f.data(b"more bytes")
    down.append((more, ("ack", p)))
    fin = f.fin()
    down.append((fin, ("ack", p)))

    # 2. The same over IPv6 in VLAN 30, on port 8080.
    for i in range(2):
        f = flow(v6=True, vlan=30, dport=8080)
        down.append((f.data(req("/v1/b%d" % i, "X-API-Key: k-six")), "fwd"))
    f = flow(v6=True, vlan=30, dport=8080)
    p = f.data(req("/v1/b2", "X-API-Key: k-six"))
    down.append((p, Case("429 ipv6 vlan", p, 429, "key-burst")))

    # 3. Two limits deny: the one with the longer wait is reported.
    f = flow()
    down.append((f.data(req("/strict/x", "X-API-Key: k-pro")), "fwd"))
    f = flow()
    p = f.data(req("/strict/x", "X-API-Key: k-free"))  # key-burst is spent too
    down.append((p, Case("strictest", p, 429, "strict-endpoint")))

    # 4. Shadow rules count and never reject.
    for i in range(3):
        f = flow()
        down.append((f.data(req("/shadow/%d" % i)), "fwd"))

    # 5. Blocklists: a CIDR (v4 and v6) and a key get 403.
    f = Flow(41900)
    f.c4 = "198.18.9.5"
    p = (Ether(src=CM, dst=SM) / __import__("scapy.all", fromlist=["IP"]).IP(
        src="198.18.9.5", dst="198.18.0.2") /
        TCP(sport=41900, dport=80, flags="PA", seq=500, ack=1) / req("/v1/blocked"))
    down.append((p, Case("403 cidr", p, 403, "blocklist")))
    from scapy.all import IPv6
    p = (Ether(src=CM, dst=SM) / IPv6(src="2001:2:0:9::5", dst="2001:2::2") /
         TCP(sport=41901, dport=80, flags="PA", seq=600, ack=1) / req("/v1/blocked6"))
    down.append((p, Case("403 cidr v6", p, 403, "blocklist")))
    f = flow()
    p = f.data(req("/v1/x", "X-API-Key: k-bad"))
    down.append((p, Case("403 key", p, 403, "blocklist")))

    # 6. An exact login limit (sliding log, 2/min per IP).
    for i in range(2):
        f = flow()
        down.append((f.data(b"POST /login HTTP/1.1\r\nHost: api\r\nContent-Length: 0\r\n\r\n"),
                     "fwd"))
    f = flow()
    p = f.data(b"POST /login HTTP/1.1\r\nHost: api\r\nContent-Length: 0\r\n\r\n")
    down.append((p, Case("429 login", p, 429, "login")))

    # 7. A second request on an answered connection is never parsed.
    return down


def main():
    binary = sys.argv[1]
    res = sltest.Results("replies")
    down = build()
    conf = os.path.join(HERE, "replies.yaml")
    with tempfile.TemporaryDirectory() as d:
        p = lambda n: os.path.join(d, n)  # noqa: E731
        wrpcap(p("in0.pcap"), [x for x, _ in down])
        wrpcap(p("in1.pcap"), [Ether(src=SM, dst=CM, type=0x88b5) / b"idle"])
        vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (p("in0.pcap"), p("out0.pcap")),
                 "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (p("in1.pcap"), p("out1.pcap"))]
        with sltest.Sluice(binary, conf, vdevs) as s:
            s.wait_ready()
            st = s.wait_for(lambda st: st["rx"] >= len(down) + 1)
            rules = sltest.telemetry(s.prefix, "/sluice/rules")
            top = sltest.telemetry(s.prefix, "/sluice/top")
            top5 = sltest.telemetry(s.prefix, "/sluice/top,5")
            res.eq(s.stop(), 0, "sluice exits 0")
        out0 = [bytes(x) for x in rdpcap(p("out0.pcap"))]
        out1 = [bytes(x) for x in rdpcap(p("out1.pcap"))]

    fwd0, built = pktcheck.split_out0(out0, [Ether(src=SM, dst=CM, type=0x88b5) / b"idle"])
    # Upstream: forwarded frames, and an RST in place of each answered request.
    want1 = []
    for x, fate in down:
        if fate == "fwd":
            want1.append(bytes(x))
        elif isinstance(fate, Case):
            want1.append(pktcheck.expected_rst(x, fate.rst_seq))
    pktcheck.same_frames_per_conn(res, out1, want1, "upstream: forwarded frames and RSTs")

    # Downstream: replies and ACKs in order.
    expect = [(x, f) for x, f in down if f != "fwd"]
    res.eq(len(built), len(expect), "downstream: one frame per answer or absorbed segment")
    # per connection, in order: the reply, then the ACKs of what followed
    built_by = pktcheck.by_conn(built)
    last_reply = {}
    for pkt, fate in expect:
        queue = built_by.get(pktcheck.conn_of(bytes(pkt)), [])
        frame = queue.pop(0) if queue else b""
        if isinstance(fate, Case):
            hdrs, body = pktcheck.check_answer(res, frame, pkt, fate.status, fate.name)
            last_reply[id(pkt)] = frame
            check_headers(res, fate, hdrs, body)
        else:
            check_ack(res, frame, pkt, last_reply[id(fate[1])])

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
    res.check(st_lat == sorted(st_lat), "/sluice/stats: latency quantiles are ordered %s" % st_lat)
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
        res.eq(hdrs.get("RateLimit"), '"key-burst";r=0;t=60', n + ": RateLimit")
        res.eq((hdrs.get("RateLimit-Limit"), hdrs.get("RateLimit-Remaining"),
                hdrs.get("RateLimit-Reset")), ("2", "0", "60"), n + ": legacy RateLimit-*")
    elif case.rule == "login":
        res.eq(retry, 60, n + ": Retry-After (the oldest of the log leaves in 60 s)")
        res.eq(hdrs.get("RateLimit-Policy"), '"login";q=2;w=60', n + ": RateLimit-Policy")
    else:
        res.check(3600 <= retry <= 7200, n + ": Retry-After %d within the sliding hour" % retry)
        res.check(retry > 30, n + ": longer than key-burst's 30 s: the strictest won")


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
